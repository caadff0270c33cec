"""The single entry point of every operator: `bind`.

Modes differ only in what binding does. With no program being built and no
static Variable among the inputs, `bind` runs the registry kernel now and,
when a gradient is wanted, records a tape node. Otherwise it hands the op to
the active static builder, which appends an `Operator` after running the
op's shape rule. Layers, functional ops and optimizers call `bind` only, so
they work unchanged in both modes.

Eager mode pays this dispatch on every op, so the eager side is written for
speed: `bind` tests "eager, all Tensors" first, and `unary_function` /
`binary_function` make the public functions of elementwise ops (the bulk of
a model's ops), which skip `bind`'s generality when they can. They run the
same registry kernel and record the same tape node as `run_eager`; they only
decide sooner.
"""
from __future__ import annotations

import numpy as np

from . import amp_state, autograd, state
from .dtypes import weak_scalar_dtype
from .registry import OPS
from .tensor import Tensor, new_tensor

_tls = state._tls          # per-thread: grad mode, the builder stack
all_eager = state.all_eager  # [True]: no thread builds and static mode is off
amp_blocks = amp_state.active_blocks  # [n]: open `auto_cast` blocks, all threads
_ndarray = np.ndarray
_NO_ATTRS = {}
_PY_SCALARS = (float, int, bool)


class Symbolic:
    """Base of values that exist only inside a program (static Variables).

    Defined here so the core can recognise them without importing
    `d2s.static` (imports flow one way: core <- static).
    """
    __slots__ = ()

    def _owning_builder(self):  # pragma: no cover - overridden
        raise NotImplementedError


def bind(name, *inputs, **attrs):
    """Apply operator `name` to `inputs` (Tensors or Variables)."""
    op = OPS[name]
    if all_eager[0]:
        for x in inputs:
            if type(x) is not Tensor:
                break
        else:
            return run_eager(op, inputs, attrs)
    if amp_blocks[0]:  # inside an `auto_cast` block (it turns the fast path off)
        inputs = amp_state.cast_inputs(op, inputs)
    builders = _tls.builders  # state.current_builder(), its usual case inline
    builder = builders[-1] if builders else state.current_builder()
    if builder is None:
        for x in inputs:
            if isinstance(x, Symbolic):
                builder = x._owning_builder()
                break
    if builder is not None:
        return builder.append_op(op, inputs, attrs)
    return run_eager(op, inputs, attrs)


def eager_now():
    """True when an op on eager Tensors runs now (no program is being built)."""
    return all_eager[0] or not _tls.builders and not state._global["static"]


def run_eager(op, inputs, attrs):
    """Run `op`'s kernel on eager Tensors now; record a tape node if a gradient
    is wanted."""
    try:
        if len(inputs) == 1:
            arrays = (inputs[0]._value,)
        elif len(inputs) == 2:
            arrays = (inputs[0]._value, inputs[1]._value)
        else:
            arrays = [x._value for x in inputs]
    except AttributeError:
        bad = next(x for x in inputs if not isinstance(x, Tensor))
        raise TypeError(f"{op.name}: expected Tensor inputs, got {type(bad).__name__}") from None
    result = op.kernel(*arrays, **attrs) if attrs else op.kernel(*arrays)
    n_out = op.num_outputs
    if n_out == 1:
        value = result if type(result) is _ndarray else np.asarray(result)
        out = new_tensor(value)
        if op.vjp is not None:
            for x in inputs:
                if not x.stop_gradient:
                    if _tls.grad_enabled:
                        _record_one(op, inputs, attrs, out)
                    break
        return out
    if n_out == 0:  # side effects only (print, assert)
        return None
    values = [r if type(r) is _ndarray else np.asarray(r) for r in result]
    needs_grad = (op.vjp is not None and _tls.grad_enabled
                  and any(not x.stop_gradient for x in inputs))
    outs = [new_tensor(v, not needs_grad) for v in values]
    if needs_grad:
        autograd.record(op, inputs, attrs, outs, values)
    return tuple(outs)


def _record_one(op, inputs, attrs, out):
    out.stop_gradient = False
    autograd.record(op, inputs, attrs, (out,), (out._value,))


def unary_function(op, general, doc):
    """The public function of the elementwise op `op`: run now when `x` is an
    eager Tensor and no program is being built, else `general(x)` (lift, then
    `bind`). One frame on the hot path: the check, the kernel, the Tensor."""
    def function(x):
        if type(x) is not Tensor or not all_eager[0]:
            return general(x)
        value = op.kernel(x._value)
        if type(value) is not _ndarray:
            value = np.asarray(value)
        out = new_tensor(value)
        if not x.stop_gradient and op.vjp is not None and _tls.grad_enabled:
            _record_one(op, (x,), _NO_ATTRS, out)
        return out
    return _named(function, op, general, doc)


def binary_function(op, general, doc):
    """The public function of the binary op `op` (no attrs): run now when both
    operands are eager Tensors, or one is and the other a Python scalar, and
    no program is being built; else `general(x, y)` (lift_pair, then `bind`).

    A Python scalar is weak (NumPy 2): it becomes a 0-d array of the dtype
    `weak_scalar_dtype` gives next to the tensor, exactly what `lift` makes of
    it on the general path. It is wrapped in a Tensor only when the tape needs
    it as an input."""
    def function(x, y):
        if not all_eager[0]:
            return general(x, y)
        tx, ty = type(x), type(y)
        if tx is Tensor:
            a = x._value
            if ty is Tensor:
                b = y._value
            elif ty in _PY_SCALARS:
                b = weak_scalar_array(y, a.dtype)
            else:
                return general(x, y)
        elif ty is Tensor and tx in _PY_SCALARS:
            b = y._value
            a = weak_scalar_array(x, b.dtype)
        else:
            return general(x, y)
        value = op.kernel(a, b)
        if type(value) is not _ndarray:
            value = np.asarray(value)
        out = new_tensor(value)
        if (tx is Tensor and not x.stop_gradient or ty is Tensor and not y.stop_gradient) and (
                op.vjp is not None and _tls.grad_enabled):
            inputs = (x if tx is Tensor else new_tensor(a), y if ty is Tensor else new_tensor(b))
            _record_one(op, inputs, _NO_ATTRS, out)
        return out
    return _named(function, op, general, doc)


def _named(function, op, general, doc):
    """Name the made function after its op, in the module that defines it."""
    function.__name__ = function.__qualname__ = op.name
    function.__module__ = general.__module__
    function.__doc__ = doc
    return function


# (dtype of the tensor, type of the scalar) -> dtype of the scalar: NumPy 2's
# rule ignores the scalar's value, so a few dozen entries cover every program.
_weak_dtypes = {}


def weak_scalar_array(value, partner_dtype):
    """The Python scalar `value` as a 0-d array, weak next to `partner_dtype`."""
    key = (partner_dtype, type(value))
    dtype = _weak_dtypes.get(key)
    if dtype is None:
        dtype = _weak_dtypes[key] = weak_scalar_dtype(partner_dtype, value)
    return np.asarray(value, dtype)
