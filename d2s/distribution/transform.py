"""Transforms for TransformedDistribution (Paddle's
paddle.distribution.Transform family): forward, inverse, and the log of the
absolute Jacobian determinant each way. The ones here act elementwise
(`_domain_rank` = `_codomain_rank` = 0: their log-det has x's shape); the
structured ones (chain, stack, reshape, stick-breaking, ...) are in
_transform_structured.py."""
import math as _math

from ..core import ops as _ops
from ._util import _is_number, as_float as _as_float

__all__ = ["Transform", "AbsTransform", "AffineTransform", "ChainTransform", "ExpTransform",
           "IndependentTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
           "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "TanhTransform"]


class Transform:
    """y = forward(x); forward_log_det_jacobian(x) = log |dy/dx|.
    `_domain_rank`/`_codomain_rank`: the event dims one application reads
    and writes (the log-det has x's shape less the domain's event dims)."""

    _domain_rank = 0
    _codomain_rank = 0

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        return self._forward(_as_float(x))

    def inverse(self, y):
        return self._inverse(_as_float(y))

    def forward_log_det_jacobian(self, x):
        return self._fldj(_as_float(x))

    def inverse_log_det_jacobian(self, y):
        return -self._fldj(self._inverse(_as_float(y)))

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class ExpTransform(Transform):
    """y = exp(x)."""

    def _forward(self, x):
        return _ops.exp(x)

    def _inverse(self, y):
        return _ops.log(y)

    def _fldj(self, x):
        return x


class AffineTransform(Transform):
    """y = loc + scale * x. Python numbers stay numbers (x's dtype decides)."""

    def __init__(self, loc, scale):
        self.loc = float(loc) if _is_number(loc) else _as_float(loc)
        self.scale = float(scale) if _is_number(scale) else _as_float(scale)

    def _forward(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def _fldj(self, x):
        if isinstance(self.scale, float):
            return _math.log(abs(self.scale)) + _ops.zeros_like(x)
        return _ops.log(_ops.abs(self.scale)) + _ops.zeros_like(x)


class SigmoidTransform(Transform):
    """y = sigmoid(x)."""

    def _forward(self, x):
        return _ops.sigmoid(x)

    def _inverse(self, y):
        return _ops.log(y) - _ops.log1p(-y)

    def _fldj(self, x):
        # log(sigmoid(x) (1 - sigmoid(x))) = -softplus(-x) - softplus(x)
        return -_ops.softplus(-x) - _ops.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x)."""

    def _forward(self, x):
        return _ops.tanh(x)

    def _inverse(self, y):
        return 0.5 * (_ops.log1p(y) - _ops.log1p(-y))

    def _fldj(self, x):
        # log(1 - tanh(x)**2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (_math.log(2.0) - x - _ops.softplus(-2.0 * x))


class PowerTransform(Transform):
    """y = x ** power (on x > 0)."""

    def __init__(self, power):
        self.power = float(power) if _is_number(power) else _as_float(power)

    def _forward(self, x):
        return _ops.pow(x, self.power)

    def _inverse(self, y):
        return _ops.pow(y, 1.0 / self.power)

    def _fldj(self, x):
        return _ops.log(_ops.abs(self.power * _ops.pow(x, self.power - 1.0)))


class AbsTransform(Transform):
    """y = |x|. Not injective: inverse(y) is the pair (-y, y) and its
    log-det the pair (0, 0) (Paddle's)."""

    def _forward(self, x):
        return _ops.abs(x)

    def _inverse(self, y):
        return -y, y

    def inverse_log_det_jacobian(self, y):
        y = _as_float(y)
        zero = _ops.zeros_like(y)
        return zero, zero

    def _fldj(self, x):
        raise NotImplementedError("AbsTransform: |x| is not injective; its forward log-det "
                                  "Jacobian is not defined")


# Paddle keeps every transform in paddle.distribution.transform: the structured
# ones (their module imports Transform from here, defined above) join them.
from ._transform_structured import (ChainTransform, IndependentTransform,  # noqa: E402,F401
                                   ReshapeTransform, SoftmaxTransform, StackTransform,
                                   StickBreakingTransform)
