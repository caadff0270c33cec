"""`fleet.utils.recompute`: activation recomputation (Paddle's, PyTorch's
`checkpoint`): a block's activations are not kept for backward; backward
runs the block again to get them.

Eagerly the block runs with the tape off and one tape node stands for it:
its vjp reruns the block with the tape on (the random state of the first
run put back, so dropout draws the same masks) and differentiates that.
The parameters the block uses are inputs of the node, found from the block
itself: a Layer, a Layer's bound method, or a function whose closure holds
Layers (PaddleNLP's `create_custom_forward(layer)`); they get their
gradients even when no argument needs one (Paddle's reentrant recompute
drops them there; PyTorch's non-reentrant checkpoint does not). In
converted code a program keeps what its backward needs by construction:
the block is called as it is.
"""
from __future__ import annotations

from ....core import random as d2s_random
from ....core.dispatch import eager_now
from ....core.grad_api import grad
from ....core.python_vjp import record_python_vjp
from ....core.state import enable_grad, grad_enabled, no_grad
from ....core.tensor import Tensor
from ....nn.layer import Layer

__all__ = ["recompute"]


def _layers_of(function):
    found = []
    if isinstance(function, Layer):
        found.append(function)
    owner = getattr(function, "__self__", None)
    if isinstance(owner, Layer):
        found.append(owner)
    for cell in getattr(function, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, Layer):
            found.append(value)
    return found


def _trainable_parameters(function):
    seen, params = set(), []
    for layer in _layers_of(function):
        for p in layer.parameters():
            if p is not None and not p.stop_gradient and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    return params


class _RunAgain:
    """The gradient of one recomputed call: run the block again with the tape
    on and differentiate that."""
    __slots__ = ("function", "kwargs", "args", "rng")

    def __init__(self, function, kwargs, args, rng):
        self.function, self.kwargs, self.args, self.rng = function, kwargs, args, rng

    def __call__(self, cts, outs, *inputs):
        args = [a.detach() for a in self.args]
        for a, original in zip(args, self.args):
            a.stop_gradient = original.stop_gradient
        params = list(inputs[len(args):])
        now = d2s_random.snapshot()
        if self.rng is not None:
            d2s_random.restore(self.rng)
        try:
            with enable_grad():  # (a vjp runs with the tape off)
                again = self.function(*args, **self.kwargs)
        finally:
            d2s_random.restore(now)
        again = list(again) if isinstance(again, (tuple, list)) else [again]
        pairs = [(o, g) for o, g in zip(again, cts)
                 if isinstance(o, Tensor) and o._node is not None and g is not None]
        wrt = [a for a in args if not a.stop_gradient] + params
        found = iter(grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True)
                     if pairs and wrt else [None] * len(wrt))
        return [next(found) if not a.stop_gradient else None for a in args] + \
            [next(found) for _ in params]


def recompute(function, *args, preserve_rng_state=True, use_reentrant=True, **kwargs):
    """`function(*args, **kwargs)`, its activations recomputed in backward
    (see the module doc). The positional arguments are the block's Tensor
    inputs; other values go by keyword. `use_reentrant` is accepted (both of
    Paddle's modes give the gradients described above)."""
    if not callable(function):
        raise TypeError(f"recompute: function must be callable, got {type(function).__name__}")
    if not eager_now():
        return function(*args, **kwargs)
    if not all(isinstance(a, Tensor) for a in args):
        raise TypeError("recompute: pass the block's arguments as Tensors (other values "
                        "through keyword arguments)")
    params = _trainable_parameters(function)
    inputs = list(args) + params
    if not (grad_enabled() and any(not t.stop_gradient for t in inputs)):
        return function(*args, **kwargs)
    rng = d2s_random.snapshot() if preserve_rng_state else None
    with no_grad():
        outs = function(*args, **kwargs)
    results = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    if not all(isinstance(r, Tensor) for r in results):
        raise TypeError("recompute: the block must return a Tensor or a tuple/list of Tensors")
    name = f"recompute({getattr(function, '__qualname__', type(function).__name__)})"
    return record_python_vjp(name, outs, inputs,
                             _RunAgain(function, kwargs, list(args), rng))
