"""The numpy backend's pass pipeline: the target-neutral passes
(`d2s.static.passes`), then in-place fusion and buffer reuse (`inplace`),
last because it needs the final use counts and chooses numpy `out=`
buffers no other target has."""
from __future__ import annotations

from ...static import passes as _neutral
from . import inplace

PIPELINE = [*_neutral.PIPELINE, inplace]


def optimize(view):
    """`view` after the target-neutral passes and numpy's own."""
    return inplace.run(_neutral.optimize(view))


__all__ = ["PIPELINE", "optimize"]
