"""Other functions of `d2s.nn.functional`: one-hot (the core op) and label smoothing, padding,
resizing, cosine similarity, normalize, sequence masks, scaled dot-product attention.

All are compositions of registered ops. Padding and resizing work along one
axis at a time with constant index or weight arrays built from the (known)
input size: a gather picks the rows a padding mode reads (constant padding of a
dim known only at run time concatenates blocks of the fill value), and a resize is a
product with an interpolation matrix (separable, so exact for bilinear).
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dispatch import Symbolic
from ..core.ops import (arange, cast, concat, constant, full_like, gather, matmul,
                        maximum, norm, reshape, shape, softmax, sqrt, sum as _sum, transpose,
                        unsqueeze, where)
from ..core.ops._base import lift
from ..core.ops.creation_more import one_hot  # (the op: one home, out-of-range ids an error)
from ..core.ops.resize import resize_matrix, resize_weights

__all__ = ["one_hot", "label_smooth", "pad", "interpolate", "upsample", "cosine_similarity",
           "normalize",
           "sequence_mask", "scaled_dot_product_attention"]


def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    """`(1 - epsilon) * label + epsilon * prior` (uniform prior by default)."""
    label = lift(label)
    prior = 1.0 / label.shape[-1] if prior_dist is None else lift(prior_dist)
    return label * (1.0 - epsilon) + prior * epsilon


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    """`sum(x1 * x2) / sqrt(max(|x1|^2 |x2|^2, eps^2))` along `axis`."""
    x1, x2 = lift(x1), lift(x2)
    w12 = _sum(x1 * x2, axis=axis)
    w1, w2 = _sum(x1 * x1, axis=axis), _sum(x2 * x2, axis=axis)
    return w12 / sqrt(maximum(w1 * w2, eps * eps))


def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    """`x / max(||x||_p, epsilon)` along `axis` (PaddlePaddle's and PyTorch's
    `normalize`: unit vectors for contrastive heads; p in {1, 2, inf})."""
    x = lift(x)
    return x / maximum(norm(x, p=p, axis=axis, keepdim=True), cast(constant(epsilon), x.dtype))


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """mask[..., j] = j < x[...]; `maxlen` (an int or a one-element integer
    tensor, e.g. `paddle.shape(tar)[1]` in converted code) defaults to max(x)."""
    x = lift(x)
    if maxlen is None:
        maxlen = x.max() if isinstance(x, Symbolic) else int(np.max(x.numpy()))
    elif isinstance(maxlen, Symbolic):
        if tuple(maxlen.shape) not in ((), (1,)):
            raise ValueError(f"sequence_mask: maxlen must hold one integer, got shape "
                             f"{list(maxlen.shape)}")
        maxlen = reshape(maxlen, [])
    else:
        maxlen = int(maxlen)
    return cast(arange(0, maxlen, dtype=x.dtype) < unsqueeze(x, -1), dtype)


# ---- padding ----------------------------------------------------------------------------------
def _pad_index(n, lo, hi, mode, where_):
    idx = np.arange(-lo, n + hi)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise ValueError(f"{where_}: reflect padding ({lo}, {hi}) must be smaller than "
                             f"the dim {n}")
        idx = np.abs(idx)
        idx = np.where(idx >= n, 2 * (n - 1) - idx, idx)
    elif mode == "circular":
        idx = np.mod(idx, n)
    else:  # replicate, and constant (whose padded rows are then masked)
        idx = np.clip(idx, 0, n - 1)
    return idx


def _pad_axis(x, axis, lo, hi, mode, value, where_):
    if lo == 0 and hi == 0:
        return x
    n = x.shape[axis]
    if lo < 0 or hi < 0:
        raise ValueError(f"{where_}: negative padding ({lo}, {hi}) is not supported")
    if n is None:
        if mode == "constant":
            return _pad_constant_unknown(x, axis, lo, hi, value)
        return gather(x, _pad_index_at_run_time(x, axis, lo, hi, mode, where_), axis=axis)
    out = gather(x, constant(_pad_index(n, lo, hi, mode, where_).astype(np.int64)), axis=axis)
    if mode == "constant":
        shape = [1] * len(x.shape)
        shape[axis] = n + lo + hi
        inside = np.zeros(shape, bool)
        inside.reshape(-1)[lo:lo + n] = True
        out = where(constant(inside), out, cast(constant(value), x.dtype))
    return out


def _dim_at_run_time(x, axis):
    """Dim `axis` of `x`: an int when known, else a 0-d int64 tensor."""
    from ..core.ops import shape as shape_of
    d = x.shape[axis]
    if d is not None:
        return d
    return reshape(gather(shape_of(x), constant(np.array([axis], np.int64))), [])


def _pad_index_at_run_time(x, axis, lo, hi, mode, where_):
    """`_pad_index` computed in the program, for an axis whose size `n` is
    known only at run time (reflection padding in a PaddleGAN/PaddleSeg
    generator exported with `None` spatial dims). Reflection needs `lo` and
    `hi` below `n`: a run-time check raises as the known-size path does."""
    from ..core.dispatch import bind
    from ..core.ops import abs as abs_, minimum, zeros_like
    n = _dim_at_run_time(x, axis)
    idx = arange(-lo, n + hi, dtype="int64")
    if mode == "reflect":
        bind("assert", n > max(lo, hi),
             message=f"{where_}: reflect padding ({lo}, {hi}) must be smaller than the dim "
                     f"{axis} of the input at run time")
        idx = abs_(idx)
        idx = where(idx >= n, 2 * (n - 1) - idx, idx)
    elif mode == "circular":
        idx = idx % n
    else:  # replicate
        idx = minimum(maximum(idx, zeros_like(idx)), n - 1)
    return idx


def _pad_constant_unknown(x, axis, lo, hi, value):
    """Constant padding of an axis whose size is only known at run time (a
    causal Conv1D over a `None` sequence length): blocks of `value` shaped
    like `lo` / `hi` rows of `x` (its other dims may be unknown too) are
    concatenated on either side. Row 0 gives the blocks their shape; the
    axis must not be empty at run time."""
    parts = []
    if lo:
        parts.append(full_like(gather(x, constant(np.zeros(lo, np.int64)), axis=axis), value))
    parts.append(x)
    if hi:
        parts.append(full_like(gather(x, constant(np.zeros(hi, np.int64)), axis=axis), value))
    return concat(parts, axis=axis)


_MODES = ("constant", "reflect", "replicate", "circular")


def pad(x, pad, mode="constant", value=0.0, data_format="NCHW", pad_from_left_axis=True,
        name=None):
    """Paddle's `pad`: `pad` of twice the rank (constant mode) pads every dim from
    the first; otherwise `[left, right, top, bottom, front, back]` pad the
    spatial dims of `data_format` from the last one."""
    x = lift(x)
    if mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {list(_MODES)}, got {mode!r}")
    if hasattr(pad, "numpy"):
        pad = pad.numpy().tolist()
    pad = [int(p) for p in pad]
    rank = len(x.shape)
    if len(pad) % 2:
        raise ValueError(f"pad: needs pairs of paddings, got {pad}")
    if len(pad) == 2 * rank and mode == "constant":
        for axis in range(rank):
            x = _pad_axis(x, axis, pad[2 * axis], pad[2 * axis + 1], mode, value, "pad")
        return x
    channel_last = data_format[-1] == "C" and data_format not in ("NC",)
    spatial = list(range(1, rank - 1)) if channel_last else list(range(2, rank))
    if len(pad) > 2 * len(spatial):
        raise ValueError(f"pad: {len(pad)} paddings for the {len(spatial)} spatial dims of a "
                         f"{data_format} input of shape {list(x.shape)}")
    for i in range(len(pad) // 2):  # the last spatial dim first
        x = _pad_axis(x, spatial[-1 - i], pad[2 * i], pad[2 * i + 1], mode, value, "pad")
    return x


# ---- resizing ---------------------------------------------------------------------------------
_resize_matrix = resize_matrix  # (one home: core.ops.resize, which builds it at run time too)


_RESIZE_MODES = {"nearest": "nearest", "bilinear": "linear", "linear": "linear",
                 "bicubic": "cubic"}


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False,
                align_mode=0, data_format="NCHW", name=None):
    """Resize the spatial dims (3-D NCW / 4-D NCHW inputs, or channel-last) by
    `size` or `scale_factor`, 'nearest', '(bi)linear' or 'bicubic', with Paddle's
    `align_corners` / `align_mode` sampling."""
    x = lift(x)
    if mode not in _RESIZE_MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, "
                                  "linear, bilinear, bicubic)")
    if mode == "nearest" and align_corners:
        raise ValueError("interpolate: align_corners applies to linear modes only")
    rank = len(x.shape)
    if rank not in (3, 4):
        raise ValueError(f"interpolate: expects a 3-D or 4-D input, got {list(x.shape)}")
    channel_last = data_format in ("NWC", "NHWC")
    axes = list(range(1, rank - 1)) if channel_last else list(range(2, rank))
    sizes = [x.shape[a] for a in axes]
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    scales = [None] * len(axes)
    if size is not None:
        if hasattr(size, "shape") and len(size.shape) == 1:  # a 1-D tensor of sizes
            size = [size[i] for i in range(size.shape[0])]
        size = [size] * len(axes) if not isinstance(size, (list, tuple)) else list(size)
        size = [_size_value(s) for s in size]
    else:
        scales = ([float(scale_factor)] * len(axes) if isinstance(scale_factor, (int, float))
                  else [float(s) for s in scale_factor])
        size = [None if n is None else int(math.floor(n * s)) for n, s in zip(sizes, scales)]
    if len(size) != len(axes):
        raise ValueError(f"interpolate: {len(size)} sizes for {len(axes)} spatial dims")
    kind = _RESIZE_MODES[mode]
    out = x
    for axis, n_in, n_out, scale in zip(axes, sizes, size, scales):
        if kind == "nearest" and scale is not None and _exact_repeat(scale):
            # an integer scale (a power of two: floor(i / s) exact in float): each item
            # repeated, read with indices (built by the run where the size is known only
            # then): the values the matrix gives, with no 0 * inf, and an ONNX Gather
            if int(scale) > 1:
                n = shape(x)[axis] if n_in is None else n_in
                index = arange(0, n * int(scale), dtype="int64") // int(scale)
                out = gather(out, index, axis=axis)
            continue
        if isinstance(n_in, int) and isinstance(n_out, int):
            ratio = n_in / n_out if scale is None else 1.0 / scale
            if n_in == n_out and (kind == "nearest" or not align_corners) and ratio == 1.0:
                continue
            mat = constant(_resize_matrix(n_in, n_out, kind, align_corners, align_mode, ratio,
                                          np.dtype(x.dtype)))
        else:  # a size known only at run time: the same matrix, built by the run
            n_in = shape(x)[axis] if n_in is None else n_in
            mat = resize_weights(n_in, None if scale is not None else n_out, mode=kind,
                                 align_corners=align_corners, align_mode=align_mode,
                                 scale=scale, dtype=x.dtype)
        # the axis last, a product with the matrix, the axis back
        perm = [a for a in range(rank) if a != axis] + [axis]
        back = list(np.argsort(perm))
        out = transpose(matmul(transpose(out, perm), transpose(mat, [1, 0])), back)
    return out


def _exact_repeat(scale):
    """A scale whose nearest resize repeats each item `scale` times exactly."""
    return scale >= 1 and scale == int(scale) and int(scale) & (int(scale) - 1) == 0


def _size_value(s):
    """An output size: a Python int, or an int scalar tensor (a dim read from
    another tensor's shape while building: known at run time)."""
    if isinstance(s, (int, np.integer)):
        return int(s)
    if hasattr(s, "shape") and hasattr(s, "dtype"):
        if isinstance(s, Symbolic):
            return s
        return int(s.item())  # an eager tensor holds its value
    return int(s)


def upsample(x, size=None, scale_factor=None, mode="nearest", align_corners=False,
             align_mode=0, data_format="NCHW", name=None):
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


# ---- attention --------------------------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, training=True, name=None):
    """Paddle's layout: (batch, seq_len, num_heads, head_dim). `attn_mask`: bool
    (True keeps) or additive float, broadcast to (batch, heads, L, S)."""
    from .functional import dropout
    q, k, v = lift(query), lift(key), lift(value)
    if len(q.shape) != 4:
        raise ValueError(f"scaled_dot_product_attention: expects (batch, seq, heads, dim) "
                         f"inputs, got {list(q.shape)}")
    qh, kh, vh = (transpose(t, [0, 2, 1, 3]) for t in (q, k, v))
    scores = matmul(qh, transpose(kh, [0, 1, 3, 2])) * (1.0 / math.sqrt(q.shape[-1]))
    if is_causal:
        L, S = q.shape[1], k.shape[1]
        if L is None or S is None:  # lengths known at run time: the same mask, built then
            from ..core.ops import ones, tril
            L, S = (shape(q)[1] if L is None else L), (shape(k)[1] if S is None else S)
            keep = tril(ones([L, S], dtype="bool"))
        else:
            keep = constant(np.tril(np.ones((L, S), bool)))
        scores = where(keep, scores, cast(constant(-np.inf), scores.dtype))
    if attn_mask is not None:
        mask = lift(attn_mask)
        if mask.dtype == np.bool_:
            scores = where(mask, scores, cast(constant(-np.inf), scores.dtype))
        else:
            scores = scores + mask
    probs = softmax(scores, -1)
    if dropout_p:
        probs = dropout(probs, dropout_p, training=training)
    return transpose(matmul(probs, vh), [0, 2, 1, 3])
