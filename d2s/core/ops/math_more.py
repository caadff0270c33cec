"""More elementwise math that ported model code calls (issue 25): atan2,
logit, frac, heaviside, erfinv, lgamma, digamma, logaddexp, signbit, sgn,
nan_to_num, lerp, gcd, lcm.

Most are compositions of existing ops. Primitives only where a composite
would be wrong or loop: atan2 (its gradient at y = 0), the special
functions erfinv / lgamma / digamma (with `trigamma`, digamma's
derivative), signbit (-0.0), and gcd (Euclid's loop). NumPy has no special
functions, so their kernels are written here (series and Newton steps to
double precision); the xla rules use JAX's, ONNX has none
(`rules/math_more.py`).
"""
from __future__ import annotations

import math as _math

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes
from ._base import cast_like, constant, elementwise_infer, lift, lift_pair, unbroadcast
from .elementwise import (abs as _abs, cast, equal, exp, floor_divide, greater_than, less_than,
                          log, maximum, sign, where, zeros_like_)

__all__ = ["atan2", "logit", "frac", "heaviside", "erfinv", "lgamma", "digamma", "logaddexp",
           "signbit", "sgn", "nan_to_num", "lerp", "gcd", "lcm", "isposinf", "isneginf",
           "isreal"]


def _float_of(x):
    """The float dtype an op of x computes in (NumPy 2: ints give float64)."""
    return np.result_type(np.dtype(x.dtype), np.float16) if np.dtype(x.dtype).kind == "f" \
        else np.dtype(np.float64)


def _unary_op(name, kernel, vjp):
    op = register_op(name, kernel, elementwise_infer(kernel, name), vjp, elementwise=True)
    return op


# ---- atan2 ------------------------------------------------------------------------------
def _atan2_vjp(g, out, x, y):
    r2 = x * x + y * y
    return (unbroadcast(cast_like(g * y / r2, x), x), unbroadcast(cast_like(-g * x / r2, y), y))


register_op("atan2", np.arctan2, elementwise_infer(np.arctan2, "atan2"), _atan2_vjp)


def atan2(x, y, name=None):
    """The angle of the point (y, x) (x the numerator, as Paddle), in
    [-pi, pi]; int inputs give float64."""
    x, y = lift_pair(x, y)
    return bind("atan2", x, y)


# ---- special functions ------------------------------------------------------------------
def _erfinv_start(y):
    """A single-precision first guess (M. Giles' polynomial fits)."""
    w = -np.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws = w - 2.5
    p = np.full_like(y, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
        p = c + p * ws
    wl = np.sqrt(np.maximum(w, 0.0)) - 3.0
    q = np.full_like(y, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        q = c + q * wl
    return np.where(small, p, q) * y


_erf = np.vectorize(_math.erf, otypes=[np.float64])
_erfc = np.vectorize(_math.erfc, otypes=[np.float64])
_TWO_OVER_ROOT_PI = 2.0 / _math.sqrt(_math.pi)


def _erfinv_kernel(x):
    """erf(out) = x: the first guess polished by Halley steps (f'' = -2 x f',
    so a step is x - f / (f' + x f)), on erf(t) - |x| for |x| <= 1/2 and on
    erfc(t) - (1 - |x|) beyond, where 1 - |x| is exact and erf's values
    crowd against 1; each entry stops once a step no longer moves it. +-1
    give +-inf, |x| > 1 nan."""
    dtype = np.result_type(x.dtype, np.float16) if x.dtype.kind == "f" else np.float64
    y = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        a = np.abs(y)
        inside = a < 1.0
        a = np.where(inside, a, 0.0)
        tail = a > 0.5
        c = 1.0 - a
        t = _erfinv_start(a)
        active = inside.copy()
        for _ in range(8):
            if not active.any():
                break
            ti, tl = t[active], tail[active]
            f = np.empty_like(ti)
            f[tl] = _erfc(ti[tl]) - c[active][tl]
            f[~tl] = _erf(ti[~tl]) - a[active][~tl]
            slope = _TWO_OVER_ROOT_PI * np.exp(-ti * ti) * np.where(tl, -1.0, 1.0)
            step = f / (slope + ti * f)
            t[active] = ti - step
            moving = np.abs(step) > 2e-16 * np.abs(ti)
            active[active] = moving & np.isfinite(step)
        out = np.copysign(t, y)
        out = np.where(inside, out, np.where(np.abs(y) == 1.0, np.sign(y) * np.inf, np.nan))
    return out.astype(dtype, copy=False)


def _erfinv_vjp(g, out, x):
    return (cast_like(g * (_math.sqrt(_math.pi) / 2.0) * exp(out * out), x),)


def _lgamma_one(v):
    try:
        return _math.lgamma(v)
    except ValueError:  # a pole (0, -1, -2, ...)
        return _math.inf


_lgamma = np.vectorize(_lgamma_one, otypes=[np.float64])


def _lgamma_kernel(x):
    dtype = np.result_type(x.dtype, np.float16) if x.dtype.kind == "f" else np.float64
    return _lgamma(x).astype(dtype, copy=False)


def _series(x, shift_to, asymptotic, step):
    """f(x) for x >= 1/2 by the recurrence f(x) = f(x + 1) + step(x), moved
    up to `shift_to` where the asymptotic series is exact to double
    precision."""
    acc = np.zeros_like(x)
    for _ in range(int(shift_to)):
        low = x < shift_to
        acc = acc + np.where(low, step(np.where(low, x, 1.0)), 0.0)
        x = np.where(low, x + 1.0, x)
    return acc + asymptotic(x)


def _digamma_asym(x):
    r = 1.0 / (x * x)
    tail = r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132)))))
    return np.log(x) - 0.5 / x - tail


