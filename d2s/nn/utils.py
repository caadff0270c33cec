"""`d2s.nn.utils`: gradient clipping.

Written with d2s ops on the parameters' `.grad`, so the same code clips
eagerly and inside a training step traced by `to_static`, where the scaled
gradients become ops and writes of the step's program (core.effects).
"""
from __future__ import annotations

from ..core import effects
from ..core.ops import clip, full, norm, stack
from ..core.tensor import Tensor

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """Scale the gradients of `parameters` so that their total norm is at most
    `max_norm`; returns the total norm before clipping.

    PyTorch's `torch.nn.utils.clip_grad_norm_`: the total norm is the
    `norm_type` norm (2, 1 or inf) of the per-parameter gradient norms, and
    every gradient is multiplied by `min(max_norm / (total + 1e-6), 1)`.
    Parameters without a gradient are skipped; with none at all the result
    is 0. Gradients are rebound to new Tensors (never written in place).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    overlay = effects.overlay()
    if overlay is not None:  # inside a traced step: the gradients are its Variables
        overlay.activate("clip_grad_norm_()")
        overlay.track_all(parameters)
    owners = [p for p in parameters if p.grad is not None]
    if not owners:
        return full([], 0.0, "float32")
    total = norm(stack([norm(p.grad, norm_type) for p in owners]), norm_type)
    scale = clip(max_norm / (total + 1e-6), max=1.0)
    for p in owners:
        p.grad = p.grad * scale
    return total
