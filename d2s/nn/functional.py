"""`d2s.nn.functional` (commonly `F`): neural-network functions.

Thin wrappers over the core ops and compositions of them. Everything goes
through `bind` (via the core functional ops), so each function works on
eager Tensors and on static Variables alike, and is differentiated by the
ops' registered vjp rules. No numpy here.
"""
from __future__ import annotations

from ..core.dispatch import bind
from ..core.ops import (cast, gather, gelu as _gelu, rand,
                        log_softmax as _log_softmax, matmul, mean, relu as _relu,
                        sigmoid as _sigmoid, softmax as _softmax, sqrt, tanh as _tanh)
from ..core.ops._base import lift

__all__ = ["relu", "tanh", "sigmoid", "gelu", "softmax", "log_softmax", "linear", "dropout",
           "layer_norm", "embedding", "batch_norm", "group_norm", "instance_norm"]

# ---- convolution / pooling, activations, losses: one module each ----------------------------
from .activation_functional import *  # noqa: E402,F401,F403
from .activation_functional import __all__ as _activation_names  # noqa: E402
from .common_functional import *  # noqa: E402,F401,F403
from .common_functional import __all__ as _common_names  # noqa: E402
from .common_functional import _dim_at_run_time  # noqa: E402
from .conv_functional import *  # noqa: E402,F401,F403
from .conv_functional import __all__ as _conv_names  # noqa: E402
from .loss_functional import *  # noqa: E402,F401,F403
from .loss_functional import __all__ as _loss_names  # noqa: E402

from .group_norm import group_norm, instance_norm  # noqa: E402,F401
from . import flash_attention  # noqa: E402,F401  (F.flash_attention.flash_attention)
from .common_layers import bilinear  # noqa: E402,F401

from .conv3d_functional import (avg_pool3d, conv3d, conv3d_transpose,  # noqa: E402,F401
                                max_pool3d)

from .sequence_functional import gather_tree, temporal_shift  # noqa: E402,F401

__all__ += ["conv3d", "conv3d_transpose", "max_pool3d", "avg_pool3d", "gather_tree",
            "temporal_shift"]
__all__ += ["bilinear"] + _activation_names + _common_names + _conv_names + _loss_names


def relu(x):
    return _relu(x)


def tanh(x):
    return _tanh(x)


def sigmoid(x):
    return _sigmoid(x)


def gelu(x, approximate=False):
    """GELU: exact `x * Phi(x)`, or the tanh approximation."""
    return _gelu(x, approximate=approximate)


def softmax(x, axis=-1, dtype=None, name=None):
    """Softmax over `axis`; `dtype` (Paddle's) casts the input first."""
    return _softmax(x if dtype is None else cast(x, dtype), axis=axis)


def log_softmax(x, axis=-1, dtype=None, name=None):
    """Log-softmax over `axis`; `dtype` (Paddle's) casts the input first."""
    return _log_softmax(x if dtype is None else cast(x, dtype), axis=axis)


def linear(x, weight, bias=None):
    """`x @ weight + bias`, with `weight` of shape (in_features, out_features)."""
    out = matmul(x, weight)
    return out if bias is None else out + bias


