"""Parameter-update ops. Eager `step()` and static `minimize()` both bind
these, so an optimizer's arithmetic is written once."""
from __future__ import annotations

import numpy as np

from ..registry import Aval, NotLowerable, register_op

# An exported model's weights are constant initializers: nothing updates them.
_UPDATES_WEIGHTS = NotLowerable("it updates a parameter in place; the weights of an ONNX model "
                                "are constants (export the forward, not a training step)")


def _sgd_kernel(param, grad, lr):
    step = np.multiply(grad, lr, dtype=param.dtype)  # one new array, then in place
    return np.subtract(param, step, out=step)


def _sgd_xla(ns, param, grad, lr):
    return param - grad.astype(param.dtype) * ns.jnp.asarray(lr, param.dtype)


register_op("sgd_update", _sgd_kernel, lambda p, g, lr: Aval(tuple(p.shape), p.dtype)).lowering(
    xla=_sgd_xla, onnx=_UPDATES_WEIGHTS)


def _adam_kernel(param, grad, m, v, step, lr, beta1, beta2, epsilon):
    t = step + 1
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1 ** t)
    v_hat = v / (1 - beta2 ** t)
    new = param - lr * m_hat / (np.sqrt(v_hat) + epsilon)
    dt = param.dtype
    return (new.astype(dt, copy=False), m.astype(dt, copy=False), v.astype(dt, copy=False),
            np.asarray(t, dtype=step.dtype))


def _adam_infer(p, g, m, v, step, **_):
    a = Aval(tuple(p.shape), p.dtype)
    return a, a, a, Aval(tuple(step.shape), step.dtype)


def _adam_xla(ns, param, grad, m, v, step, lr, beta1, beta2, epsilon):
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
    dt = param.dtype
    return new.astype(dt), m.astype(dt), v.astype(dt), t.astype(step.dtype)


# Adam with bias correction; returns (param, m, v, step + 1).
register_op("adam_update", _adam_kernel, _adam_infer, num_outputs=4).lowering(
    xla=_adam_xla, onnx=_UPDATES_WEIGHTS)
