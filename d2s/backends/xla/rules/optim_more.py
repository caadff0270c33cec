"""XLA rules of the Adadelta and Lamb update ops (`d2s/core/ops/optim_more.py`):
the kernels' arithmetic and dtypes in jax.numpy."""
from __future__ import annotations

import numpy as np

from ....core.registry import lowers


@lowers("xla", "adadelta_update")
def _adadelta(ns, param, grad, avg_sq_grad, avg_sq_update, lr, rho, epsilon):
    jnp = ns.jnp
    dt = param.dtype
    g = grad.astype(dt)
    eg = rho * avg_sq_grad + (1 - rho) * g * g
    update = -jnp.sqrt((avg_sq_update + epsilon) / (eg + epsilon)) * g
    edx = rho * avg_sq_update + (1 - rho) * update * update
    new = param + jnp.asarray(lr, dt) * update
    return new.astype(dt), eg.astype(dt), edx.astype(dt)


@lowers("xla", "lamb_update")
def _lamb(ns, param, grad, m, v, step, lr, beta1, beta2, epsilon, weight_decay, adapt):
    jnp = ns.jnp
    dt = param.dtype
    g = grad.astype(dt)
    t = step + 1
    m = (beta1 * m + (1 - beta1) * g).astype(dt)
    v = (beta2 * v + (1 - beta2) * g * g).astype(dt)
    tf = t.astype(np.float64)
    m_hat = m / (1 - jnp.power(beta1, tf))
    v_hat = v / (1 - jnp.power(beta2, tf))
    r = m_hat / (jnp.sqrt(v_hat) + epsilon) + weight_decay * param
    if adapt:
        w_norm = jnp.sqrt(jnp.sum(jnp.square(param.astype(np.float64))))
        r_norm = jnp.sqrt(jnp.sum(jnp.square(r.astype(np.float64))))
        ratio = jnp.where((w_norm > 0) & (r_norm > 0),
                          w_norm / jnp.where(r_norm > 0, r_norm, 1.0), 1.0)
    else:
        ratio = 1.0
    new = param - lr * ratio * r
    return new.astype(dt), m, v, t.astype(step.dtype)