def _trigamma_asym(x):
    r = 1.0 / (x * x)
    tail = 1 / 6 - r * (1 / 30 - r * (1 / 42 - r * (1 / 30 - r * (5 / 66))))
    return 1.0 / x + 0.5 * r + tail * r / x


def _digamma_kernel(x):
    """psi(x): x < 1/2 by the reflection psi(1 - x) - pi / tan(pi x); 0 gives
    -inf and the negative integers nan (PyTorch's values)."""
    dtype = np.result_type(x.dtype, np.float16) if x.dtype.kind == "f" else np.float64
    v = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        reflect = v < 0.5
        z = np.where(reflect, 1.0 - v, v)
        out = _series(z, 10.0, _digamma_asym, lambda t: -1.0 / t)
        out = np.where(reflect, out - np.pi / np.tan(np.pi * v), out)
        pole = (v <= 0) & (v == np.floor(v))
        out = np.where(pole, np.where(v == 0, -np.inf, np.nan), out)
    return out.astype(dtype, copy=False)


def _trigamma_kernel(x):
    """psi'(x): reflection psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x)."""
    dtype = np.result_type(x.dtype, np.float16) if x.dtype.kind == "f" else np.float64
    v = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        reflect = v < 0.5
        z = np.where(reflect, 1.0 - v, v)
        out = _series(z, 10.0, _trigamma_asym, lambda t: 1.0 / (t * t))
        out = np.where(reflect, (np.pi / np.sin(np.pi * v)) ** 2 - out, out)
        out = np.where((v <= 0) & (v == np.floor(v)), np.inf, out)
    return out.astype(dtype, copy=False)


_unary_op("erfinv", _erfinv_kernel, _erfinv_vjp)
_unary_op("lgamma", _lgamma_kernel, lambda g, out, x: (cast_like(g * digamma(x), x),))
_unary_op("digamma", _digamma_kernel,
          lambda g, out, x: (cast_like(g * bind("trigamma", x), x),))
_unary_op("trigamma", _trigamma_kernel, None)


def _float_input(x):
    x = lift(x)
    return x if np.dtype(x.dtype).kind == "f" else cast(x, _float_of(x))


def erfinv(x, name=None):
    """The inverse error function: erf(erfinv(x)) = x on (-1, 1); +-1 give
    +-inf, outside nan."""
    return bind("erfinv", _float_input(x))


def lgamma(x, name=None):
    """log |Gamma(x)| (inf at the poles 0, -1, -2, ...)."""
    return bind("lgamma", _float_input(x))


def digamma(x, name=None):
    """psi(x), the derivative of lgamma (-inf at 0, nan at negative integers)."""
    return bind("digamma", _float_input(x))


# ---- signbit / gcd ----------------------------------------------------------------------
register_op("signbit", np.signbit, lambda x: Aval(tuple(x.shape), np.dtype(np.bool_)), None,
            elementwise=True)


def signbit(x, name=None):
    """True where the sign bit of x is set: negative numbers and -0.0."""
    return bind("signbit", lift(x))


def _gcd_infer(x, y):
    shape = broadcast_shapes(tuple(x.shape), tuple(y.shape), opname="gcd")
    return Aval(shape, np.result_type(np.dtype(x.dtype), np.dtype(y.dtype)))


