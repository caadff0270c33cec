"""Bitwise ops and a second set of math functions ported model code calls:
bitwise_and, bitwise_or, bitwise_xor, bitwise_not, the shifts, hypot, copysign,
logspace, ldexp, vander, nanmedian, nanquantile, polygamma, baddbmm.

The bitwise ops are primitives (numpy's ufuncs; xla's jnp ones; ONNX's
Bitwise* or, on bools, And/Or/Xor/Not: `rules/bits_special.py`). The rest
are compositions of existing ops.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes
from ._base import constant, lift, lift_pair
from .elementwise import abs as _abs, cast, where

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
           "bitwise_right_shift", "hypot", "copysign",
           "logspace", "ldexp", "vander", "nanmedian", "nanquantile", "polygamma", "baddbmm"]


def _binary_infer(x, y):
    shape = broadcast_shapes(tuple(x.shape), tuple(y.shape), opname="bitwise")
    return Aval(shape, np.result_type(np.dtype(x.dtype), np.dtype(y.dtype)))


for _name, _fn in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                   ("bitwise_xor", np.bitwise_xor)]:
    register_op(_name, _fn, _binary_infer, None, elementwise=True)
register_op("bitwise_not", np.invert, lambda x: Aval(tuple(x.shape), np.dtype(x.dtype)), None,
            elementwise=True)
for _name, _fn in [("bitwise_left_shift", np.left_shift),
                   ("bitwise_right_shift", np.right_shift)]:
    register_op(_name, _fn, _binary_infer, None, elementwise=True)


def _bits(x, y, opname):
    x, y = lift_pair(x, y)
    for v in (x, y):
        if np.dtype(v.dtype).kind not in "biu":
            raise TypeError(f"{opname}: x and y must be integer or bool tensors, got {v.dtype}")
    return bind(opname, x, y)


def bitwise_and(x, y, out=None, name=None):
    """Bitwise AND of integer (or bool: logical) tensors, broadcast."""
    return _bits(x, y, "bitwise_and")


def bitwise_or(x, y, out=None, name=None):
    """Bitwise OR of integer (or bool) tensors, broadcast."""
    return _bits(x, y, "bitwise_or")


def bitwise_xor(x, y, out=None, name=None):
    """Bitwise XOR of integer (or bool) tensors, broadcast."""
    return _bits(x, y, "bitwise_xor")


def _integer_operand(x, y):
    """True when `x op y` of `&`, `|`, `^` is Paddle's bitwise op: an
    integer tensor meets an integer tensor, a bool one or a Python int/bool
    (bool tensors alone, and floats, keep the logical ops)."""
    kinds = []
    for v in (x, y):
        dtype = getattr(v, "dtype", None)
        if dtype is not None:
            kinds.append(np.dtype(dtype).kind)
        elif isinstance(v, (bool, int, np.integer, np.bool_)):
            kinds.append("b" if isinstance(v, (bool, np.bool_)) else "i")
        else:
            return False
    tensor_int = any(getattr(v, "dtype", None) is not None and np.dtype(v.dtype).kind in "iu"
                     for v in (x, y))
    return tensor_int and all(k in "biu" for k in kinds)


def and_operator(x, y):
    """`x & y`: bitwise for integer tensors (Paddle's), logical otherwise."""
    from .elementwise import logical_and
    return bitwise_and(x, y) if _integer_operand(x, y) else logical_and(x, y)


def or_operator(x, y):
    """`x | y`: bitwise for integer tensors, logical otherwise."""
    from .elementwise import logical_or
    return bitwise_or(x, y) if _integer_operand(x, y) else logical_or(x, y)


def xor_operator(x, y):
    """`x ^ y`: bitwise for integer tensors, logical otherwise."""
    from .elementwise import logical_xor
    return bitwise_xor(x, y) if _integer_operand(x, y) else logical_xor(x, y)


def invert_operator(x):
    """`~x`: bitwise NOT of an integer tensor (Paddle's), logical NOT otherwise."""
    from .elementwise import logical_not
    if np.dtype(x.dtype).kind in "iu":
        return bitwise_not(x)
    return logical_not(x)


def _shift(x, y, opname):
    x, y = lift_pair(x, y)
    for v in (x, y):
        if np.dtype(v.dtype).kind not in "iu":
            raise TypeError(f"{opname}: x and y must be integer tensors, got {v.dtype}")
    return bind(opname, x, y)


def bitwise_left_shift(x, y, is_arithmetic=True, out=None, name=None):
    """`x << y` elementwise (integers)."""
    return _shift(x, y, "bitwise_left_shift")


def bitwise_right_shift(x, y, is_arithmetic=True, out=None, name=None):
    """`x >> y` elementwise: arithmetic (the sign kept) for signed integers,
    as numpy's; `is_arithmetic=False` shifts in zeros (the bits read as
    unsigned)."""
    x = lift(x)
    if is_arithmetic or np.dtype(x.dtype).kind == "u":
        return _shift(x, y, "bitwise_right_shift")
    unsigned = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}[np.dtype(x.dtype).itemsize]
    return cast(_shift(cast(x, unsigned), cast(lift(y), unsigned), "bitwise_right_shift"),
                x.dtype)


