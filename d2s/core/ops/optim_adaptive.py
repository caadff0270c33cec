"""Update ops of the NAdam, RAdam, Rprop and ASGD optimizers (Paddle's rules,
which are PyTorch's for the first three), one op per parameter update as the
other optimizers (`optim_ops.py`, `optim_more.py`): eager `step()` runs the
kernel, converted steps and `minimize` programs bind it.

NAdam: Adam's moments with Nesterov momentum whose coefficient warms up,
`mu_t = beta1 (1 - 0.5 * 0.96 ** (t * momentum_decay))`; the running product
of the `mu_t` is state.

RAdam: Adam with the variance rectification term; while the approximated
SMA length `rho_t` is at most 5 the step is plain bias-corrected momentum.

Rprop: per-element step sizes grown by `etas[1]` while the gradient keeps
its sign and shrunk by `etas[0]` (and that gradient dropped) when it flips,
bounded by `learning_rate_range`; the parameter moves by `-sign(g) * step`.

ASGD (Paddle's: the stochastic average gradient): the last `batch_num`
gradients are kept; `d` is their sum and `param -= lr * d / min(t, batch_num)`.
"""
from __future__ import annotations

import numpy as np

from ..registry import Aval, register_op


def _same(*xs):
    return tuple(Aval(tuple(x.shape), x.dtype) for x in xs)


def _nadam_kernel(param, grad, m, v, mu_product, step, lr, beta1, beta2, epsilon,
                  momentum_decay):
    dt = param.dtype
    g = grad.astype(dt, copy=False)
    t = np.add(step, 1)
    tf = np.float64(t)
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (tf * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((tf + 1.0) * momentum_decay))
    prod = mu_product * mu
    m = (beta1 * m + (1 - beta1) * g).astype(dt, copy=False)
    v = (beta2 * v + (1 - beta2) * g * g).astype(dt, copy=False)
    denom = np.sqrt(v / (1.0 - beta2 ** tf)) + epsilon
    new = (param - lr * (1.0 - mu) / (1.0 - prod) * g / denom
           - lr * mu_next / (1.0 - prod * mu_next) * m / denom)
    return (new.astype(dt, copy=False), m, v, np.asarray(prod, mu_product.dtype),
            np.asarray(t, step.dtype))


register_op("nadam_update", _nadam_kernel,
            lambda p, g, m, v, mp, st, lr, **_: _same(p, m, v, mp, st), num_outputs=5)


def _radam_kernel(param, grad, m, v, step, lr, beta1, beta2, epsilon):
    dt = param.dtype
    g = grad.astype(dt, copy=False)
    t = np.add(step, 1)
    tf = np.float64(t)
    m = (beta1 * m + (1 - beta1) * g).astype(dt, copy=False)
    v = (beta2 * v + (1 - beta2) * g * g).astype(dt, copy=False)
    m_hat = m / (1.0 - beta1 ** tf)
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho = rho_inf - 2.0 * tf * beta2 ** tf / (1.0 - beta2 ** tf)
    if rho > 5.0:
        rect = np.sqrt((rho - 4.0) * (rho - 2.0) * rho_inf
                       / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho))
        adaptive = np.sqrt(1.0 - beta2 ** tf) / (np.sqrt(v) + epsilon)
        new = param - lr * m_hat * rect * adaptive
    else:
        new = param - lr * m_hat
    return new.astype(dt, copy=False), m, v, np.asarray(t, step.dtype)


register_op("radam_update", _radam_kernel,
            lambda p, g, m, v, st, lr, **_: _same(p, m, v, st), num_outputs=4)


def _rprop_kernel(param, grad, prev, step_size, lr, eta_minus, eta_plus, step_min, step_max):
    # `lr` (the optimizer's rate) only seeds the step sizes when the state is
    # made; taken as an input so that every update op has the same form
    dt = param.dtype
    g = grad.astype(dt, copy=False)
    sign = np.sign(g * prev)
    factor = np.where(sign > 0, eta_plus, np.where(sign < 0, eta_minus, 1.0))
    size = np.clip(step_size * factor, step_min, step_max).astype(dt, copy=False)
    g = np.where(sign < 0, 0, g).astype(dt, copy=False)
    new = param - np.sign(g) * size
    return new.astype(dt, copy=False), g, size


register_op("rprop_update", _rprop_kernel,
            lambda p, g, prev, s, lr, **_: _same(p, prev, s), num_outputs=3)


def _asgd_kernel(param, grad, d, ys, step, lr, batch_num):
    dt = param.dtype
    g = grad.astype(dt, copy=False)
    i = int(step) % batch_num
    d = (d - ys[i] + g).astype(dt, copy=False)
    ys = ys.copy()
    ys[i] = g
    t = np.add(step, 1)
    count = np.minimum(t, batch_num)
    new = param - np.asarray(lr, dt) * (d / np.asarray(count, dt))
    return new.astype(dt, copy=False), d, ys, np.asarray(t, step.dtype)


register_op("asgd_update", _asgd_kernel,
            lambda p, g, d, ys, st, lr, **_: _same(p, d, ys, st), num_outputs=4)
