"""xla rules of the decompositions and solves (`d2s/core/ops/linalg_decomp.py`):
jnp.linalg's, which call the same LAPACK routines on CPU. Where numpy
raises (a singular or non positive-definite matrix), XLA returns infs or
NaNs: a non-finite result runs the call again on numpy, which raises."""
from __future__ import annotations

import numpy as np

from ....core.registry import lowers


def _finite(ns, *outs):
    ok = ns.jnp.all(ns.jnp.array([ns.jnp.all(ns.jnp.isfinite(o)) for o in outs]))
    ns.check_on_numpy(ok)


@lowers("xla", "det")
def _det(ns, x):
    return ns.jnp.linalg.det(x)


@lowers("xla", "slogdet")
def _slogdet(ns, x):
    sign, logabs = ns.jnp.linalg.slogdet(x)
    return sign, logabs


@lowers("xla", "solve")
def _solve(ns, x, y):
    jnp = ns.jnp
    if y.ndim == 1:
        out = jnp.linalg.solve(x, y[:, None])[:, 0]
    else:
        batch = jnp.broadcast_shapes(x.shape[:-2], y.shape[:-2])
        out = jnp.linalg.solve(jnp.broadcast_to(x, batch + x.shape[-2:]),
                               jnp.broadcast_to(y, batch + y.shape[-2:]))
    _finite(ns, out)
    return out


@lowers("xla", "cholesky")
def _cholesky(ns, x):
    out = ns.jnp.linalg.cholesky(x)
    _finite(ns, out)
    return out


@lowers("xla", "qr")
def _qr(ns, x, mode):
    q, r = ns.jnp.linalg.qr(x, mode=mode)
    return q, r


@lowers("xla", "svd")
def _svd(ns, x, full_matrices):
    u, s, vh = ns.jnp.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


@lowers("xla", "eigh")
def _eigh(ns, x, uplo):
    w, v = ns.jnp.linalg.eigh(x, UPLO=uplo, symmetrize_input=False)
    return w, v


@lowers("xla", "pinv")
def _pinv(ns, x, rcond, hermitian):
    return ns.jnp.linalg.pinv(x, rtol=rcond, hermitian=hermitian)


@lowers("xla", "lu")
def _lu(ns, x):
    """lax.linalg.lu (getrf): 0-based pivots made 1-based; infos from U's
    diagonal (the first exact zero), as the kernel reports them."""
    jnp = ns.jnp
    packed, pivots, _ = ns.lax.linalg.lu(x)
    k = min(x.shape[-2:])
    diag = jnp.diagonal(packed, axis1=-2, axis2=-1)[..., :k]
    zero = diag == 0
    first = jnp.argmax(zero, axis=-1).astype(jnp.int32) + 1
    infos = jnp.where(jnp.any(zero, axis=-1), first, 0).astype(jnp.int32)
    return packed, (pivots + 1).astype(jnp.int32), infos


@lowers("xla", "eig")
def _eig(ns, x):
    """jnp.linalg.eig runs on the CPU only (LAPACK's geev): elsewhere the
    program runs on numpy."""
    if ns.jax.default_backend() != "cpu":
        raise ns.Unsupported("eig of a general matrix: XLA has it on the CPU only")
    w, v = ns.jnp.linalg.eig(x)
    dt = np.result_type(x.dtype, np.complex64)
    return w.astype(dt), v.astype(dt)
