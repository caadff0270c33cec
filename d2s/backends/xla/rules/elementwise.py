"""xla rules of the elementwise ops (`d2s/core/ops/elementwise.py`): the jnp
function of the same name after NumPy 2's promotion, with numpy's answers
where XLA's differ (integer division by zero, pow's sqrt, casts)."""
from __future__ import annotations

import numpy as np

from ....core.registry import register_lowering
from ._base import promoted


_xla_floor_divide = promoted("floor_divide")


def _floor_divide_xla(ns, x, y):
    """numpy's integer `x // 0` is 0 (with a RuntimeWarning); XLA's is -1 or -2."""
    q = _xla_floor_divide(ns, x, y)
    if np.dtype(q.dtype).kind not in "iu":
        return q
    return ns.jnp.where(ns.jnp.asarray(y) == 0, ns.jnp.zeros((), q.dtype), q)


_xla_power = promoted("power")


def _numpy_takes_sqrt(x, y):
    """Whether numpy computes `x ** y` for a single exponent 0.5 as sqrt: NaN
    at -inf and -0.0 at -0.0, where pow gives inf and 0.0. It does when its
    loop sees the exponent broadcast (a 0-d exponent, or one element against
    a larger or differently shaped base), not when both are the same single
    element (the shapes numpy 2 gives each result for, tested against it)."""
    if np.size(y) != 1:
        return False
    return np.ndim(y) == 0 or np.size(x) > 1 or (np.ndim(x) >= 1 and np.shape(x) != np.shape(y))


def _pow_xla(ns, x, y):
    """An integer to a negative integer power raises ValueError on numpy; XLA
    computes a wrapped value: such a call runs again on numpy, which raises."""
    out = _xla_power(ns, x, y)
    if np.dtype(out.dtype).kind == "f" and _numpy_takes_sqrt(x, y):
        is_half = np.asarray(y) == 0.5 if isinstance(y, (np.ndarray, np.generic, float)) \
            else None
        if is_half is None:
            out = ns.jnp.where(ns.jnp.asarray(y).reshape(()) == 0.5,
                               ns.jnp.sqrt(x.astype(out.dtype)), out)
        elif is_half.all():
            out = ns.jnp.sqrt(ns.jnp.asarray(x).astype(out.dtype)).reshape(out.shape)
    constant_ok = isinstance(y, (np.ndarray, np.generic)) and (y >= 0).all()
    if np.dtype(out.dtype).kind in "iu" and np.dtype(y.dtype).kind == "i" and not constant_ok:
        ns.check_on_numpy(ns.jnp.all(ns.jnp.asarray(y) >= 0))
    return out


def _numpy_cast_wraps_through(dtype):
    """The integer type numpy's float -> `dtype` cast goes through on this
    machine, when it gives that type's "indefinite" value (its minimum) for
    NaN, infinities and values out of its range, and wraps to `dtype` (x86:
    int64 through itself; int32, int16, int8, uint16, uint8 through int32),
    else None (saturating machines: XLA's own conversion; uint32 and uint64,
    whose numpy results follow neither rule: see the README's backend table)."""
    probe = np.array([np.nan, np.inf, -np.inf, 3e10, -3e10, 1e20, 300.7, -300.7, 70000.5,
                      -2.5], np.float64)
    for wide in (np.int64, np.int32):
        if np.dtype(dtype).itemsize > np.dtype(wide).itemsize:
            continue
        bound = float(2 ** (8 * np.dtype(wide).itemsize - 1))
        bad = np.isnan(probe) | (probe < -bound) | (probe >= bound)
        through = np.where(bad, np.iinfo(wide).min, np.where(bad, 0, probe).astype(wide))
        with np.errstate(invalid="ignore"):
            if np.array_equal(through.astype(dtype), probe.astype(dtype)):
                return np.dtype(wide)
    return None


_CAST_THROUGH = {np.dtype(t): _numpy_cast_wraps_through(t)
                 for t in ("int64", "int32", "int16", "int8", "uint16", "uint8")}


def _cast_xla(ns, x, dtype):
    """XLA saturates float -> int conversions (NaN gives 0); numpy on x86
    gives the indefinite value: the same values here (see
    `_numpy_cast_wraps_through`)."""
    wide = _CAST_THROUGH.get(np.dtype(dtype)) if np.dtype(x.dtype).kind == "f" else None
    if wide is None:
        return x.astype(dtype)
    jnp = ns.jnp
    bound = float(2 ** (8 * wide.itemsize - 1))
    bad = jnp.isnan(x) | (x < -bound) | (x >= bound)
    through = jnp.where(bad, jnp.zeros_like(x), x).astype(wide)
    return jnp.where(bad, jnp.asarray(np.iinfo(wide).min, wide), through).astype(dtype)



register_lowering("xla", "add", promoted("add"))
register_lowering("xla", "subtract", promoted("subtract"))
register_lowering("xla", "multiply", promoted("multiply"))
register_lowering("xla", "divide", promoted("true_divide"))
register_lowering("xla", "floor_divide", _floor_divide_xla)
register_lowering("xla", "remainder", promoted("remainder"))
register_lowering("xla", "pow", _pow_xla)
register_lowering("xla", "maximum", promoted("maximum"))
register_lowering("xla", "minimum", promoted("minimum"))
register_lowering("xla", "equal", promoted("equal"))
register_lowering("xla", "not_equal", promoted("not_equal"))
register_lowering("xla", "less_than", promoted("less"))
register_lowering("xla", "less_equal", promoted("less_equal"))
register_lowering("xla", "greater_than", promoted("greater"))
register_lowering("xla", "greater_equal", promoted("greater_equal"))
register_lowering("xla", "logical_and", promoted("logical_and"))
register_lowering("xla", "logical_or", promoted("logical_or"))
register_lowering("xla", "logical_xor", promoted("logical_xor"))
register_lowering("xla", "logical_not", promoted("logical_not"))
register_lowering("xla", "neg", promoted("negative"))
register_lowering("xla", "exp", promoted("exp"))
register_lowering("xla", "log", promoted("log"))
register_lowering("xla", "sqrt", promoted("sqrt"))
register_lowering("xla", "tanh", promoted("tanh"))
register_lowering("xla", "abs", promoted("abs"))
register_lowering("xla", "erf", lambda ns, x: ns.special.erf(x).astype(x.dtype))
register_lowering("xla", "sign", promoted("sign"))
register_lowering("xla", "sigmoid", lambda ns, x: ns.lax.logistic(x))
register_lowering("xla", "relu", lambda ns, x: ns.jnp.maximum(x, ns.jnp.zeros((), x.dtype)))
register_lowering("xla", "where", lambda ns, c, x, y: ns.jnp.where(c, *ns.promote(x, y)))
register_lowering("xla", "clip",
                  lambda ns, x, min=None, max=None: ns.jnp.clip(x, min, max).astype(x.dtype))
register_lowering("xla", "cast", _cast_xla)
