"""The one door to JAX: imported here, with an install hint when it is missing,
and 64-bit mode scoped to d2s's own tracing and calls."""
from __future__ import annotations

try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as special
    from jax import lax
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError('the xla backend needs JAX: pip install "d2s[xla]"') from e

_enable_x64 = getattr(jax, "enable_x64", None)
if _enable_x64 is None:  # pragma: no cover - JAX before 0.5
    from jax.experimental import enable_x64 as _enable_x64


def x64():
    """Context in which JAX keeps float64/int64 64-bit, as numpy does.

    Entered around every trace, compile and call of d2s's own: the user's
    global `jax_enable_x64` setting is never changed."""
    return _enable_x64(True)


def strong(x):
    """`x` without JAX's weak type (a Python number's), so that it promotes
    like the numpy array it stands for."""
    if getattr(x, "weak_type", False):
        return lax.convert_element_type(x, x.dtype)
    return x


__all__ = ["jax", "jnp", "lax", "special", "x64", "strong"]
