"""In-place writes on eager Tensors: `x[i] = v`, `set_value`, `add_`, ...

d2s never writes into a Tensor's array (others may hold it): an in-place
write computes the new value with the functional op (`set_item`, `add`, ...)
and rebinds the Tensor to it, as PyTorch's in-place ops on a non-leaf:

* the op's tape node takes a *snapshot* of the Tensor as it was (its value
  and its history) as input, and the Tensor takes the node as its history,
  so gradients reach the old history and the written value;
* the Tensor's `_version` goes up: a tape node that recorded it as an input
  at an older version differentiates through the snapshot of that version
  when its rule reads no values of that input (`y = x[0]`, `x + c`); one
  whose rule reads them raises at backward PyTorch's "modified by an inplace
  operation" (autograd.VALUE_FREE);
* a leaf that requires grad refuses, unless gradients are off (`no_grad`).

While `to_static` traces a step, a write to an eager Tensor (a buffer,
`self.cache[i] = v`) goes through the trace's state overlay: the program's
run writes the new value back (jit.outliving), as for batch-norm statistics.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from . import autograd, effects, state
from .tensor import Tensor, is_resident, new_tensor, rebind_value


def _ops():
    from . import ops
    return ops


def _holds_symbolic(value):
    from .dispatch import Symbolic
    if isinstance(value, Symbolic):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_symbolic(v) for v in value)
    if isinstance(value, slice):
        return any(_holds_symbolic(v) for v in (value.start, value.stop, value.step))
    return False


def apply(t, compute, what, keep_shape=True):
    """Rebind `t` to `compute(t_before)` (a d2s value) as an in-place write
    called `what` (for messages). Returns `t`."""
    if state._tls.builders:
        ov = effects.overlay()
        if ov is None:
            raise RuntimeError(
                f"{what}: an in-place write to an eager Tensor while a static program is "
                "built by hand (program_guard) cannot be part of it; write the functional "
                "form (`x = d2s.set_item(x, index, value)`, `x = x.add(y)`) instead")
        new = compute(ov.read(t))
        new = _conform(new, t, what, keep_shape)
        ov.assign(t, new)
        if t._base is not None:
            _write_base(t)
        return t
    grad_on = state._tls.grad_enabled
    if t._base is not None:
        _check_base(t, what, grad_on)
    if grad_on and t._node is None and not t.stop_gradient:
        raise RuntimeError(
            f"{what}: a leaf Variable that requires grad is being used in an in-place "
            "operation (it would lose the values its gradient is taken at); write it under "
            "`with d2s.no_grad():`, or on a copy (`y = x.clone()`)")
    autograd.inplace_seen[0] = True
    if not grad_on:
        new = compute(t)
        new = _conform(new, t, what, keep_shape)
        t._value = new._value
        t._version += 1
        if t._base is not None:
            _write_base(t)
        return t
    before = new_tensor(t._value, t.stop_gradient)
    before._node, before._out_index = t._node, t._out_index
    if t._past is None:
        t._past = {}
    # nodes that recorded t at this version differentiate through `before`;
    # the new node holds it (weakly here: no history is kept alive by t)
    t._past[t._version] = weakref.ref(before)
    new = _conform(compute(before), t, what, keep_shape)
    if _holds_symbolic(new):
        raise TypeError(f"{what}: an eager Tensor cannot hold a value of a program being built")
    node = new._node
    if node is not None and all(x is not before for x in node.inputs):
        # The new value was computed from t itself before the write (`assign(acc +
        # x, output=acc)`), not from `before`: only t's record of the old version
        # leads there, so it holds the snapshot (a weak one would die now, and
        # the gradient through the old value with it).
        t._past[t._version] = (lambda snapshot=before: snapshot)
    t._value = new._value
    t._node, t._out_index = new._node, new._out_index
    t.stop_gradient = new.stop_gradient  # (no node: nothing reaches any history)
    t._version += 1
    if t._base is not None:
        _write_base(t)
    return t


def check_writable(t, what):
    """Before a converted function's run writes its input `t` in place
    (jit.outliving): eager's refusal of a leaf that requires grad, or of a
    view of one, while gradients are on."""
    if not state._tls.grad_enabled:
        return
    v = t
    while True:
        if v._node is None and not v.stop_gradient:
            kind = "leaf" if v is t else "view of a leaf"
            raise RuntimeError(
                f"{what}: a {kind} Variable that requires grad is being used in an in-place "
                "operation (it would lose the values its gradient is taken at); write it "
                "under `with d2s.no_grad():`, or on a copy (`y = x.clone()`), inside the "
                "function or before the call")
        if v._base is None:
            return
        v = v._base[0]


def write_back(t, new, what):
    """A converted function wrote its input `t` in place: `t` takes the run's
    value `new` (an eager Tensor; on the tape when the run was, see
    jit.taped), keeping its identity, as the eager write would leave it. A
    device array stays on the device. With `new` on the tape, `t` takes its
    history as `apply` does (the run's node reads `t` as it was through its
    snapshot), so a backward through `t` reaches what it was computed from."""
    if new._node is None:
        rebind_value(t, new._raw)
        t._version += 1
        autograd.inplace_seen[0] = True
        if t._base is not None:
            with state.no_grad():
                _write_base(t)
        return t
    return apply(t, lambda before: new, what)


def _check_base(t, what, grad_on):
    """Before writing the view `t` (core.views): no tensor it was taken from,
    up the chain, is a leaf that requires grad (PyTorch refuses a view of one
    as well); then each view on the way that is stale (its base was written
    since by another route: the base itself, a sibling view) takes the
    base's values again, so the write starts from them and writing it back
    undoes nothing (`a = y[0]; b = y[0]; a[1] = 7; b[0] = 1` keeps the 7)."""
    chain, v = [], t
    while v._base is not None:
        base = v._base[0]
        if grad_on and base._node is None and not base.stop_gradient:
            raise RuntimeError(
                f"{what}: a view of a leaf Variable that requires grad is being used in an "
                "in-place operation (the write reaches the leaf); write it under "
                "`with d2s.no_grad():`, or on a copy (`y = x.clone()`)")
        chain.append(v)
        v = base
    for v in reversed(chain):  # from the root down: each base is fresh first
        base, index, version = v._base
        if base._version != version:
            v._base = None  # (taking the values again is no write of the base)
            try:
                apply(v, lambda _, b=base, i=index: _ops().getitem(b, i), what)
            finally:
                v._base = (base, index, base._version)


def _write_base(t):
    """After the view `t` was written: `base[index] = t` (an in-place write
    of the base, which writes its own base in turn), then `t` is a view of
    the base as it is now."""
    base, index, _ = t._base
    setitem(base, index, t)
    t._base = (base, index, base._version)


def _conform(new, t, what, keep_shape):
    """In-place results keep the Tensor's dtype (and shape, unless the op is a
    reshape)."""
    ops = _ops()
    if np.dtype(new.dtype) != np.dtype(t.dtype):
        new = ops.cast(new, np.dtype(t.dtype).name)
    if keep_shape and tuple(new.shape) != tuple(t.shape):
        raise ValueError(f"{what}: the result has shape {list(new.shape)}, but an in-place "
                         f"write must keep the tensor's shape {list(t.shape)} (broadcasting "
                         "may not grow it); use the out-of-place op")
    return new


def setitem(t, index, value):
    """`t[index] = value` on an eager Tensor."""
    ops = _ops()
    return apply(t, lambda x: ops.set_item(x, index, value), "x[index] = value")


def set_value(t, value):
    """Paddle's `set_value`: new values of the same shape, no gradient path."""
    if state._tls.builders and effects.overlay() is not None:
        keep = not t.stop_gradient  # a parameter: it stays a leaf holding `value`
        return apply(t, lambda x: _set_value_traced(x, value, keep), "set_value")
    array = value._value if isinstance(value, Tensor) else np.asarray(value)
    if tuple(array.shape) != tuple(t.shape):
        raise ValueError(f"set_value: a value of shape {list(array.shape)} for a tensor of "
                         f"shape {list(t.shape)}")
    if t._base is not None:
        _check_base(t, "set_value", state._tls.grad_enabled)
    t._value = np.array(array, dtype=t.dtype, copy=True)
    t._version += 1
    autograd.inplace_seen[0] = True
    if t._base is not None:
        _write_base(t)
    return t


