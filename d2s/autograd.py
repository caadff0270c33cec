"""`d2s.grad` / `d2s.autograd.grad` (Paddle's `paddle.grad`) and
`d2s.autograd.PyLayer` (a function with its own gradient rule). grad: on eager
Tensors the tape walk of `core.grad_api`; on a program's values (converted
code) backward ops appended to the program (`static.gradients`): with
`create_graph=True` ops that are differentiated again (a tensor `if`'s
gradient recomputes its branch, `static.control_ops.recompute`), without it
detached values, as eager mode gives."""
from __future__ import annotations

import contextlib

import numpy as np

from .core import autograd, state
from .core.dispatch import Symbolic, eager_now
from .core.dtypes import is_floating
from .core.grad_api import grad as _eager_grad
from .core.ops import detach
from .core.python_vjp import record_python_vjp
from .core.tensor import Tensor

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
        found = gradients(outs, _as_list(inputs), grad_outputs, create_graph=create_graph)
        if not create_graph:  # as eagerly: constants, no gradient flows back through them
            found = [None if g is None else detach(g) for g in found]
        for k, g in enumerate(found):
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"grad: input {k} is not used to compute the outputs; pass "
                    "allow_unused=True to get None for it")
        return list(found)
    return _eager_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                       allow_unused, no_grad_vars)


# ---- PyLayer -------------------------------------------------------------------------
class PyLayerContext:
    """What `forward` hands to `backward` (Paddle's `PyLayerContext`):
    `save_for_backward(*tensors)` / `saved_tensor()`, other attributes set
    on it, `mark_non_differentiable(*outputs)`, `set_materialize_grads`."""

    def __init__(self):
        self._saved = ()
        self._non_differentiable = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self._saved = tensors

    def saved_tensor(self):
        return self._saved

    saved_tensors = property(saved_tensor)  # PyTorch's name

    def mark_non_differentiable(self, *tensors):
        """Outputs of `forward` that get no gradient (`stop_gradient=True`;
        `backward` receives a zero for them)."""
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value):
        """False: `backward` gets None, not zeros, for outputs nothing used."""
        self.materialize_grads = bool(value)

    @contextlib.contextmanager
    def _values_of(self, program):
        """While `backward` is built into `program` (a copy of the traced one,
        `static.BackwardProgram`): the program's own Variables for the saved
        ones and for Variables held in attributes (directly, or in a tuple or
        list)."""
        from .static.ir import Variable

        def mapped(v):
            if isinstance(v, Variable) and v.block.program is not program:
                return program.counterpart(v)
            if isinstance(v, (tuple, list)):
                return type(v)(mapped(x) for x in v)
            return v
        before = dict(self.__dict__)
        try:
            for k, v in before.items():
                self.__dict__[k] = mapped(v)
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(before)


class PyLayer:
    """A function with a gradient rule of its own (Paddle's
    `paddle.autograd.PyLayer`, PyTorch's `autograd.Function`)::

        class Cube(PyLayer):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, dy):
                (x,) = ctx.saved_tensor()
                return dy * 3 * x ** 2

        y = Cube.apply(x)

    `backward` gets one cotangent per output of `forward` and returns one
    gradient per Tensor argument of `forward`, in order (None: no gradient).
    `forward` runs without recording a tape; `backward` runs as any vjp
    rule, so with `d2s.grad(..., create_graph=True)` it is differentiated
    in turn. In converted code (`to_static`) `forward` is converted and
    traced into the program and `backward` into its backward: write both
    with d2s ops (no `.numpy()`), and keep the values `backward` needs with
    `save_for_backward` or as attributes of `ctx`. A program holding a
    PyLayer cannot be saved to a file (its rule is Python code)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("PyLayer subclasses define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("PyLayer subclasses define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args, **kwargs):
        if any(isinstance(a, Symbolic) for a in list(args) + list(kwargs.values())) \
                or not eager_now():
            return _apply_static(cls, args, kwargs)
        return _apply_eager(cls, args, kwargs)


def _results(outs):
    single = not isinstance(outs, (tuple, list))
    return single, [outs] if single else list(outs)


def _apply_eager(cls, args, kwargs):
    ctx = PyLayerContext()
    with state.no_grad():
        outs = cls.forward(ctx, *args, **kwargs)
    inputs = [a for a in args if isinstance(a, Tensor)]
    if not (state.grad_enabled() and any(not x.stop_gradient for x in inputs)):
        return outs
    return record_python_vjp(f"PyLayer {cls.__qualname__}", outs, inputs,
                             _BackwardCall(cls, ctx),
                             constant=lambda r: id(r) in ctx._non_differentiable)


class _BackwardCall:
    """The gradient of one eager `apply`: the user's `backward`, checked."""
    __slots__ = ("cls", "ctx")

    def __init__(self, cls, ctx):
        self.cls, self.ctx = cls, ctx

    def __call__(self, cts, outs, *inputs):
        if self.ctx.materialize_grads:
            cts = [g if g is not None else Tensor._from_array(np.zeros(o.shape, o.dtype))
                   for g, o in zip(cts, outs)]
        grads = self.cls.backward(self.ctx, *cts)
        grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
        name = self.cls.__qualname__
        if len(grads) != len(inputs):
            raise ValueError(f"{name}.backward returned {len(grads)} gradients for "
                             f"{len(inputs)} tensor inputs of forward: return one per tensor "
                             "argument, in order (None where there is none)")
        out = []
        for k, (g, x) in enumerate(zip(grads, inputs)):
            if g is not None and not isinstance(g, Tensor):
                g = Tensor._from_array(np.asarray(g, x.dtype))
            if g is not None and tuple(g.shape) != tuple(x.shape):
                raise ValueError(f"{name}.backward: the gradient of tensor input {k} has shape "
                                 f"{list(g.shape)}, the input {list(x.shape)}")
            out.append(g)
        return out


def _apply_static(cls, args, kwargs):
    from .convert.runtime.call import convert_call
    from .static.control_ops.py_layer import append_py_layer
    ctx = PyLayerContext()
    # both converted as any function converted code calls (a tensor `if` works)
    outs = convert_call(cls.forward)(ctx, *args, **kwargs)
    single, results = _results(outs)
    positions = [i for i, r in enumerate(results) if isinstance(r, (Symbolic, Tensor))]
    if not positions:
        return outs
    builder = state.current_builder()
    if builder is None:
        builder = next(a for a in list(args) + list(kwargs.values())
                       if isinstance(a, Symbolic))._owning_builder()
    with state.building(builder):
        inputs = [builder.to_var(a) for a in args if isinstance(a, (Symbolic, Tensor))]
        values = [builder.to_var(results[i]) for i in positions]
        block = builder.program.current_block()
        made = append_py_layer(block, cls, ctx, values, inputs, convert_call(cls.backward))
    for i, v, r in zip(positions, made, [results[i] for i in positions]):
        if id(r) in ctx._non_differentiable or not is_floating(v.dtype):
            v.stop_gradient = True
        results[i] = v
    return results[0] if single else type(outs)(results)


from .autograd_jacobian import Hessian, Jacobian, backward, hessian, jacobian  # noqa: E402

__all__ += ["jacobian", "hessian", "backward", "Jacobian", "Hessian"]
