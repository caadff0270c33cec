"""`standard_gamma_grad(x, alpha)`: dx/dalpha of a draw x ~ Gamma(alpha, 1)
at fixed CDF value (implicit reparameterization, as torch and JAX
differentiate their Gamma draws): -(dP(alpha, x)/dalpha) / f(x; alpha), P
the regularized lower incomplete gamma function, f the density.

A primitive, not a composite: the sum below runs until its terms vanish,
a number of terms that depends on the data. Writing P's series
e^-x sum_n x^(alpha+n) / Gamma(alpha+n+1) over f, each term is
r_n = x^(n+1) / (alpha (alpha+1) ... (alpha+n)) (no exp(-x) or Gamma to
under- or overflow), and differentiating in alpha gives
dx/dalpha = -sum_n r_n (log x - psi(alpha+n+1)). Accurate where draws of
Gamma(alpha) fall (its cancellation grows only in far tails). The xla rule
is JAX's `random_gamma_grad`; ONNX has none. No gradient of its own: it
is used under `detach` (the Gamma rsample of d2s.distribution)."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op
from ..shapes import broadcast_shapes
from ._base import lift_pair
from .math_more import _digamma_kernel


def _kernel(x, alpha):
    dtype = np.result_type(np.asarray(x).dtype, np.asarray(alpha).dtype)
    xs, a = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(alpha, np.float64))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        log_x = np.log(xs)
        psi = _digamma_kernel(a + 1.0)
        r = xs / a
        total = np.zeros(xs.shape)
        mass = np.zeros(xs.shape)
        n = 0
        active = np.ones(xs.shape, bool)
        while active.any():
            term = np.where(active, r, 0.0)
            total = total + term * (log_x - psi)
            mass = mass + term
            n += 1
            psi = psi + 1.0 / (a + n)
            r = r * xs / (a + n)
            # past the peak (alpha + n > x) the terms only shrink: stop once negligible
            active = active & ((a + n <= xs + 1.0) | (r > 1e-17 * mass)) & np.isfinite(r)
        out = np.where(xs > 0, -total, 0.0)
    return out.astype(dtype)


def _infer(x, alpha):
    shape = broadcast_shapes(tuple(x.shape), tuple(alpha.shape), opname="standard_gamma_grad")
    return Aval(shape, np.result_type(np.dtype(x.dtype), np.dtype(alpha.dtype)))


register_op("standard_gamma_grad", _kernel, _infer, None, elementwise=True)


def standard_gamma_grad(x, alpha):
    """dx/dalpha for x ~ Gamma(alpha, 1) (floats), by implicit differentiation."""
    x, alpha = lift_pair(x, alpha)
    return bind("standard_gamma_grad", x, alpha)