def _set_value_traced(x, value, keep_grad=False):
    """The value a traced `set_value` leaves: `value`, without its gradient
    path. Of a tensor that requires grad (a parameter) later reads must still
    differentiate with respect to it, as eagerly the parameter stays the leaf
    and only holds `value`: `x - detach(x) + value` (exactly `value`, with
    the identity gradient to `x`), built with gradients on even under
    `no_grad` (the usual place of such a write)."""
    ops = _ops()
    v = ops.detach(ops.broadcast_to(ops.lift(value, like=x), tuple(x.shape)))
    if not keep_grad:
        return v
    with state.enable_grad():
        return ops.add(ops.subtract(x, ops.detach(x)), v)


# Set by converted code's `_jst.inplace_call` around an in-place call, which
# rebinds the receiver's name to the result (convert.transformers.inplace_methods).
_rebinding = threading.local()


class rebinding:
    """While converted code calls an in-place method whose result it rebinds.

    `held`: the receiver is an attribute converted code assigns the result
    to (`self.total.add_(v)` -> `self.total = ...`): while a program is
    built, an eager Tensor there (a buffer) gets the functional result too,
    so that the attribute write is what the program records and replays
    (jit.outliving), also inside a tensor `if`/`while`."""

    def __init__(self, held=False):
        self.held = held

    def __enter__(self):
        self.outer = getattr(_rebinding, "on", False), getattr(_rebinding, "held", False)
        _rebinding.on, _rebinding.held = True, self.held

    def __exit__(self, *exc):
        _rebinding.on, _rebinding.held = self.outer
        return False


