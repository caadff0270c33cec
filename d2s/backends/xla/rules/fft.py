"""xla rules of the Fourier transforms and complex helpers
(`d2s/core/ops/fft_ops.py`): jnp.fft's n-dimensional forms and the same
adjoints as the kernels (crop / zero-pad with static sizes)."""
from __future__ import annotations

import numpy as np

from ....core.ops.fft_ops import resize_along as _resize
from ....core.registry import lowers

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _complex_of(dtype):
    return np.result_type(np.dtype(dtype), np.complex64)


@lowers("xla", "fft_c2c")
def _c2c(ns, x, axes, sizes, norm, inverse):
    f = ns.jnp.fft.ifftn if inverse else ns.jnp.fft.fftn
    return f(x, s=sizes, axes=axes, norm=norm).astype(_complex_of(x.dtype))


@lowers("xla", "fft_c2c_adjoint")
def _c2c_adjoint(ns, g, x, axes, norm, inverse):
    f = ns.jnp.fft.fftn if inverse else ns.jnp.fft.ifftn
    y = f(g, axes=axes, norm=_SWAP[norm])
    return _resize(ns.jnp, y, x.shape, axes).astype(_complex_of(x.dtype))


@lowers("xla", "fft_r2c")
def _r2c(ns, x, axes, sizes, norm):
    return ns.jnp.fft.rfftn(x, s=sizes, axes=axes, norm=norm).astype(_complex_of(x.dtype))


@lowers("xla", "fft_r2c_adjoint")
def _r2c_adjoint(ns, g, x, axes, sizes, norm):
    jnp = ns.jnp
    full = list(x.shape)
    if sizes is not None:
        for a, n in zip(axes, sizes):
            full[a] = n
    g = _resize(jnp, g, full, axes[-1:])
    y = jnp.real(jnp.fft.ifftn(g, axes=axes, norm=_SWAP[norm]))
    return _resize(jnp, y, x.shape, axes).astype(x.dtype)


@lowers("xla", "fft_c2r")
def _c2r(ns, x, axes, sizes, norm):
    out = ns.jnp.fft.irfftn(x, s=sizes, axes=axes, norm=norm)
    return out.astype(np.finfo(_complex_of(x.dtype)).dtype)


@lowers("xla", "fft_c2r_adjoint")
def _c2r_adjoint(ns, g, x, axes, norm):
    jnp = ns.jnp
    last = axes[-1]
    n = g.shape[last]
    y = jnp.fft.rfftn(g, axes=axes, norm=_SWAP[norm])
    twice = np.ones(y.shape[last], np.dtype(g.dtype))
    twice[1:(n + 1) // 2] = 2.0
    y = y * twice.reshape((-1,) + (1,) * (g.ndim - 1 - last))
    return _resize(jnp, y, x.shape, axes).astype(x.dtype)


@lowers("xla", "real")
def _real(ns, x):
    return ns.jnp.real(x)


@lowers("xla", "imag")
def _imag(ns, x):
    return ns.jnp.imag(x)


@lowers("xla", "complex")
def _complex(ns, re, im):
    re, im = ns.jnp.broadcast_arrays(re, im)
    return ns.lax.complex(re, im)
