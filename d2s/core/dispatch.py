"""The single entry point of every operator: `bind`.

Modes differ only in what binding does. With no program being built and no
static Variable among the inputs, `bind` runs the registry kernel now and,
when a gradient is wanted, records a tape node. Otherwise it hands the op to
the active static builder, which appends an `Operator` after running the
op's shape rule. Layers, functional ops and optimizers call `bind` only, so
they work unchanged in both modes.
"""
from __future__ import annotations

import numpy as np

from . import state
from .registry import OPS


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
    builder = state.current_builder()
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
    return not state._tls.builders and not state._global["static"]


def run_eager(op, inputs, attrs):
    """Run `op`'s kernel on eager Tensors now; record a tape node if a gradient
    is wanted. The hot path of eager mode: keep it lean."""
    try:
        arrays = [x._value for x in inputs]
    except AttributeError:
        bad = next(x for x in inputs if not isinstance(x, Tensor))
        raise TypeError(f"{op.name}: expected Tensor inputs, got {type(bad).__name__}") from None
    result = op.kernel(*arrays, **attrs)
    n_out = op.num_outputs
    if n_out == 1:
        value = result if type(result) is np.ndarray else np.asarray(result)
        needs_grad = False
        if op.vjp is not None and state._tls.grad_enabled:
            for x in inputs:
                if not x.stop_gradient:
                    needs_grad = True
                    break
        out = _new_tensor(value, not needs_grad)
        if needs_grad:
            autograd.record(op, inputs, attrs, (out,), (value,))
        return out
    if n_out == 0:  # side effects only (print, assert)
        return None
    values = [r if type(r) is np.ndarray else np.asarray(r) for r in result]
    needs_grad = (op.vjp is not None and state._tls.grad_enabled
                  and any(not x.stop_gradient for x in inputs))
    outs = [_new_tensor(v, not needs_grad) for v in values]
    if needs_grad:
        autograd.record(op, inputs, attrs, outs, values)
    return tuple(outs)


# Bound at the end of `d2s.core.tensor` (which imports this module first).
Tensor = None
_new_tensor = None
autograd = None
