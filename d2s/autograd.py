"""`d2s.grad` / `d2s.autograd.grad` (Paddle's `paddle.grad`): on eager
Tensors the tape walk of `core.grad_api`; on a program's values (converted
code) backward ops appended to the program (`static.gradients`), which are
themselves differentiable ops, so `create_graph` holds there by construction."""
from __future__ import annotations

from .core.dispatch import Symbolic
from .core.grad_api import grad as _eager_grad
from .core.py_layer import PyLayer, PyLayerContext

__all__ = ["grad", "PyLayer", "PyLayerContext"]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, no_grad_vars=None, name=None):
    """Gradients of `outputs` (weighted by `grad_outputs`, default ones) with
    respect to each of `inputs`, as a list; `.grad` of no tensor changes.
    See core.grad_api for the eager walk."""
    outs = _as_list(outputs)
    if any(isinstance(v, Symbolic) for v in outs + _as_list(inputs)):
        from .static.backward import gradients
        if no_grad_vars:
            raise NotImplementedError("grad: no_grad_vars in converted code; detach those "
                                      "values (`v = v.detach()`) instead")
        found = gradients(outs, _as_list(inputs), grad_outputs)
        for k, g in enumerate(found):
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"grad: input {k} is not used to compute the outputs; pass "
                    "allow_unused=True to get None for it. (In converted code a gradient "
                    "whose path runs through the gradient of a tensor `if`/`while` is not "
                    "differentiated again yet: compute that second derivative eagerly)")
        return list(found)
    return _eager_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                       allow_unused, no_grad_vars)