_DROPOUT_MODES = ("upscale_in_train", "downscale_in_infer")


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    """Paddle's dropout: zero each element with probability `p`.

    mode "upscale_in_train" (inverted dropout) scales the kept elements by
    `1 / (1 - p)` while training and is the identity otherwise;
    "downscale_in_infer" keeps them as they are while training and scales
    the whole input by `1 - p` otherwise. `axis` (an int or a list) draws
    one keep/drop per index of those dims, the same along the others."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if mode not in _DROPOUT_MODES:
        raise ValueError(f"dropout: mode must be one of {list(_DROPOUT_MODES)}, got {mode!r}")
    if isinstance(axis, bool):
        raise TypeError("dropout: axis must be an int or a list of ints (the third argument "
                        "is Paddle's axis: pass training= by keyword)")
    if not training:
        return x if mode == "upscale_in_train" or p == 0.0 else lift(x) * (1.0 - p)
    if p == 0.0:
        return x
    x = lift(x)
    if axis is None and mode == "upscale_in_train":
        return bind("dropout", x, p=p)[0]
    rank = len(x.shape)
    axes = list(range(rank)) if axis is None else \
        [a % rank for a in ([axis] if isinstance(axis, int) else axis)]
    mask_shape = [_dim_at_run_time(x, a) if a in axes else 1 for a in range(rank)]
    keep = cast(rand(mask_shape, x.dtype) >= p, x.dtype)
    if mode == "upscale_in_train":
        keep = keep * (1.0 / (1.0 - p)) if p < 1.0 else keep * 0.0
    return x * keep


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-5):
    """Normalize over the trailing `normalized_shape` dims, then scale and shift."""
    x = lift(x)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    trailing = tuple(x.shape[-k:]) if 0 < k <= len(x.shape) else None
    if trailing is None or any(d is not None and d != n
                               for d, n in zip(trailing, normalized_shape)):
        raise ValueError(f"layer_norm: normalized_shape {list(normalized_shape)} does not "
                         f"match the trailing dims of input shape {list(x.shape)}")
    axes = tuple(range(len(x.shape) - k, len(x.shape)))
    mu = mean(x, axis=axes, keepdim=True)
    centered = x - mu
    var = mean(centered * centered, axis=axes, keepdim=True)
    y = centered / sqrt(var + epsilon)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    """Rows of `weight` (num_embeddings, dim) picked by the integer ids `x` (any shape).

    `padding_idx` (PaddlePaddle's and PyTorch's): ids equal to it look up a
    zero vector, so the padding row neither shapes the output nor receives
    a gradient; negative values count from the end. `sparse` is accepted for
    PaddlePaddle's signature (gradients are dense here)."""
    out = gather(weight, x, axis=0)
    if padding_idx is None:
        return out
    from ..core.ops import not_equal, unsqueeze, where, zeros_like
    n = weight.shape[0]
    pad = int(padding_idx) + (n if int(padding_idx) < 0 else 0)
    if not 0 <= pad < n:
        raise ValueError(f"embedding: padding_idx {padding_idx} is outside the {n} rows")
    keep = unsqueeze(not_equal(lift(x), pad), -1)
    return where(keep, out, zeros_like(out))


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.9, epsilon=1e-05, data_format="NCHW", use_global_stats=None,
               name=None):
    """Batch normalization (see d2s.nn.norm): PaddlePaddle's `F.batch_norm`."""
    from .norm import batch_norm as _batch_norm  # (norm builds on this module's layers)
    return _batch_norm(x, running_mean, running_var, weight, bias, training, momentum,
                       epsilon, data_format, use_global_stats, name)

# ---- issue 25 (opsnn): the API ported models call beyond the first target list -------------
from .patch_functional import *  # noqa: E402,F401,F403
from .patch_functional import __all__ as _patch_names  # noqa: E402
from .vision_functional import *  # noqa: E402,F401,F403
from .vision_functional import __all__ as _vision_names  # noqa: E402
from .activation_more import *  # noqa: E402,F401,F403
from .activation_more import __all__ as _activation_more_names  # noqa: E402
from .loss_more import *  # noqa: E402,F401,F403
from .loss_more import __all__ as _loss_more_names  # noqa: E402
from .ctc import ctc_loss  # noqa: E402,F401
from .activation_inplace import *  # noqa: E402,F401,F403
from .activation_inplace import __all__ as _activation_inplace_names  # noqa: E402
__all__ += _patch_names + _vision_names + _activation_more_names + _loss_more_names + ["ctc_loss"]
__all__ += _activation_inplace_names
from .lp_pool import lp_pool1d, lp_pool2d  # noqa: E402,F401
from .feature_alpha_dropout import feature_alpha_dropout  # noqa: E402,F401
from .multi_label_margin import multi_label_margin_loss  # noqa: E402,F401
__all__ += ["lp_pool1d", "lp_pool2d", "feature_alpha_dropout", "multi_label_margin_loss"]


def adaptive_log_softmax_with_loss(input, label, head_weight, tail_weights, cutoffs,
                                   head_bias=None, name=None):
    """See d2s.nn.adaptive_softmax (imported when called: it builds on the layers)."""
    from .adaptive_softmax import adaptive_log_softmax_with_loss as _fn
    return _fn(input, label, head_weight, tail_weights, cutoffs, head_bias)


__all__ += ["adaptive_log_softmax_with_loss"]


def hsigmoid_loss(input, label, num_classes, weight, bias=None, path_table=None,
                  path_code=None, is_sparse=False, name=None):
    """See d2s.nn.hsigmoid (imported when called: it builds on the layers)."""
    from .hsigmoid import hsigmoid_loss as _fn
    return _fn(input, label, num_classes, weight, bias, path_table, path_code)


__all__ += ["hsigmoid_loss"]
from .margin_ce import margin_cross_entropy  # noqa: E402,F401
__all__ += ["margin_cross_entropy"]
