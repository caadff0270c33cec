"""Independent(base, reinterpreted_batch_rank): the last batch dims of a
distribution read as event dims (log_prob and entropy sum over them)."""
from __future__ import annotations

from ._util import sum_last
from ._distribution import Distribution


class Independent(Distribution):

    def __init__(self, base, reinterpreted_batch_rank, name=None):
        r = int(reinterpreted_batch_rank)
        if not 0 < r <= len(base.batch_shape):
            raise ValueError(
                f"Independent: reinterpreted_batch_rank must be in [1, {len(base.batch_shape)}]"
                f" (the base's batch rank), got {reinterpreted_batch_rank}")
        self.base = base
        self.reinterpreted_batch_rank = r
        self.name = name or "Independent"
        cut = len(base.batch_shape) - r
        super().__init__(base.batch_shape[:cut], base.batch_shape[cut:] + base.event_shape)

    @property
    def mean(self):
        return self.base.mean

    @property
    def variance(self):
        return self.base.variance

    def sample(self, shape=()):
        return self.base.sample(shape)

    def rsample(self, shape=()):
        return self.base.rsample(shape)

    def log_prob(self, value):
        return sum_last(self.base.log_prob(value), self.reinterpreted_batch_rank)

    def entropy(self):
        return sum_last(self.base.entropy(), self.reinterpreted_batch_rank)
