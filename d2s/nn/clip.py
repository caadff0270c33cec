"""Gradient clipping classes given to an optimizer as `grad_clip=` (Paddle's).

Each maps the list of (parameter, gradient) pairs an optimizer is about to
apply to new pairs, with d2s ops: eagerly in `step()`, and as ops of the
step's program inside a converted training step (the same kernels in the same
order, so the two agree bitwise). Parameters made with
`ParamAttr(need_clip=False)` are passed through unclipped. `.grad` itself is
left as backward made it.
"""
from __future__ import annotations

from ..core.ops import cast, clip, maximum, sqrt, sum as _sum
from ..core.param_attrs import param_attr_of

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue"]


def _clipped(param):
    attr = param_attr_of(param)
    return attr is None or attr.need_clip


class ClipGradByValue:
    """Each gradient element clipped to [min, max] (`min` defaults to -max)."""

    def __init__(self, max, min=None):
        self.max = float(max)
        self.min = -self.max if min is None else float(min)
        if self.min > self.max:
            raise ValueError(f"ClipGradByValue: min {self.min} exceeds max {self.max}")

    def __call__(self, params_grads):
        return [(p, clip(g, self.min, self.max) if _clipped(p) else g) for p, g in params_grads]


class ClipGradByNorm:
    """Each gradient scaled to L2 norm at most `clip_norm`:
    `g * clip_norm / max(norm(g), clip_norm)`."""

    def __init__(self, clip_norm):
        self.clip_norm = float(clip_norm)

    def __call__(self, params_grads):
        out = []
        for p, g in params_grads:
            if _clipped(p):
                norm = sqrt(_sum(g * g))
                g = g * (self.clip_norm / maximum(norm, self.clip_norm))
            out.append((p, g))
        return out


class ClipGradByGlobalNorm:
    """All gradients scaled together so that their joint L2 norm is at most
    `clip_norm`: `g * clip_norm / max(global_norm, clip_norm)`, the global norm
    summed in float32 or wider."""

    def __init__(self, clip_norm, group_name="default_group", auto_skip_clip=False):
        self.clip_norm = float(clip_norm)
        self.group_name = group_name

    def __call__(self, params_grads):
        chosen = [g for p, g in params_grads if _clipped(p)]
        if not chosen:
            return list(params_grads)
        squares = None
        for g in chosen:
            s = _sum(g * g)
            if s.dtype.itemsize < 4:
                s = cast(s, "float32")
            squares = s if squares is None else squares + s
        norm = sqrt(squares)
        scale = self.clip_norm / maximum(norm, self.clip_norm)
        return [(p, g * cast(scale, g.dtype) if _clipped(p) else g) for p, g in params_grads]
