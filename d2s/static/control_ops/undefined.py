"""`undefined`: the value of a name no path has assigned yet, in one place.

`undefined() -> v {name}` starts a name a loop assigns first (carried from
this value): reading it after a loop that ran zero times raises the
NameError Python would, naming the variable `name`. In gradient ops such a
value is a zero cotangent (see `executor.run_ops`).

`cast_if_defined(x) -> y {dtype}` is `x` cast to `dtype`, or `x`'s undefined
value unchanged: a `cond` that promotes a weakly typed value it passes
through (a Python number a loop may have returned) casts it on a path where
it may hold no value, and a cast is no read (Python would not look at it).
"""
from __future__ import annotations

import numpy as np

from ...core.dtypes import is_floating
from ...core.registry import OPS
from ..scope import UndefinedValue
from ...core.attr_schema import DTYPE, TEXT
from .registry import ControlOpDef, register_control_op


def append_undefined(block, var, name):
    """Make `var` (of `block`) hold the undefined value of the user's `name`."""
    var.may_be_undefined = True
    return block.append_op("undefined", [], [var], {"name": name})


def _interpret(op, scope, run_block):
    scope.set(op.outputs[0].name, UndefinedValue(op.attrs["name"]))


def _emit(em, op, indent):
    em.emit(f"{em.ident(op.outputs[0].name)} = _Undefined({em.constant(op.attrs['name'])})",
            indent, op)


def _undefined_outputs(op, labels):
    yield op.outputs[0].name, op.attrs["name"]


def makes_undefined_floats(ops):
    """Whether `ops` start a float name from the undefined value: its cotangent
    may be a symbolic zero, which only the interpreter represents."""
    return any(op.type == UNDEFINED.name and is_floating(op.outputs[0].dtype) for op in ops)


UNDEFINED = register_control_op(ControlOpDef(
    "undefined", _interpret, _emit, values=("name",), value_types={"name": TEXT}, undefined_outputs=_undefined_outputs,
))


# ---- cast_if_defined ------------------------------------------------------------------
def append_cast_if_defined(block, x, dtype):
    """`x` (which may be undefined) cast to `dtype` in `block`: a new Variable.
    No gradient flows through it (it casts weakly typed values: numbers)."""
    out = block.create_var(x.shape, dtype, prefix="cast", stop_gradient=True)
    out.may_be_undefined = True
    block.append_op("cast_if_defined", [x], [out], {"dtype": np.dtype(dtype).name})
    return out


def _cast(value, op):
    return OPS["cast"].kernel(value, dtype=op.attrs["dtype"])


def _interpret_cast(op, scope, run_block):
    value = scope.get(op.inputs[0].name)
    scope.set(op.outputs[0].name, value if type(value) is UndefinedValue else _cast(value, op))


def _emit_cast(em, op, indent):
    x, out = em.ident(op.inputs[0].name), em.ident(op.outputs[0].name)
    em.emit(f"{out} = {x} if type({x}) is _Undefined else "
            f"{em.kernel('cast')}({x}, dtype={em.constant(op.attrs['dtype'])})", indent, op)


def _cast_undefined_outputs(op, labels):
    label = labels.get(op.inputs[0].name)
    if label is not None:
        yield op.outputs[0].name, label


def _check_cast(op):
    x, out = op.inputs[0], op.outputs[0]
    if tuple(x.shape) != tuple(out.shape) or out.dtype != np.dtype(op.attrs["dtype"]):
        return (f"cast_if_defined: {out.dtype.name}{list(out.shape)} from "
                f"{x.dtype.name}{list(x.shape)} with dtype={op.attrs['dtype']}")
    return None


CAST_IF_DEFINED = register_control_op(ControlOpDef(
    "cast_if_defined", _interpret_cast, _emit_cast, values=("dtype",),
    value_types={"dtype": DTYPE}, check=_check_cast,
    undefined_outputs=_cast_undefined_outputs,
))
