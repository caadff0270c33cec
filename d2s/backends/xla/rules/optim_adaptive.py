"""XLA rules of the NAdam, RAdam, Rprop and ASGD update ops
(`d2s/core/ops/optim_adaptive.py`): the kernels' arithmetic and dtypes in
jax.numpy (RAdam's branch on the step count is a select)."""
from __future__ import annotations

import numpy as np

from ....core.registry import lowers


@lowers("xla", "nadam_update")
def _nadam(ns, param, grad, m, v, mu_product, step, lr, beta1, beta2, epsilon, momentum_decay):
    jnp = ns.jnp
    dt = param.dtype
    g = grad.astype(dt)
    t = step + 1
    tf = t.astype(np.float64)
    mu = beta1 * (1.0 - 0.5 * jnp.power(0.96, tf * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * jnp.power(0.96, (tf + 1.0) * momentum_decay))
    prod = mu_product * mu
    m = (beta1 * m + (1 - beta1) * g).astype(dt)
    v = (beta2 * v + (1 - beta2) * g * g).astype(dt)
    denom = jnp.sqrt(v / (1.0 - jnp.power(beta2, tf))) + epsilon
    new = (param - lr * (1.0 - mu) / (1.0 - prod) * g / denom
           - lr * mu_next / (1.0 - prod * mu_next) * m / denom)
    return new.astype(dt), m, v, prod.astype(mu_product.dtype), t.astype(step.dtype)


@lowers("xla", "radam_update")
def _radam(ns, param, grad, m, v, step, lr, beta1, beta2, epsilon):
    jnp = ns.jnp
    dt = param.dtype
    g = grad.astype(dt)
    t = step + 1
    tf = t.astype(np.float64)
    m = (beta1 * m + (1 - beta1) * g).astype(dt)
    v = (beta2 * v + (1 - beta2) * g * g).astype(dt)
    m_hat = m / (1.0 - jnp.power(beta1, tf))
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    b2t = jnp.power(beta2, tf)
    rho = rho_inf - 2.0 * tf * b2t / (1.0 - b2t)
    safe = jnp.maximum(rho, 5.0)  # the rectified branch only where it is taken
    rect = jnp.sqrt((safe - 4.0) * (safe - 2.0) * rho_inf
                    / ((rho_inf - 4.0) * (rho_inf - 2.0) * safe))
    adaptive = jnp.sqrt(1.0 - b2t) / (jnp.sqrt(v) + epsilon)
    new = jnp.where(rho > 5.0, param - lr * m_hat * rect * adaptive, param - lr * m_hat)
    return new.astype(dt), m, v, t.astype(step.dtype)


@lowers("xla", "rprop_update")
def _rprop(ns, param, grad, prev, step_size, lr, eta_minus, eta_plus, step_min, step_max):
    jnp = ns.jnp
    dt = param.dtype
    g = grad.astype(dt)
    sign = jnp.sign(g * prev)
    factor = jnp.where(sign > 0, eta_plus, jnp.where(sign < 0, eta_minus, 1.0))
    size = jnp.clip(step_size * factor, step_min, step_max).astype(dt)
    g = jnp.where(sign < 0, jnp.zeros_like(g), g)
    return (param - jnp.sign(g) * size).astype(dt), g, size


@lowers("xla", "asgd_update")
def _asgd(ns, param, grad, d, ys, step, lr, batch_num):
    jnp = ns.jnp
    dt = param.dtype
    g = grad.astype(dt)
    i = step % batch_num
    d = (d - ys[i] + g).astype(dt)
    ys = ys.at[i].set(g)
    t = step + 1
    count = jnp.minimum(t, batch_num)
    new = param - jnp.asarray(lr, dt) * (d / count.astype(dt))
    return new.astype(dt), d, ys, t.astype(step.dtype)
