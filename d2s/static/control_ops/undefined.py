"""`undefined`: the value of a name no path has assigned yet, in one place.

`undefined() -> v {name}` starts a name a loop assigns first (carried from
this value): reading it after a loop that ran zero times raises the
NameError Python would, naming the variable `name`. No gradient op reads
such a value as a number: where backward needs the cotangent of a name that may hold
none, it builds a zero that does not depend on it (`zero_cotangent`), so no
executor gives gradient ops a meaning of its own.

`cast_if_defined(x) -> y {dtype}` is `x` cast to `dtype`, or `x`'s undefined
value unchanged: a `cond` that promotes a weakly typed value it passes
through (a Python number a loop may have returned) casts it on a path where
it may hold no value, and a cast is no read (Python would not look at it).

`zeros_if_defined(x) -> z` is zeros like `x`, or a 0-d zero where `x` holds
no value: `zero_cotangent`'s zero for a name of unknown dims that may be
unset (the one op that reads such a value without raising).
"""
from __future__ import annotations

import numpy as np

from ...core.ops import full, zeros_like
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


def _undefined_outputs(op, labels):
    yield op.outputs[0].name, op.attrs["name"]


UNDEFINED = register_control_op(ControlOpDef(
    "undefined", _interpret, values=("name",), value_types={"name": TEXT}, undefined_outputs=_undefined_outputs,
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
    "cast_if_defined", _interpret_cast, values=("dtype",),
    value_types={"dtype": DTYPE}, check=_check_cast,
    undefined_outputs=_cast_undefined_outputs,
))


# ---- zero_cotangent: "no gradient" as a value, decided while backward is built ---------
def zero_cotangent(var):
    """A zero cotangent for `var`, appended to the current block where a
    gradient needs a value and no path gave one (a branch or a loop body not
    using a value it could read).

    A name that always holds a value gets `zeros_like(var)`. One that may
    hold none at run time (an early-return value, a name a loop assigns
    first) cannot be read: its zero is made from its static shape (`full`,
    reading nothing) when every dim is known, else by `zeros_if_defined`.
    Where such a name holds no value, nothing that ran read it, so every
    cotangent summed into its own is such a zero too: the value of these
    zeros is never seen in a gradient, only their existence is needed."""
    if not var.may_be_undefined:
        return zeros_like(var)
    if all(d is not None for d in var.shape):
        return full(list(var.shape), 0, var.dtype)
    block = var.block.program.current_block()
    out = block.create_var(var.shape, var.dtype, prefix="zeros")
    block.append_op("zeros_if_defined", [var], [out], {})
    return out


def _zeros_if_defined(value, dtype):
    return np.zeros((), dtype) if type(value) is UndefinedValue else np.zeros_like(value)


def _interpret_zeros(op, scope, run_block):
    out = op.outputs[0]
    scope.set(out.name, _zeros_if_defined(scope.get(op.inputs[0].name), out.dtype))


def _check_zeros(op):
    x, out = op.inputs[0], op.outputs[0]
    if tuple(x.shape) != tuple(out.shape) or x.dtype != out.dtype:
        return (f"zeros_if_defined: {out.dtype.name}{list(out.shape)} from "
                f"{x.dtype.name}{list(x.shape)}")
    return None


ZEROS_IF_DEFINED = register_control_op(ControlOpDef(
    "zeros_if_defined", _interpret_zeros, check=_check_zeros,
))
