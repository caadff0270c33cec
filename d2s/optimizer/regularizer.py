"""`d2s.regularizer` (also `d2s.optimizer.regularizer`): weight decay added to a
parameter's gradient before its update (Paddle's coupled decay). Given to an
optimizer as `weight_decay=`, or to one parameter through
`ParamAttr(regularizer=...)` (which then wins).

Written with d2s ops, so the decay runs eagerly and as ops of a converted
training step alike (the same kernels in the same order: bitwise equal)."""
from __future__ import annotations

from ..core.ops import cast, sign

__all__ = ["L1Decay", "L2Decay", "WeightDecayRegularizer"]


class WeightDecayRegularizer:
    def __init__(self, coeff=0.0):
        if isinstance(coeff, bool) or not isinstance(coeff, (int, float)):
            raise TypeError(f"{type(self).__name__}: coeff must be a number, got "
                            f"{type(coeff).__name__}")
        self.coeff = float(coeff)
        self._coeff = coeff

    def __call__(self, param, grad):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(coeff={self.coeff})"


class L2Decay(WeightDecayRegularizer):
    """`grad + coeff * param`."""

    def __call__(self, param, grad):
        return grad + cast(param, grad.dtype) * self.coeff


class L1Decay(WeightDecayRegularizer):
    """`grad + coeff * sign(param)`."""

    def __call__(self, param, grad):
        return grad + cast(sign(param), grad.dtype) * self.coeff
