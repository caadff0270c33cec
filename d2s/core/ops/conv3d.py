"""The 3-D members of the convolution and pooling family (`conv_nd.py`:
`conv3d`, `max_pool3d`, `avg_pool3d` and their gradient ops, over NCDHW) and
the 3-D attribute forms of `d2s.nn.functional`.

Attributes are normalized before binding: `stride`, `dilation` and `kernel`
are triples, `padding` is `(front, back, top, bottom, left, right)`.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ._base import lift
from .conv import same_pads
from .conv_nd import conv, pool, pool_counts, transposed_conv_attrs

__all__ = ["conv3d", "conv3d_transpose_op", "max_pool3d", "avg_pool3d", "triple", "pads3d"]

ND = 3


def triple(v, where, name):
    """An int or a 3-sequence -> a triple of positive ints."""
    if isinstance(v, (int, np.integer)):
        out = (int(v),) * ND
    else:
        out = tuple(int(a) for a in v)
        if len(out) == 1:
            out = out * ND
    if len(out) != ND or min(out) <= 0:
        raise ValueError(f"{where}: {name} must be a positive int or 3 positive ints, got {v!r}")
    return out


def pads3d(padding, in_dhw, kernel, stride, dilation, where, channel_last=False):
    """Paddle's `padding` forms -> (front, back, top, bottom, left, right): an int,
    3 ints, 6 ints, 5 (or 3) per-dim pairs, 'SAME' or 'VALID'."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0,) * (2 * ND)
        if mode != "SAME":
            raise ValueError(f"{where}: padding must be 'SAME', 'VALID', an int or a list, "
                             f"got {padding!r}")
        return same_pads(in_dhw, kernel, stride, dilation, where)
    if isinstance(padding, (int, np.integer)):
        return (int(padding),) * (2 * ND)
    flat = list(padding)
    if flat and all(isinstance(v, (list, tuple)) for v in flat):
        if len(flat) == ND + 2:
            rest = [flat[0], flat[-1]] if channel_last else flat[:2]
            if any(int(v) for p in rest for v in p):
                raise ValueError(f"{where}: padding of the batch or channel dim is not "
                                 f"supported, got {padding!r}")
            flat = flat[1:-1] if channel_last else flat[2:]
        if len(flat) != ND or any(len(p) != 2 for p in flat):
            raise ValueError(f"{where}: padding pairs must be given for 3 (or 5) dims, "
                             f"got {padding!r}")
        return tuple(int(v) for p in flat for v in p)
    if len(flat) == ND:
        return tuple(int(v) for v in flat for _ in range(2))
    if len(flat) == 2 * ND:
        return tuple(int(v) for v in flat)
    raise ValueError(f"{where}: padding must be an int, 3 or 6 ints, pairs, 'SAME' or "
                     f"'VALID', got {padding!r}")


def conv3d(x, weight, stride=(1,) * ND, padding=(0,) * (2 * ND), dilation=(1,) * ND, groups=1):
    """NCDHW convolution (cross-correlation) with normalized attributes."""
    return conv(lift(x), lift(weight), stride, padding, dilation, groups)


def conv3d_transpose_op(x, weight, output_dhw, stride, padding, dilation, groups,
                        output_padding=(0,) * ND):
    """The transposed convolution: the input gradient of the convolution that
    maps an `output_dhw` volume to `x`'s (the weight is (C_in, C_out/groups, k...));
    a None dim of `output_dhw` is derived from `x`'s when it runs, plus
    `output_padding` (`conv_nd.transposed_geometry`)."""
    x, weight = lift(x), lift(weight)
    if len(x.shape) != ND + 2 or len(weight.shape) != ND + 2:
        raise ValueError(f"conv3d_transpose: expects a 5-D input and weight, got "
                         f"{list(x.shape)} and {list(weight.shape)}")
    if x.shape[1] is not None and weight.shape[0] is not None and x.shape[1] != weight.shape[0]:
        raise ValueError(f"conv3d_transpose: the input has {x.shape[1]} channels but the "
                         f"weight {list(weight.shape)} expects {weight.shape[0]}")
    sizes = tuple(output_dhw)
    return bind("conv3d_grad_input", x, weight, input_dhw=sizes, stride=tuple(stride),
                padding=tuple(padding), dilation=tuple(dilation), groups=int(groups),
                **transposed_conv_attrs(sizes, output_padding))


def max_pool3d(x, kernel, stride, padding, ceil_mode=False):
    return pool("max_pool", lift(x), kernel, stride, padding, ceil_mode)


def avg_pool3d(x, kernel, stride, padding, ceil_mode=False, exclusive=True):
    return pool("avg_pool", lift(x), kernel, stride, padding, ceil_mode,
                exclusive=bool(exclusive))


def avg_pool3d_counts(spatial, kernel, stride, padding, ceil_mode, exclusive):
    """The divisor per output position (`conv_nd.pool_counts`)."""
    return pool_counts(tuple(spatial), kernel, stride, padding, ceil_mode, exclusive)
