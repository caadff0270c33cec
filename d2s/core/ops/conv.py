"""The 2-D members of the convolution and pooling family (`conv_nd.py`:
`conv2d`, `max_pool2d`, `avg_pool2d` and their gradient ops, over NCHW) and
the 2-D attribute forms of `d2s.nn.functional`.

Attributes are normalized before binding (see `conv_pads`): `stride`,
`dilation` and `kernel` are pairs, `padding` is `(top, bottom, left, right)`.
The channel-last layout, the `'SAME'` / `'VALID'` strings and bias live in
`d2s.nn.functional`, which transposes and adds around these ops.
"""
from __future__ import annotations

import numpy as np

from ._base import lift
from .conv_nd import conv, conv_out_size, input_size, pool, pool_counts

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "conv_out_size", "conv_pads", "input_size"]


def same_pads(in_sizes, kernel, stride, dilation, where):
    """padding='SAME' -> (lo, hi) per spatial dim: the output keeps
    ceil(size / stride). With stride 1 the padding is d * (k - 1) whatever the
    size, so a dim known only at run time (an InputSpec's None) is fine;
    with a larger stride it depends on the size."""
    pads = []
    for size, k, s, d in zip(in_sizes, kernel, stride, dilation):
        if size is None and s != 1:
            raise ValueError(f"{where}: padding='SAME' with stride {s} needs the spatial dims "
                             f"known (input spatial shape {tuple(in_sizes)}): its padding "
                             f"depends on the size. Give those dims a size in the InputSpec, "
                             f"or give the padding as ints (they hold for any size)")
        if size is None:
            total = d * (k - 1)
        else:
            total = max((-(-size // s) - 1) * s + d * (k - 1) + 1 - size, 0)
        pads += [total // 2, total - total // 2]
    return tuple(pads)


def conv_pads(padding, in_hw, kernel, stride, dilation, where, channel_last=False):
    """Paddle's `padding` forms -> (top, bottom, left, right): an int, a pair, four
    ints, per-dim pairs (2 or 4 dims: the batch and channel pairs must be 0),
    or the strings 'SAME' / 'VALID'."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0, 0, 0, 0)
        if mode != "SAME":
            raise ValueError(f"{where}: padding must be 'SAME', 'VALID', an int or a list, "
                             f"got {padding!r}")
        return same_pads(in_hw, kernel, stride, dilation, where)
    if isinstance(padding, (int, np.integer)):
        p = int(padding)
        return (p, p, p, p)
    flat = list(padding)
    if flat and all(isinstance(v, (list, tuple)) for v in flat):
        if len(flat) == 4:
            # [[0,0],[0,0],[t,b],[l,r]] (NCHW) or [[0,0],[t,b],[l,r],[0,0]] (NHWC)
            rest = [flat[0], flat[3]] if channel_last else flat[:2]
            if any(int(v) for p in rest for v in p):
                raise ValueError(f"{where}: padding of the batch or channel dim is not "
                                 f"supported, got {padding!r}")
            flat = flat[1:3] if channel_last else flat[2:]
        if len(flat) != 2 or any(len(p) != 2 for p in flat):
            raise ValueError(f"{where}: padding pairs must be given for 2 (or 4) dims, "
                             f"got {padding!r}")
        return tuple(int(v) for p in flat for v in p)
    if len(flat) == 2:
        return (int(flat[0]), int(flat[0]), int(flat[1]), int(flat[1]))
    if len(flat) == 4:
        return tuple(int(v) for v in flat)
    raise ValueError(f"{where}: padding must be an int, 2 or 4 ints, pairs, 'SAME' or "
                     f"'VALID', got {padding!r}")


def pair(v, where, name):
    """An int or a 2-sequence -> a pair of positive ints."""
    if isinstance(v, (int, np.integer)):
        out = (int(v), int(v))
    else:
        out = tuple(int(a) for a in v)
        if len(out) == 1:
            out = out * 2
    if len(out) != 2 or min(out) <= 0:
        raise ValueError(f"{where}: {name} must be a positive int or 2 positive ints, got {v!r}")
    return out


def conv2d(x, weight, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    """NCHW convolution (cross-correlation) with normalized attributes."""
    return conv(lift(x), lift(weight), stride, padding, dilation, groups)


def max_pool2d(x, kernel, stride, padding, ceil_mode=False):
    return pool("max_pool", lift(x), kernel, stride, padding, ceil_mode)


def avg_pool2d(x, kernel, stride, padding, ceil_mode=False, exclusive=True):
    return pool("avg_pool", lift(x), kernel, stride, padding, ceil_mode,
                exclusive=bool(exclusive))


def avg_pool_counts(shape, kernel, stride, padding, ceil_mode, exclusive):
    """(oh, ow) divisors of an NCHW input of `shape` (`conv_nd.pool_counts`)."""
    return pool_counts(tuple(shape[2:]), kernel, stride, padding, ceil_mode, exclusive)


def adaptive_bins(size, out):
    """Paddle's adaptive bins: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def adaptive_matrix(size, out, dtype):
    """(out, size) averaging matrix of the adaptive bins: an adaptive average pool
    is separable, `A_h @ x @ A_w^T`."""
    m = np.zeros((out, size), dtype)
    for i, (a, b) in enumerate(adaptive_bins(size, out)):
        m[i, a:b] = 1.0 / (b - a)
    return m

