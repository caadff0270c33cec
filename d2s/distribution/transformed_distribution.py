"""TransformedDistribution(base, transforms): the law of
t_n(...t_1(X)) for X ~ base, by the change of variables."""
from __future__ import annotations

from ..core import ops as _ops
from ._util import sum_last
from .distribution import Distribution
from .transform import Transform


class TransformedDistribution(Distribution):

    def __init__(self, base, transforms, name=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        transforms = list(transforms)
        for t in transforms:
            if not isinstance(t, Transform):
                raise TypeError(f"TransformedDistribution: {t!r} is not a Transform")
        self.base, self.transforms = base, transforms
        self.name = name or "TransformedDistribution"
        super().__init__(base.batch_shape, base.event_shape)

    def sample(self, shape=()):
        x = self.base.sample(shape)
        for t in self.transforms:
            x = t.forward(x)
        return _ops.detach(x)

    def rsample(self, shape=()):
        x = self.base.rsample(shape)
        for t in self.transforms:
            x = t.forward(x)
        return x

    def log_prob(self, value):
        """base.log_prob(x) - sum of log|dy/dx| along the chain (summed over the event dims)."""
        n_event = len(self.event_shape)
        y = value
        lp = 0.0
        for t in reversed(self.transforms):
            x = t.inverse(y)
            lp = lp - sum_last(t.forward_log_det_jacobian(x), n_event)
            y = x
        return lp + self.base.log_prob(y)
