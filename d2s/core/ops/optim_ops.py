"""Parameter-update ops. Eager `step()`, static `minimize()` and a step traced by
`to_static` all bind these, so an optimizer's arithmetic is written once.

The learning rate is an input (a 0-d float64 tensor the optimizer owns), not
an attribute: a program built once reads the rate current at each run, so
`set_lr` between steps needs no new program.

`out`: a tuple with one buffer (or None) per output. A kernel given buffers
writes its results into them (a compiled training step passes the
parameter's and the state's own arrays: the update happens in place, as
hand-written numpy does it) and computes exactly the same values as without
them: the same operations in the same order, only the last one of each
result stores into the buffer (a ufunc's `out=` casts as `astype` would).
"""
from __future__ import annotations

import numpy as np

from ..registry import Aval, register_op

# An exported model's weights are constant initializers: nothing updates them.
_NO_OUT = (None, None, None, None)
# The update ops whose kernels take `out=` (one buffer or None per output), and
# those that also take `grad_is_dead=True`: the gradient's array may hold a
# temporary (nothing reads the gradient after the update).
IN_PLACE_UPDATES = frozenset({"sgd_update", "adam_update"})
DEAD_GRAD_UPDATES = frozenset({"sgd_update"})


def _sgd_kernel(param, grad, lr, out=_NO_OUT, grad_is_dead=False):
    # `lr * grad` in a new array (or in the dead gradient's), then the update
    step = np.multiply(grad, lr, dtype=param.dtype, out=grad if grad_is_dead else None)
    return np.subtract(param, step, out=step if out[0] is None else out[0])


register_op("sgd_update", _sgd_kernel, lambda p, g, lr: Aval(tuple(p.shape), p.dtype))


def _adam_kernel(param, grad, m, v, step, lr, beta1, beta2, epsilon, out=_NO_OUT):
    p_out, m_out, v_out, step_out = out
    dt = param.dtype
    t = np.add(step, 1, out=step_out)
    m = np.add(beta1 * m, (1 - beta1) * grad, out=m_out)
    v = np.add(beta2 * v, (1 - beta2) * grad * grad, out=v_out)
    m_hat = m / (1 - beta1 ** t)       # float64: a Python float to an int64 power
    v_hat = v / (1 - beta2 ** t)
    new = np.subtract(param, lr * m_hat / (np.sqrt(v_hat) + epsilon), out=p_out)
    return (new.astype(dt, copy=False), m.astype(dt, copy=False), v.astype(dt, copy=False),
            np.asarray(t, dtype=step.dtype))


def _adam_infer(p, g, m, v, step, lr, **_):
    a = Aval(tuple(p.shape), p.dtype)
    return a, a, a, Aval(tuple(step.shape), step.dtype)


# Adam with bias correction; returns (param, m, v, step + 1).
register_op("adam_update", _adam_kernel, _adam_infer, num_outputs=4)


# ---- Momentum, RMSProp, Adagrad, AdamW (Paddle's update rules) ---------------------------------
# Computed in the parameter's dtype (the rate cast to it first), as Paddle's kernels do.
def _rate(lr, dt):
    return np.asarray(lr, dtype=dt)


def _momentum_kernel(param, grad, velocity, lr, mu, use_nesterov):
    dt = param.dtype
    lr = _rate(lr, dt)
    v = mu * velocity + grad.astype(dt, copy=False)
    step = (grad + mu * v) * lr if use_nesterov else v * lr
    return np.subtract(param, step, dtype=dt), v.astype(dt, copy=False)


# velocity = mu * velocity + grad; param -= lr * velocity (Nesterov: lr * (grad + mu * velocity))
register_op("momentum_update", _momentum_kernel,
            lambda p, g, v, lr, **_: (Aval(tuple(p.shape), p.dtype),) * 2, num_outputs=2)


def _rmsprop_kernel(param, grad, mean_square, mean_grad, moment, lr, rho, epsilon, momentum,
                    centered):
    dt = param.dtype
    lr = _rate(lr, dt)
    g = grad.astype(dt, copy=False)
    ms = rho * mean_square + (1 - rho) * g * g
    if centered:
        mg = rho * mean_grad + (1 - rho) * g
        denom = np.sqrt(ms - mg * mg + epsilon)
    else:
        mg = mean_grad
        denom = np.sqrt(ms + epsilon)
    mom = momentum * moment + lr * g / denom
    return (np.subtract(param, mom, dtype=dt), ms.astype(dt, copy=False),
            np.array(mg, dtype=dt), mom.astype(dt, copy=False))


# Paddle's RMSProp: epsilon inside the square root; returns (param, mean_square, mean_grad, moment)
register_op("rmsprop_update", _rmsprop_kernel,
            lambda p, g, ms, mg, mom, lr, **_: (Aval(tuple(p.shape), p.dtype),) * 4,
            num_outputs=4)


def _adagrad_kernel(param, grad, moment, lr, epsilon):
    dt = param.dtype
    lr = _rate(lr, dt)
    g = grad.astype(dt, copy=False)
    m = moment + g * g
    return np.subtract(param, lr * g / (np.sqrt(m) + epsilon), dtype=dt), m.astype(dt, copy=False)


# moment += grad ** 2; param -= lr * grad / (sqrt(moment) + epsilon)
register_op("adagrad_update", _adagrad_kernel,
            lambda p, g, m, lr, **_: (Aval(tuple(p.shape), p.dtype),) * 2, num_outputs=2)


def _adamw_kernel(param, grad, m, v, step, lr, beta1, beta2, epsilon, coeff):
    """Decoupled weight decay `param *= 1 - lr * coeff`, then Adam's update (its
    arithmetic and dtypes, as `adam_update`)."""
    dt = param.dtype
    decayed = param - (lr * coeff) * param   # float64, as Adam's update is
    t = np.add(step, 1)
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1 ** t)
    v_hat = v / (1 - beta2 ** t)
    new = decayed - lr * m_hat / (np.sqrt(v_hat) + epsilon)
    return (new.astype(dt, copy=False), m.astype(dt, copy=False), v.astype(dt, copy=False),
            np.asarray(t, dtype=step.dtype))


# AdamW: returns (param, m, v, step + 1)
register_op("adamw_update", _adamw_kernel, _adam_infer, num_outputs=4)


def _adamax_kernel(param, grad, m, u, step, lr, beta1, beta2, epsilon):
    """Paddle's Adamax: `u = max(beta2 u + epsilon, |g|)`, `param -= lr / (1 - beta1^t) m / u`."""
    dt = param.dtype
    g = grad.astype(dt, copy=False)
    t = np.add(step, 1)
    m = beta1 * m + (1 - beta1) * g
    u = np.maximum(beta2 * u + epsilon, np.abs(g))
    rate = _rate(lr / (1 - beta1 ** t), dt)
    return (np.subtract(param, rate * m / u, dtype=dt), m.astype(dt, copy=False),
            u.astype(dt, copy=False), np.asarray(t, dtype=step.dtype))


# Adamax: returns (param, m, u, step + 1)
register_op("adamax_update", _adamax_kernel, _adam_infer, num_outputs=4)
