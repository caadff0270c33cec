"""The one door to JAX: imported here, with an install hint when it is missing,
and 64-bit mode scoped to d2s's own tracing and calls."""
from __future__ import annotations

import numpy as _np

# Importing jax draws from numpy's global generator: the user's stream (seeded
# with np.random.seed, drawn by their code, eager or converted) is put back as
# it was, so that the xla backend's first use changes no number they draw.
_numpy_random_state = _np.random.get_state()
try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as special
    from jax import lax
except ImportError as e:  # pragma: no cover - exercised in a subprocess test
    raise ImportError('the xla backend needs JAX: pip install "d2s[xla]"') from e
finally:
    _np.random.set_state(_numpy_random_state)
    del _numpy_random_state



def _settle_the_collector():
    """One full collection now, as part of the backend's start-up.

    Importing JAX leaves some 80,000 new container objects that Python's
    cyclic collector has not yet counted as long-lived; the first full
    collection after it (its rule: once the survivors of young collections
    reach a quarter of the long-lived objects) then falls on whichever call
    allocates next: a stall of tens of milliseconds in the middle of the
    first training steps (measured by benchmarks/xla_variable_lengths.py).
    Run here, it costs the same once, beside JAX's own import, and the next
    full collection waits until the process holds a quarter more objects.
    Nothing is frozen (`gc.freeze()` would also keep the user's objects from
    ever being collected); a collector the user disabled stays untouched."""
    import gc
    if gc.isenabled():
        gc.collect()


_settle_the_collector()

_enable_x64 = getattr(jax, "enable_x64", None)
if _enable_x64 is None:  # pragma: no cover - JAX before 0.5
    from jax.experimental import enable_x64 as _enable_x64


def x64():
    """Context in which JAX keeps float64/int64 64-bit, as numpy does.

    Entered around every trace, compile and call of d2s's own: the user's
    global `jax_enable_x64` setting is never changed."""
    return _enable_x64(True)


try:  # the state behind `x64()`, switched without a context manager (per call: cheaper)
    from jax._src.config import enable_x64 as _X64_STATE
    _swap_x64, _set_x64 = _X64_STATE.swap_local, _X64_STATE.set_local
except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
    _swap_x64 = None


def call_x64(fn, args):
    """`fn(*args)` with 64-bit mode on, as `with x64(): fn(*args)` does, for the
    per-call path of executables with 64-bit arguments: switching JAX's
    thread-local state directly costs a fifth of entering the context."""
    if _swap_x64 is None:  # pragma: no cover - other JAX versions
        with x64():
            return fn(*args)
    previous = _swap_x64(True)
    try:
        return fn(*args)
    finally:
        _set_x64(previous)


def strong(x):
    """`x` without JAX's weak type (a Python number's), so that it promotes
    like the numpy array it stands for."""
    if getattr(x, "weak_type", False):
        return lax.convert_element_type(x, x.dtype)
    return x


__all__ = ["jax", "jnp", "lax", "special", "x64", "call_x64", "strong"]
