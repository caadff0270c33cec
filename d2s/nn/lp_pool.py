"""Power-average (Lp) pooling, Paddle's `F.lp_pool1d` / `F.lp_pool2d`:
`(sum over the window of x ** p) ** (1 / p)`, a composite of `avg_pool2d`
with divisor 1 (the window sum; padding contributes zeros), so it gets
gradients, xla and ONNX from that op. `norm_type=inf` is max pooling. A
window whose sum is 0 gets a zero gradient (PyTorch's choice) instead of
the 0 * inf of the root's derivative there."""
from __future__ import annotations

import math

from ..core.ops import squeeze, unsqueeze, where, zeros_like
from ..core.ops._base import lift
from .conv_functional import avg_pool2d, max_pool2d

__all__ = ["lp_pool1d", "lp_pool2d"]


def _pair(v, where_):
    v = [int(v)] * 2 if isinstance(v, int) else [int(a) for a in v]
    if len(v) != 2:
        raise ValueError(f"{where_}: expected an int or 2 ints, got {v}")
    return v


def _root(s, p):
    positive = s > 0
    safe = where(positive, s, s * 0.0 + 1.0)
    return where(positive, safe ** (1.0 / p), zeros_like(s))


def lp_pool2d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False,
              data_format="NCHW", name=None):
    """Lp pooling over H and W of an NCHW (or NHWC) input."""
    x = lift(x)
    p = float(norm_type)
    if not p > 0:
        raise ValueError(f"lp_pool2d: norm_type must be positive, got {norm_type}")
    kernel = _pair(kernel_size, "lp_pool2d")
    stride = kernel if stride is None else _pair(stride, "lp_pool2d")
    if math.isinf(p):
        return max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode,
                          data_format=data_format)
    sums = avg_pool2d(x ** p, kernel, stride, padding, ceil_mode, exclusive=False,
                      divisor_override=1, data_format=data_format)
    return _root(sums, p)


def lp_pool1d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False,
              data_format="NCL", name=None):
    """Lp pooling over L of an NCL (or NLC) input."""
    x = lift(x)
    if data_format not in ("NCL", "NLC"):
        raise ValueError(f"lp_pool1d: data_format must be 'NCL' or 'NLC', got {data_format!r}")
    if len(x.shape) != 3:
        raise ValueError(f"lp_pool1d: expects a 3-D input, got shape {list(x.shape)}")
    one = lambda v: [1, int(v if isinstance(v, int) else v[0])]  # noqa: E731
    pad = padding if isinstance(padding, int) else int(padding[0])
    axis = 2 if data_format == "NCL" else 1
    out = lp_pool2d(unsqueeze(x, axis), norm_type, one(kernel_size),
                    None if stride is None else one(stride), [0, pad], ceil_mode,
                    "NCHW" if data_format == "NCL" else "NHWC")
    return squeeze(out, axis)
