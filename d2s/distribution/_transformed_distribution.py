"""TransformedDistribution(base, transforms): the law of
t_n(...t_1(X)) for X ~ base, by the change of variables."""
from __future__ import annotations

from ..core import ops as _ops
from ._util import sum_last
from ._distribution import Distribution
from .transform import Transform


class TransformedDistribution(Distribution):
    """Its event rank is the base's, raised where a transform reads or
    writes more event dims (a stick-breaking or reshape transform)."""

    def __init__(self, base, transforms, name=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        transforms = list(transforms)
        for t in transforms:
            if not isinstance(t, Transform):
                raise TypeError(f"TransformedDistribution: {t!r} is not a Transform")
        self.base, self.transforms = base, transforms
        self.name = name or "TransformedDistribution"
        shape = tuple(base.batch_shape) + tuple(base.event_shape)
        rank = len(base.event_shape)
        for t in transforms:
            shape = tuple(t.forward_shape(shape))
            rank = max(rank, t._domain_rank) - t._domain_rank + t._codomain_rank
        cut = len(shape) - rank
        super().__init__(shape[:cut], shape[cut:])

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
        """base.log_prob(x) - the log|dy/dx| of each transform along the chain,
        each summed over the event dims it does not reduce itself."""
        y = value
        rank = len(self.event_shape)
        lp = 0.0
        for t in reversed(self.transforms):
            x = t.inverse(y)
            rank += t._domain_rank - t._codomain_rank
            lp = lp - sum_last(t.forward_log_det_jacobian(x), rank - t._domain_rank)
            y = x
        return lp + sum_last(self.base.log_prob(y), rank - len(self.base.event_shape))
