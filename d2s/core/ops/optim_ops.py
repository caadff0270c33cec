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

from ..registry import Aval, NotLowerable, register_op

# An exported model's weights are constant initializers: nothing updates them.
_UPDATES_WEIGHTS = NotLowerable("it updates a parameter in place; the weights of an ONNX model "
                                "are constants (export the forward, not a training step)")

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


def _sgd_xla(ns, param, grad, lr):
    return param - grad.astype(param.dtype) * ns.jnp.asarray(lr, param.dtype)


register_op("sgd_update", _sgd_kernel, lambda p, g, lr: Aval(tuple(p.shape), p.dtype)).lowering(
    xla=_sgd_xla, onnx=_UPDATES_WEIGHTS)


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
