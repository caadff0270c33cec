"""Paddle's `Adadelta` and `Lamb` optimizers: the `Optimizer` base's three
modes (eager `step()`, static `minimize()`, converted training steps) over
the `adadelta_update` / `lamb_update` ops (`d2s/core/ops/optim_more.py`)."""
from __future__ import annotations

import numpy as np

from ..core.tensor import to_tensor
from .optimizer import Optimizer, _zeros_like_param

__all__ = ["Adadelta", "Lamb"]


class Adadelta(Optimizer):
    """`Eg = rho Eg + (1 - rho) g^2`; `u = -sqrt((Edx + eps) / (Eg + eps)) g`;
    `Edx = rho Edx + (1 - rho) u^2`; `param += learning_rate * u`."""

    _op = "adadelta_update"

    def __init__(self, learning_rate=0.001, epsilon=1.0e-6, rho=0.95, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        if learning_rate is None or epsilon is None or rho is None:
            raise ValueError("Adadelta: learning_rate, epsilon and rho must be given")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._epsilon, self._rho = float(epsilon), float(rho)

    def _attrs(self):
        return {"rho": self._rho, "epsilon": self._epsilon}

    def _new_state(self, param):
        return (_zeros_like_param(param, "avg_squared_grad"),
                _zeros_like_param(param, "avg_squared_update"))


class Lamb(Optimizer):
    """LAMB (layer-wise adaptive moments): Adam's bias-corrected step plus
    `lamb_weight_decay * param`, scaled per parameter by the trust ratio
    `||param|| / ||step||`. Parameters that `exclude_from_weight_decay_fn`
    accepts get no decay and, unless `always_adapt`, no trust ratio."""

    _op = "lamb_update"

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999,
                 epsilon=1e-6, parameters=None, grad_clip=None,
                 exclude_from_weight_decay_fn=None, multi_precision=False, always_adapt=False,
                 name=None):
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        self._lamb_weight_decay = float(lamb_weight_decay)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)
        self._exclude_fn = exclude_from_weight_decay_fn
        self._always_adapt = bool(always_adapt)
        self._multi_precision = bool(multi_precision)

    def _attrs_for(self, param):
        decay = self._lamb_weight_decay
        if self._exclude_fn is not None and self._exclude_fn(param):
            decay = 0.0
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
                "weight_decay": decay, "adapt": bool(self._always_adapt or decay != 0.0)}

    def _new_state(self, param):
        m, v = _zeros_like_param(param, "moment1"), _zeros_like_param(param, "moment2")
        step = to_tensor(np.zeros((), np.int64))
        step.name = f"{param.name or 'param'}_step"
        return m, v, step
