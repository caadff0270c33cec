"""`PyLayer` (Paddle's `paddle.autograd.PyLayer`): a function with a
hand-written gradient. `forward(ctx, *args)` runs without recording (its
ops are not differentiated); its outputs get one tape node whose vjp calls
`backward(ctx, *output_grads)`, so the eager reverse walk (`backward()`,
`d2s.grad`) uses the user's gradient. The node's "op" is a small object
with what the tape reads of an op (name, output count, vjp); it is not a
registered op, since it exists only on the eager tape.

Inside a converted function whose inputs need gradients a program would
differentiate `forward`'s own ops instead of `backward`: that is refused
with a clear error rather than computing a different gradient. Without
gradients (inference, `stop_gradient` inputs) `forward` is traced as is.
"""
from __future__ import annotations

import numpy as np

from . import autograd, state
from .dispatch import Symbolic
from .tensor import Tensor

__all__ = ["PyLayer", "PyLayerContext"]


class PyLayerContext:
    """What `forward` hands to `backward`: saved tensors and flags."""

    def __init__(self):
        self.container = ()
        self.materialize_grads = True
        self.non_differentiable = ()
        self.not_inplace = ()

    def save_for_backward(self, *tensors):
        self.container = tensors

    def saved_tensor(self):
        return self.container

    def mark_not_inplace(self, *args):
        self.not_inplace = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class _PyLayerOp:
    """The tape's view of one `apply`: a name, the output count and the vjp."""
    __slots__ = ("name", "num_outputs", "vjp", "layer", "ctx", "positions", "n_inputs")

    def __init__(self, layer, ctx, n_outputs, n_inputs):
        self.name = f"py_layer[{layer.__name__}]"
        self.num_outputs = n_outputs
        self.layer, self.ctx, self.n_inputs = layer, ctx, n_inputs
        self.vjp = self._vjp

    def _vjp(self, cts, outs, *inputs):
        if self.num_outputs == 1:
            cts, outs = (cts,), (outs,)
        grads = []
        for g, o in zip(cts, outs):
            if g is None and self.ctx.materialize_grads:
                g = Tensor._from_array(np.zeros(o.shape, o.dtype))
            grads.append(g)
        result = self.layer.backward(self.ctx, *grads)
        result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(result) != self.n_inputs:
            raise ValueError(
                f"{self.layer.__name__}.backward returned {len(result)} gradient(s) for "
                f"{self.n_inputs} Tensor input(s) of forward; return one per Tensor input "
                "(None for an input that needs none)")
        out = []
        for g, x in zip(result, inputs):
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"{self.layer.__name__}.backward must return Tensors or None, "
                                f"got {type(g).__name__}")
            if g is not None and tuple(g.shape) != tuple(x.shape):
                raise ValueError(f"{self.layer.__name__}.backward: a gradient of shape "
                                 f"{list(g.shape)} for an input of shape {list(x.shape)}")
            out.append(g)
        return tuple(out)


def _tensors(values):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _tensors(v)
    elif isinstance(values, (Tensor, Symbolic)):
        yield values


class PyLayer:
    """Subclass with static `forward(ctx, *args, **kwargs)` and
    `backward(ctx, *grads)`; call `YourLayer.apply(*args, **kwargs)`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("PyLayer subclasses define a static forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *args):
        raise NotImplementedError("PyLayer subclasses define a static backward(ctx, ...)")

    @classmethod
    def apply(cls, *args, **kwargs):
        inputs = [x for x in _tensors(list(args) + list(kwargs.values()))]
        symbolic = [x for x in inputs if isinstance(x, Symbolic)]
        if symbolic or state.current_builder() is not None:
            if state._tls.grad_enabled and any(not x.stop_gradient for x in inputs):
                raise NotImplementedError(
                    f"{cls.__name__}.apply inside a converted function on inputs that need "
                    "gradients: the program would differentiate forward's ops, not your "
                    "backward. Call it outside the converted function, or on inputs with "
                    "stop_gradient=True (inference)")
            return cls.forward(PyLayerContext(), *args, **kwargs)
        ctx = PyLayerContext()
        with state.no_grad():
            result = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(result, (tuple, list))
        outs = [result] if single else list(result)
        wants = state._tls.grad_enabled and any(not x.stop_gradient for x in inputs)
        tensor_outs = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
        if not wants or not tensor_outs:
            return result
        skip = {id(t) for t in ctx.non_differentiable}
        fresh = []
        for i in tensor_outs:
            o = outs[i]
            # an input returned as is gets its own node: a new Tensor with its value
            t = Tensor._from_array(o._value) if o._node is not None or any(
                o is x for x in inputs) else o
            outs[i] = t
            fresh.append(t)
        op = _PyLayerOp(cls, ctx, len(fresh), len(inputs))
        differentiable = [t for t in fresh if id(t) not in skip]
        autograd.record(op, inputs, {}, fresh, [t._value for t in fresh])
        for t in differentiable:
            t.stop_gradient = False
        return outs[0] if single else type(result)(outs) if isinstance(result, tuple) else outs
