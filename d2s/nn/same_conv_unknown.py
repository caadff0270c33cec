"""`conv2d(..., stride>1, padding='SAME')` (and max / average pooling) over
spatial dims known only at run time (an InputSpec's `None` height and width:
a segmentation net's strided "same" convolutions exported for any image
size).

'SAME' keeps `ceil(n / s)` outputs and pads `total = max((ceil(n/s) - 1) * s
+ eff_k - n, 0)` split `lo = total // 2` before and the rest after
(`eff_k = d * (k - 1) + 1`); with `s > 1` that depends on `n mod s`, so no
padding fixed while building fits every size. The largest `lo` any size can
need is `(eff_k - 1) // 2`: pad that much (and `eff_k - 1 - lo_max` after),
convolve with stride 1 — every window a 'SAME' output can use is then one
of its outputs — and take the windows the size needs, `j * s + lo_max -
lo(n)` for `j < ceil(n / s)`, with an `index_select` on run-time indices.
Exact (it computes the same sums), `s * s` times the convolution's work, and
differentiable through the ops it is made of.
"""
from __future__ import annotations

from ..core.ops import arange, cast, index_select, maximum, where, zeros_like
from ..core.ops.search import _dim

__all__ = ["needs_run_time_same", "same_at_run_time"]


def needs_run_time_same(padding, in_sizes, stride):
    """'SAME' with a stride above 1 on a dim of unknown size."""
    return isinstance(padding, str) and padding.upper() == "SAME" and any(
        n is None and s != 1 for n, s in zip(in_sizes, stride))


def same_at_run_time(apply, x, kernel, stride, dilation):
    """`apply(pads)` — the NCHW convolution or pooling with stride 1 and
    `pads` — made the strided op with 'SAME' padding resolved per run (see
    the module doc). A max pool pads with -inf and an average pool counts
    (or not) the same real elements per window, so pooling is exact too."""
    pads, picks = [], []
    for axis, (k, s, d) in enumerate(zip(kernel, stride, dilation)):
        eff = d * (k - 1) + 1
        lo_max = (eff - 1) // 2
        pads += [lo_max, eff - 1 - lo_max]
        if s != 1:
            picks.append((axis + 2, s, eff, lo_max))
    out = apply(tuple(pads))
    for axis, s, eff, lo_max in picks:
        n = _dim(x, axis)
        count = (n + (s - 1)) // s
        r = n % s
        total = eff - where(r == 0, r * 0 + s, r)
        total = maximum(total, zeros_like(total))
        offset = lo_max - total // 2
        index = cast(arange(0, count, dtype="int64") * s + offset, "int64")
        out = index_select(out, index, axis=axis)
    return out
