"""`undefined`: the value of a name no path has assigned yet, in one place.

`undefined() -> v {name}` starts a name a loop assigns first (carried from
this value): reading it after a loop that ran zero times raises the
NameError Python would, naming the variable `name`. In gradient ops such a
value is a zero cotangent (see `executor.run_ops`).
"""
from __future__ import annotations

from ...core.dtypes import is_floating
from ..scope import UndefinedValue
from .registry import ControlOpDef, register_control_op


def append_undefined(block, var, name):
    """Make `var` (of `block`) hold the undefined value of the user's `name`."""
    return block.append_op("undefined", [], [var], {"name": name})


def _interpret(op, scope, run_block):
    scope.set(op.outputs[0].name, UndefinedValue(op.attrs["name"]))


def _emit(em, op, indent):
    em.emit(f"{em.ident(op.outputs[0].name)} = _Undefined({op.attrs['name']!r})", indent, op)


def _undefined_outputs(op, labels):
    yield op.outputs[0].name, op.attrs["name"]


def _lower_xla(low, op, env):
    """A zero placeholder whose flag says "undefined" (XLA values always exist)."""
    v = op.outputs[0]
    shape = tuple(0 if d is None else d for d in v.shape)
    env.set(v.name, low.jnp.zeros(shape, v.dtype), flag=True)


def _lower_onnx(ex, op, graph, env):
    """A zero placeholder: d2s raises `NameError` if such a value is read, an
    ONNX model reads the zeros (documented in README)."""
    v = op.outputs[0]
    env.set(v.name, ex.zeros(graph, v).with_shape(v.shape))


def makes_undefined_floats(ops):
    """Whether `ops` start a float name from the undefined value: its cotangent
    may be a symbolic zero, which only the interpreter represents."""
    return any(op.type == UNDEFINED.name and is_floating(op.outputs[0].dtype) for op in ops)


UNDEFINED = register_control_op(ControlOpDef(
    "undefined", _interpret, _emit, values=("name",), undefined_outputs=_undefined_outputs,
)).lowering(xla=_lower_xla, onnx=_lower_onnx)