def method(x, what, compute, keep_shape=True):
    """An in-place method (`x.add_(y)`): on an eager Tensor the write (returns
    x); on a program's value the functional result, which converted code
    rebinds the name to. Elsewhere (code that is not converted, a hand-built
    program) nothing would rebind it: a clear error, never a silent no-op."""
    if getattr(_rebinding, "held", False) and state._tls.builders and (
            type(x) is Tensor or is_resident(x)):
        ov = effects.overlay()
        return _conform(compute(ov.read(x) if ov is not None else x), x, what, keep_shape)
    if type(x) is Tensor:
        return apply(x, compute, what, keep_shape)
    if is_resident(x):  # an eager write: on the host copy (made now), as eagerly
        x._value
        return apply(x, compute, what, keep_shape)
    if not getattr(_rebinding, "on", False):
        functional = ("`out = d2s.assign(x)` (and return `out` where a caller needs it)"
                      if what == "assign" else f"`x = x.{what.rstrip('_')}(...)`")
        raise TypeError(
            f"{what}: a value of a program cannot be changed in place outside converted code, "
            f"nor in converted code where nothing rebinds it (a receiver that is not a name "
            f"or an attribute: an item `xs[0].{what}(...)`, a slice, a call's result; a "
            f"function's argument, whose caller would not see the write; or inside a "
            f"conditional expression); write the functional form, e.g. {functional} "
            f"(`xs[0] = xs[0].{what.rstrip('_')}(...)`), or convert the function with "
            f"to_static")
    start = getattr(x, "_fresh", None)  # a stale view starts from its base's values
    new = compute(start() if start is not None else x)
    written = getattr(x, "_write_in_place", None)
    if written is not None:  # every holder of x reads `new` (static.rebinding)
        written(new)
    return new


# ---- Paddle's in-place functions (d2s.reshape_(x, shape), ...) ----------------------
def reshape_(x, shape, name=None):
    """In-place `reshape`: x keeps its identity, takes the new shape."""
    return method(x, "reshape_", lambda v: _ops().reshape(v, shape), keep_shape=False)


def unsqueeze_(x, axis, name=None):
    return method(x, "unsqueeze_", lambda v: _ops().unsqueeze(v, axis), keep_shape=False)


def squeeze_(x, axis=None, name=None):
    return method(x, "squeeze_", lambda v: _ops().squeeze(v, axis), keep_shape=False)


def flatten_(x, start_axis=0, stop_axis=-1, name=None):
    return method(x, "flatten_", lambda v: _ops().flatten(v, start_axis, stop_axis),
                  keep_shape=False)


def scale_(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    return method(x, "scale_", lambda v: _ops().scale(v, scale, bias, bias_after_scale, act))


def clip_(x, min=None, max=None, name=None):
    return method(x, "clip_", lambda v: _ops().clip(v, min, max))


def add_(x, y, name=None):
    return method(x, "add_", lambda v: _ops().add(v, y))


def subtract_(x, y, name=None):
    return method(x, "subtract_", lambda v: _ops().subtract(v, y))


def multiply_(x, y, name=None):
    return method(x, "multiply_", lambda v: _ops().multiply(v, y))


def divide_(x, y, name=None):
    return method(x, "divide_", lambda v: _ops().divide(v, y))


def zero_(x):
    return method(x, "zero_", lambda v: _ops().zeros_like(v))


def fill_(x, value):
    return method(x, "fill_", lambda v: _ops().full_like(v, value))


def exp_(x, name=None):
    return method(x, "exp_", lambda v: _ops().exp(v))


def sqrt_(x, name=None):
    return method(x, "sqrt_", lambda v: _ops().sqrt(v))


def tanh_(x, name=None):
    return method(x, "tanh_", lambda v: _ops().tanh(v))


def copy_(x, src, blocking=True):
    """PyTorch's and Paddle's `x.copy_(src)` (an EMA's `p_ema.copy_(...)`):
    `src` broadcast and cast into x; the gradient goes to `src`."""
    return method(x, "copy_", lambda v: _ops().set_item(v, Ellipsis, src))


def masked_fill_(x, mask, value, name=None):
    return method(x, "masked_fill_", lambda v: _ops().masked_fill(v, mask, value))


# The method names converted code rebinds the receiver for (`x.add_(y)` ->
# `x = x.add_(y)`), and the functions `d2s.<name>(x, ...)` likewise.
INPLACE_NAMES = ("reshape_", "unsqueeze_", "squeeze_", "flatten_", "scale_", "clip_", "add_",
                 "subtract_", "multiply_", "divide_", "zero_", "fill_", "exp_", "sqrt_",
                 "tanh_", "copy_", "masked_fill_")
