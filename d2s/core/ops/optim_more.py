"""Update ops of the Adadelta and Lamb optimizers (Paddle's rules), one op
per parameter update as the other optimizers (`optim_ops.py`): eager
`step()` runs the kernel, converted steps and `minimize` programs bind it.

Adadelta: `Eg = rho Eg + (1 - rho) g^2`; `u = -sqrt((Edx + eps) / (Eg + eps)) g`;
`Edx = rho Edx + (1 - rho) u^2`; `param += lr u`.

Lamb: Adam's moments with bias correction, `r = m_hat / (sqrt(v_hat) + eps) +
wd * param`, then the layer-wise trust ratio `||param|| / ||r||` (1 where
either norm is 0, or where the parameter has no weight decay and
`always_adapt` is off): `param -= lr * ratio * r`.
"""
from __future__ import annotations

import numpy as np

from ..registry import Aval, register_op


def _adadelta_kernel(param, grad, avg_sq_grad, avg_sq_update, lr, rho, epsilon):
    dt = param.dtype
    g = grad.astype(dt, copy=False)
    eg = rho * avg_sq_grad + (1 - rho) * g * g
    update = -np.sqrt((avg_sq_update + epsilon) / (eg + epsilon)) * g
    edx = rho * avg_sq_update + (1 - rho) * update * update
    new = param + np.asarray(lr, dt) * update
    return new.astype(dt, copy=False), eg.astype(dt, copy=False), edx.astype(dt, copy=False)


register_op("adadelta_update", _adadelta_kernel,
            lambda p, g, a, b, lr, **_: (Aval(tuple(p.shape), p.dtype),) * 3, num_outputs=3)


def _lamb_kernel(param, grad, m, v, step, lr, beta1, beta2, epsilon, weight_decay, adapt):
    dt = param.dtype
    g = grad.astype(dt, copy=False)
    t = np.add(step, 1)
    m = (beta1 * m + (1 - beta1) * g).astype(dt, copy=False)
    v = (beta2 * v + (1 - beta2) * g * g).astype(dt, copy=False)
    m_hat = m / (1 - beta1 ** t)
    v_hat = v / (1 - beta2 ** t)
    r = m_hat / (np.sqrt(v_hat) + epsilon) + weight_decay * param
    if adapt:
        w_norm = np.sqrt(np.sum(np.square(param, dtype=np.float64)))
        r_norm = np.sqrt(np.sum(np.square(r, dtype=np.float64)))
        ratio = np.where((w_norm > 0) & (r_norm > 0), w_norm / np.where(r_norm > 0, r_norm, 1.0),
                         1.0)
    else:
        ratio = np.float64(1.0)
    new = param - lr * ratio * r
    return new.astype(dt, copy=False), m, v, np.asarray(t, dtype=step.dtype)


def _lamb_infer(p, g, m, v, step, lr, **_):
    a = Aval(tuple(p.shape), p.dtype)
    return a, a, a, Aval(tuple(step.shape), step.dtype)


register_op("lamb_update", _lamb_kernel, _lamb_infer, num_outputs=4)
