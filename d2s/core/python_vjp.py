"""Eager tape nodes whose gradient is Python code, not a registered op's rule.

Two user-facing features differentiate a block of code by a function they
are given rather than by the ops the block ran: `autograd.PyLayer` (the
user's `backward`) and activation recomputation (`fleet.utils.recompute`:
run the block again and differentiate that). Both run the block with the
tape off, hand back fresh Tensors for its results, and record one node
whose vjp calls their function; this module is that shared half, so the
two differ only in what their vjp does.
"""
from __future__ import annotations

from . import autograd
from .dtypes import is_floating
from .tensor import Tensor, new_tensor

__all__ = ["PythonVjp", "record_python_vjp"]


class PythonVjp:
    """The op of such a node: `vjp(cts, outs, *inputs)` with `cts` always a list
    (one cotangent per recorded result), returning one gradient (or None) per
    input."""
    __slots__ = ("name", "num_outputs", "_vjp")

    def __init__(self, name, num_outputs, vjp):
        self.name, self.num_outputs, self._vjp = name, num_outputs, vjp

    def vjp(self, cts, outs, *inputs):
        # (`vjp` is read as an attribute, `op.vjp is None`: a bound method is fine)
        cts = [cts] if self.num_outputs == 1 else list(cts)
        outs = [outs] if self.num_outputs == 1 else list(outs)
        return self._vjp(cts, outs, *inputs)


def record_python_vjp(name, outs, inputs, vjp, constant=lambda r: False):
    """`outs` (a Tensor, or a tuple/list holding Tensors and other values) with
    each Tensor replaced by a fresh one recorded as an output of one tape node
    over `inputs`, whose gradient is `vjp(cts, outs, *inputs)`. Results that
    are not floating point, or for which `constant(result)` holds, never need
    a gradient (stop_gradient). Returns the value in `outs`'s form."""
    single = not isinstance(outs, (tuple, list))
    results = [outs] if single else list(outs)
    fresh = []
    for i, r in enumerate(results):
        if isinstance(r, Tensor):
            results[i] = new_tensor(r._value, constant(r) or not is_floating(r.dtype))
            fresh.append(results[i])
    autograd.record(PythonVjp(name, len(fresh), vjp), inputs, {}, fresh,
                    [t._value for t in fresh])
    return results[0] if single else type(outs)(results)
