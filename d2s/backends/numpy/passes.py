"""The numpy backend's pass pipeline: the target-neutral passes
(`d2s.static.passes`), then a mask after max pooling's gradient moved onto
the pooled grid (`pool_mask`: it needs the neutral passes' folded
constants), then in-place fusion and buffer reuse (`inplace`), last because
it needs the final use counts and chooses numpy `out=` buffers no other
target has."""
from __future__ import annotations

from ...static import passes as _neutral
from . import inplace, pool_mask

PIPELINE = [*_neutral.PIPELINE, pool_mask, inplace]


def optimize(view):
    """`view` after the target-neutral passes and numpy's own."""
    return inplace.run(pool_mask.run(_neutral.optimize(view)))


__all__ = ["PIPELINE", "optimize"]