register_op("gcd", np.gcd, _gcd_infer, None, elementwise=True)


def _int_pair(x, y, opname):
    x, y = lift_pair(x, y)
    for v in (x, y):
        if np.dtype(v.dtype).kind not in "iu":
            raise TypeError(f"{opname}: x and y must be integer tensors, got {v.dtype}")
    return x, y


def gcd(x, y, name=None):
    """The greatest common divisor of |x| and |y| (gcd(0, 0) = 0), integers."""
    x, y = _int_pair(x, y, "gcd")
    return bind("gcd", x, y)


def lcm(x, y, name=None):
    """The least common multiple of |x| and |y| (0 where either is 0)."""
    x, y = _int_pair(x, y, "lcm")
    g = gcd(x, y)
    zero = equal(g, 0)
    safe = where(zero, constant(1, g.dtype), g)
    return where(zero, zeros_like_(g), _abs(floor_divide(x, safe) * y))


# ---- composites -------------------------------------------------------------------------
def logit(x, eps=None, name=None):
    """log(x / (1 - x)), x first clipped to [eps, 1 - eps] when eps is given."""
    from .elementwise import clip
    x = _float_input(x)
    if eps is not None:
        x = clip(x, float(eps), 1.0 - float(eps))
    return log(x / (1.0 - x))


def frac(x, name=None):
    """The fractional part x - trunc(x), with x's sign (0 for integers)."""
    from .math import trunc
    x = lift(x)
    if np.dtype(x.dtype).kind not in "fc":
        return x - x
    return x - trunc(x)


def heaviside(x, y, name=None):
    """The step function: 0 where x < 0, 1 where x > 0, y where x == 0."""
    x, y = lift_pair(x, y)
    dtype = np.result_type(np.dtype(x.dtype), np.dtype(y.dtype))
    one, zero = constant(1, dtype), constant(0, dtype)
    yv = y if np.dtype(y.dtype) == dtype else cast(y, dtype)
    return where(less_than(x, 0), zero, where(greater_than(x, 0), one, yv))


def logaddexp(x, y, name=None):
    """log(exp(x) + exp(y)) without overflow: shifted by the larger operand
    (whose own gradient cancels, so ties get half each)."""
    from .math import isfinite
    x, y = lift_pair(x, y)
    if np.dtype(x.dtype).kind != "f":
        x, y = cast(x, "float64"), cast(y, "float64")
    m = maximum(x, y)
    m = where(isfinite(m), m, zeros_like_(m))
    return m + log(exp(x - m) + exp(y - m))


def sgn(x, name=None):
    """sign(x) for real x; x / |x| (0 at 0) for complex x."""
    x = lift(x)
    if np.dtype(x.dtype).kind != "c":
        return sign(x)
    a = _abs(x)
    zero = equal(a, 0)
    safe = where(zero, constant(1.0, a.dtype), a)
    return where(zero, zeros_like_(x), x / cast(safe, x.dtype))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None):
    """x with nan, +inf and -inf replaced by `nan`, `posinf` and `neginf`
    (by default 0, and the largest and lowest finite values of x's dtype)."""
    from .math import isnan
    x = lift(x)
    if np.dtype(x.dtype).kind != "f":
        return x
    info = np.finfo(np.dtype(x.dtype))
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    x = where(isnan(x), constant(nan, x.dtype), x)
    x = where(equal(x, float("inf")), constant(posinf, x.dtype), x)
    return where(equal(x, float("-inf")), constant(neginf, x.dtype), x)


def lerp(x, y, weight, name=None):
    """x + weight * (y - x) (weight a number or a tensor, broadcast)."""
    x, y = lift_pair(x, y)
    return x + lift(weight, like=x) * (y - x)


def isposinf(x, name=None):
    """True where x is +inf."""
    x = lift(x)
    if np.dtype(x.dtype).kind != "f":
        return equal(x, x) != equal(x, x)  # all False, shaped like x
    return equal(x, float("inf"))


def isneginf(x, name=None):
    """True where x is -inf."""
    x = lift(x)
    if np.dtype(x.dtype).kind != "f":
        return equal(x, x) != equal(x, x)
    return equal(x, float("-inf"))


def isreal(x, name=None):
    """True everywhere for a real dtype (complex tensors: see the error)."""
    x = lift(x)
    if np.dtype(x.dtype).kind != "c":
        return equal(x, x) | ~equal(x, x)  # all True (NaN included), shaped like x
    raise TypeError("isreal of a complex tensor is not supported; compare its imaginary "
                    "part with 0 instead")