def bitwise_not(x, out=None, name=None):
    """Bitwise NOT (two's complement: ~x = -x - 1; NOT of a bool)."""
    x = lift(x)
    if np.dtype(x.dtype).kind not in "biu":
        raise TypeError(f"bitwise_not: x must be an integer or bool tensor, got {x.dtype}")
    return bind("bitwise_not", x)


def _floats(x, y):
    x, y = lift_pair(x, y)
    if np.dtype(x.dtype).kind != "f":
        x, y = cast(x, "float32"), cast(y, "float32")
    return x, y


def hypot(x, y, name=None):
    """sqrt(x^2 + y^2), scaled by the larger magnitude so that squares
    cannot overflow (gradient 0 at the origin)."""
    from .elementwise import maximum, sqrt
    x, y = _floats(x, y)
    m = maximum(_abs(x), _abs(y))
    zero = m == 0
    safe = where(zero, constant(1.0, m.dtype), m)
    a, b = x / safe, y / safe
    return where(zero, m, m * sqrt(a * a + b * b))


def copysign(x, y, name=None):
    """|x| with the sign of y (-0.0 counts as negative)."""
    from .math_more import signbit
    x, y = lift_pair(x, y)
    if np.dtype(x.dtype).kind != "f":
        x, y = cast(x, "float32"), cast(y, "float32")
    a = _abs(x)
    return where(signbit(y), -a, a)


def logspace(start, stop, num, base=10.0, dtype=None, name=None):
    """`num` numbers from base**start to base**stop, evenly spaced in the
    exponent."""
    from .creation_more import linspace
    from .elementwise import pow as _pow
    dtype = "float32" if dtype is None else dtype
    exps = linspace(start, stop, num, "float64")
    return cast(_pow(constant(float(base), "float64"), exps), dtype)


def ldexp(x, y, name=None):
    """x * 2**y (y an integer tensor); float32 for integer x, as Paddle."""
    from .elementwise import pow as _pow
    x, y = lift(x), lift(y)
    if np.dtype(y.dtype).kind not in "iu":
        raise TypeError(f"ldexp: y must be an integer tensor, got {y.dtype}")
    if np.dtype(x.dtype).kind != "f":
        x = cast(x, "float32")
    return x * _pow(constant(2.0, x.dtype), cast(y, x.dtype))


def vander(x, n=None, increasing=False, name=None):
    """The Vandermonde matrix of the 1-D `x`: columns x**(n-1), ..., x**0
    (or increasing powers), n = len(x) by default."""
    from .elementwise import pow as _pow
    from .manipulation import unsqueeze
    x = lift(x)
    if len(x.shape) != 1:
        raise ValueError(f"vander: x must be 1-D, got {tuple(x.shape)}")
    if n is None:
        n = x.shape[0]
        if n is None:
            raise ValueError("vander: give n when the size of x is unknown while building")
    if int(n) < 0:
        raise ValueError(f"vander: n must be >= 0, got {n}")
    powers = np.arange(int(n)) if increasing else np.arange(int(n))[::-1]
    if np.dtype(x.dtype).kind not in "fc":
        x = cast(x, "float64") if np.dtype(x.dtype) == np.int64 else cast(x, "float32")
    return _pow(unsqueeze(x, 1), constant(powers.astype(np.dtype(x.dtype)).reshape(1, -1)))


def _nan_order(x, axis, opname):
    """(values sorted along axis with NaN last, count of non-NaN per slice,
    axis, whether x was flattened)."""
    from .math import isnan
    from .reduce_scan_more import _along, _known
    from .reduction import sum as _sum
    from .search import argsort, take_along_axis
    xs, ax, flat = _along(x, axis, opname)
    _known(xs, ax, opname)
    srt = take_along_axis(xs, argsort(xs, ax), ax)  # NaN sorts last
    count = _sum(cast(~isnan(xs), "int64"), ax, keepdim=True)
    return srt, count, ax, flat


def _at(srt, ax, pos):
    """srt read at the int64 positions `pos` (size 1 along ax)."""
    from .search import take_along_axis
    return take_along_axis(srt, pos, ax)


