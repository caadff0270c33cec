"""What the ONNX rules of control-flow ops are written with.

The rules themselves (`cond` -> `If`, `while` -> `Loop`, `undefined`, and
the reasons `raise`, `cond_grad`, `while_grad` have no ONNX form) live in
each op's home, `d2s.static.control_ops`, beside its other
interpretations, as `rule(ex, op, graph, env)`: `ex` is the
`ProgramExporter`, `graph` the ONNX graph being emitted into, `env` the
d2s name -> Value map of that graph. This mixin gives `ex` the graph and
value types (static never imports onnx) and the few services such rules
share; `ex` itself emits a sub-block (`ex.emit_block(idx, graph, env)`),
hands a rule's `ns` for an op (`ex.namespace(graph, op)`) and reads the
program after the exporter's passes (`ex.program`, `ex.blocks`).

Tensor arrays (`array_append`) are an ordinary registry op: their rule is
in `static.tensor_array`, written with `ns.concat_rows`.
"""
from __future__ import annotations

import numpy as np

from .graph import Graph, Value


class Env:
    """d2s name -> Value, chained like d2s blocks (a sub-block sees its parents')."""

    __slots__ = ("values", "parent")

    def __init__(self, parent=None):
        self.values = {}
        self.parent = parent

    def get(self, name):
        env = self
        while env is not None:
            value = env.values.get(name)
            if value is not None:
                return value
            env = env.parent
        raise KeyError(f"d2s value '{name}' has no ONNX value (an exporter bug)")

    def set(self, name, value):
        self.values[name] = value


class ControlFlowSupport:
    """Mixed into `ProgramExporter`: the namespace of control-flow rules."""

    Env, Graph, Value = Env, Graph, Value

    @staticmethod
    def zeros(graph, var):
        """A placeholder for a value no executed path defines (unknown dims are 0)."""
        shape = tuple(0 if d is None else d for d in var.shape)
        return graph.const(np.zeros(shape, var.dtype), hint="undefined")

    @staticmethod
    def scalar_bool(ns, value):
        """A predicate as `If` / `Loop` take it: one bool element, rank 0 (d2s's
        `cond` and `while_loop` have checked it is bool with one element)."""
        if value.shape == ():
            return value
        return ns.node("Reshape", value, ns.ints([]), shape=())

    @staticmethod
    def label(op):
        """What names the subgraphs of `op` (its first output, else its type)."""
        return op.outputs[0].name if op.outputs else op.type
