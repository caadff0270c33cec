"""Paddle's `NAdam`, `RAdam`, `Rprop` and `ASGD` optimizers: the `Optimizer`
base's three modes (eager `step()`, static `minimize()`, converted training
steps) over the `nadam_update` / `radam_update` / `rprop_update` /
`asgd_update` ops (`d2s/core/ops/optim_adaptive.py`)."""
from __future__ import annotations

import numpy as np

from ..core.tensor import to_tensor
from .optimizer import Optimizer, _zeros_like_param

__all__ = ["NAdam", "RAdam", "Rprop", "ASGD"]


def _step_counter(param):
    step = to_tensor(np.zeros((), np.int64))
    step.name = f"{param.name or 'param'}_step"
    return step


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat): the momentum coefficient warms up
    as `beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))`."""

    _op = "nadam_update"

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1.0e-8,
                 momentum_decay=0.004, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        if not 0 <= beta1 < 1 or not 0 <= beta2 < 1:
            raise ValueError(f"NAdam: beta1 and beta2 must be in [0, 1), got {beta1}, {beta2}")
        if epsilon < 0 or momentum_decay < 0:
            raise ValueError("NAdam: epsilon and momentum_decay must be >= 0")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._beta1, self._beta2 = float(beta1), float(beta2)
        self._epsilon, self._momentum_decay = float(epsilon), float(momentum_decay)

    def _attrs(self):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
                "momentum_decay": self._momentum_decay}

    def _new_state(self, param):
        # the product of the momentum coefficients so far: float64, as it
        # multiplies hundreds of factors close to 1
        prod = to_tensor(np.ones((), np.float64))
        prod.name = f"{param.name or 'param'}_mu_product"
        return (_zeros_like_param(param, "moment1"), _zeros_like_param(param, "moment2"),
                prod, _step_counter(param))


class RAdam(Optimizer):
    """Rectified Adam (Liu et al.): Adam's step scaled by the variance
    rectification term once the SMA length exceeds 5, plain bias-corrected
    momentum before."""

    _op = "radam_update"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1.0e-8,
                 parameters=None, weight_decay=None, grad_clip=None, name=None):
        if not 0 <= beta1 < 1 or not 0 <= beta2 < 1:
            raise ValueError(f"RAdam: beta1 and beta2 must be in [0, 1), got {beta1}, {beta2}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _attrs(self):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}

    def _new_state(self, param):
        return (_zeros_like_param(param, "moment1"), _zeros_like_param(param, "moment2"),
                _step_counter(param))


class Rprop(Optimizer):
    """Resilient backpropagation (full-batch training): per-element step sizes
    that start at `learning_rate`, grow by `etas[1]` while the gradient keeps
    its sign and shrink by `etas[0]` when it flips, within
    `learning_rate_range`. The learning rate only seeds the step sizes, so a
    scheduler or `set_lr` after the first step changes nothing (as in Paddle)."""

    _op = "rprop_update"

    def __init__(self, learning_rate=0.001, learning_rate_range=(1e-5, 50), parameters=None,
                 etas=(0.5, 1.2), grad_clip=None, multi_precision=False, name=None):
        lo, hi = (float(v) for v in learning_rate_range)
        rate = getattr(learning_rate, "last_lr", learning_rate)
        if not 0.0 < lo <= rate <= hi:
            raise ValueError("Rprop: need 0 < learning_rate_range[0] <= learning_rate <= "
                             f"learning_rate_range[1], got {rate} and {learning_rate_range}")
        eta_minus, eta_plus = (float(v) for v in etas)
        if not 0.0 < eta_minus < 1.0 < eta_plus:
            raise ValueError(f"Rprop: need 0 < etas[0] < 1 < etas[1], got {etas}")
        super().__init__(learning_rate, parameters, None, grad_clip, name)
        self._range, self._etas = (lo, hi), (eta_minus, eta_plus)
        self._initial_rate = float(rate)  # the step sizes start here (Paddle's accumulator)
        self._multi_precision = bool(multi_precision)

    def _attrs(self):
        return {"eta_minus": self._etas[0], "eta_plus": self._etas[1],
                "step_min": self._range[0], "step_max": self._range[1]}

    def _new_state(self, param):
        size = to_tensor(np.full(param.shape, self._initial_rate, param.dtype))
        size.name = f"{param.name or 'param'}_learning_rates"
        return _zeros_like_param(param, "prevs"), size


class ASGD(Optimizer):
    """Paddle's ASGD, the stochastic average gradient (Schmidt et al.): the
    last `batch_num` gradients are kept (state of `batch_num` times the
    parameter's size) and the parameter moves by the learning rate times
    their mean. Weight decay is added to each gradient first, as in Paddle."""

    _op = "asgd_update"

    def __init__(self, learning_rate=0.001, batch_num=1, parameters=None, weight_decay=None,
                 grad_clip=None, multi_precision=False, name=None):
        if batch_num is None or isinstance(batch_num, bool) or int(batch_num) != batch_num \
                or batch_num <= 0:
            raise ValueError(f"ASGD: batch_num must be a positive int, got {batch_num!r}")
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._batch_num = int(batch_num)
        self._multi_precision = bool(multi_precision)

    def _attrs(self):
        return {"batch_num": self._batch_num}

    def _new_state(self, param):
        ys = to_tensor(np.zeros((self._batch_num,) + tuple(param.shape), param.dtype))
        ys.name = f"{param.name or 'param'}_y"
        return _zeros_like_param(param, "d"), ys, _step_counter(param)