def nanmedian(x, axis=None, keepdim=False, mode="avg", name=None):
    """The median over `axis` of the entries that are not NaN (NaN where
    all are); mode 'avg' / 'min' and the dtypes as `median` (with 'min'
    and an axis, also the index of the picked entry)."""
    from .elementwise import maximum
    from .reduce_scan_more import _finish
    if mode not in ("avg", "min"):
        raise ValueError(f"nanmedian: mode must be 'avg' or 'min', got {mode!r}")
    x = lift(x)
    nd = len(x.shape)
    srt, count, ax, flat = _nan_order(x, axis, "nanmedian")
    one = constant(1, "int64")
    lo = maximum((count - one) // 2, constant(0, "int64"))
    hi = maximum(count // 2, constant(0, "int64"))
    a = _at(srt, ax, lo)
    empty = count == 0
    nan = constant(float("nan"), "float64")
    if mode == "avg":
        dtype = "float64" if np.dtype(x.dtype) == np.float64 else "float32"
        v = (cast(a, dtype) + cast(_at(srt, ax, hi), dtype)) * 0.5
        v = where(count % 2 == 1, cast(a, dtype), v)
        v = where(empty, cast(nan, dtype), v)
        return _finish(v, ax, keepdim, flat, nd)
    v = where(empty, cast(nan, a.dtype), a) if np.dtype(a.dtype).kind == "f" else a
    out = _finish(v, ax, keepdim, flat, nd)
    if axis is None:
        return out
    from .search import argsort, take_along_axis
    from .reduce_scan_more import _along
    xs, _, _ = _along(x, axis, "nanmedian")
    idx = take_along_axis(argsort(xs, ax), lo, ax)
    return out, _finish(idx, ax, keepdim, flat, nd)


def nanquantile(x, q, axis=None, keepdim=False, interpolation="linear", name=None):
    """The q-th quantiles over `axis` of the entries that are not NaN
    (numpy's nanquantile; NaN where all are). A list q stacks its results
    on a new first dim."""
    from .elementwise import maximum, minimum
    from .math import floor
    from .manipulation import stack
    from .reduce_scan_more import _INTERPOLATIONS, _finish
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"nanquantile: interpolation must be one of {_INTERPOLATIONS}, got "
                         f"{interpolation!r}")
    if axis is not None and not isinstance(axis, int):
        raise ValueError("nanquantile: axis must be an int or None")
    x = lift(x)
    nd = len(x.shape)
    if np.dtype(x.dtype).kind != "f":
        x = cast(x, "float64")
    srt, count, ax, flat = _nan_order(x, axis, "nanquantile")
    qs = q if isinstance(q, (list, tuple)) else [q]
    last = maximum(count - 1, constant(0, "int64"))
    span = cast(last, x.dtype)
    outs = []
    for p in qs:
        p = float(p.item() if hasattr(p, "item") else p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"nanquantile: q must be in [0, 1], got {p}")
        pos = span * p
        i = cast(floor(pos), "int64")
        j = minimum(i + 1, last)
        a, b = _at(srt, ax, i), _at(srt, ax, j)
        frac = pos - cast(i, x.dtype)
        if interpolation == "lower":
            v = a
        elif interpolation == "higher":
            v = where(frac > 0, b, a)
        elif interpolation == "nearest":
            from .math import round as _round
            # numpy rounds half to even: the nearer index, ties to the even one
            r = cast(_round(pos), "int64")
            tie = frac == 0.5
            even = where(i % 2 == 0, i, j)
            v = _at(srt, ax, where(tie, even, r))
        elif interpolation == "midpoint":
            v = where(frac > 0, (a + b) * 0.5, a)
        else:
            v = a + (b - a) * frac
        v = where(count == 0, constant(float("nan"), v.dtype), v)
        outs.append(_finish(v, ax, keepdim, flat, nd))
    return stack(outs, 0) if isinstance(q, (list, tuple)) else outs[0]


def polygamma(x, n, name=None):
    """The n-th derivative of digamma at x, for n = 0 (digamma) and 1
    (trigamma); higher orders raise NotImplementedError."""
    from .math_more import _float_input, digamma
    n = int(n)
    if n == 0:
        return digamma(x)
    if n == 1:
        return bind("trigamma", _float_input(x))
    raise NotImplementedError(f"polygamma: order n={n} is not implemented (n = 0 and 1 are); "
                              "for n >= 2 sum (-1)**(n+1) * n! / (x + k)**(n+1) over k")


def baddbmm(input, x, y, beta=1.0, alpha=1.0, name=None):
    """beta * input + alpha * (x @ y) for batches of matrices x, y."""
    from .linalg import matmul
    input, x, y = lift(input), lift(x), lift(y)
    return input * beta + matmul(x, y) * alpha
