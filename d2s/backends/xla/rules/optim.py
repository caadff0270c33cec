"""XLA rules of the Momentum, RMSProp, Adagrad and AdamW update ops
(`d2s/core/ops/optim_ops.py`): the kernels' arithmetic and dtypes in jax.numpy."""
from __future__ import annotations

import numpy as np

from ....core.registry import lowers, register_lowering


@lowers("xla", "momentum_update")
def _momentum(ns, param, grad, velocity, lr, mu, use_nesterov):
    dt = param.dtype
    lr = ns.jnp.asarray(lr, dt)
    v = mu * velocity + grad.astype(dt)
    step = (grad + mu * v) * lr if use_nesterov else v * lr
    return (param - step).astype(dt), v.astype(dt)


@lowers("xla", "rmsprop_update")
def _rmsprop(ns, param, grad, mean_square, mean_grad, moment, lr, rho, epsilon, momentum,
             centered):
    jnp = ns.jnp
    dt = param.dtype
    lr = jnp.asarray(lr, dt)
    g = grad.astype(dt)
    ms = rho * mean_square + (1 - rho) * g * g
    if centered:
        mg = rho * mean_grad + (1 - rho) * g
        denom = jnp.sqrt(ms - mg * mg + epsilon)
    else:
        mg = mean_grad
        denom = jnp.sqrt(ms + epsilon)
    mom = momentum * moment + lr * g / denom
    return (param - mom).astype(dt), ms.astype(dt), mg.astype(dt), mom.astype(dt)


@lowers("xla", "adagrad_update")
def _adagrad(ns, param, grad, moment, lr, epsilon):
    dt = param.dtype
    lr = ns.jnp.asarray(lr, dt)
    g = grad.astype(dt)
    m = moment + g * g
    return (param - lr * g / (ns.jnp.sqrt(m) + epsilon)).astype(dt), m.astype(dt)


@lowers("xla", "adamw_update")
def _adamw(ns, param, grad, m, v, step, lr, beta1, beta2, epsilon, coeff):
    # Adam's update of the decayed parameter, in the parameter's own dtype
    decayed = param - (lr * coeff) * param
    return _adam_xla(ns, decayed, grad, m, v, step, lr, beta1, beta2, epsilon, dt=param.dtype)


@lowers("xla", "adamax_update")
def _adamax(ns, param, grad, m, u, step, lr, beta1, beta2, epsilon):
    jnp = ns.jnp
    dt = param.dtype
    g = grad.astype(dt)
    t = step + 1
    m = beta1 * m + (1 - beta1) * g
    u = jnp.maximum(beta2 * u + epsilon, jnp.abs(g))
    rate = (lr / (1 - jnp.power(beta1, t.astype(np.float64)))).astype(dt)
    return (param - rate * m / u).astype(dt), m.astype(dt), u.astype(dt), t.astype(step.dtype)


def _sgd_xla(ns, param, grad, lr):
    return param - grad.astype(param.dtype) * ns.jnp.asarray(lr, param.dtype)


def _adam_xla(ns, param, grad, m, v, step, lr, beta1, beta2, epsilon, dt=None):
    # The kernel's dtypes, spelled out: the bias corrections are float64 (a
    # Python float to an int64 power) and pull the update up to float64.
    jnp = ns.jnp
    t = step + 1
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    tf = t.astype(np.float64)
    m_hat = m / (1 - jnp.power(beta1, tf))
    v_hat = v / (1 - jnp.power(beta2, tf))
    new = param - lr * m_hat / (jnp.sqrt(v_hat) + epsilon)
    dt = param.dtype if dt is None else dt
    return new.astype(dt), m.astype(dt), v.astype(dt), t.astype(step.dtype)


register_lowering("xla", "sgd_update", _sgd_xla)
register_lowering("xla", "adam_update", _adam_xla)
