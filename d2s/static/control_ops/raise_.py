"""`raise`: a `raise` statement inside a traced branch or loop body, in one place.

`raise() {exception, args}` raises `exception(*args)` when its block runs
(outside sub-blocks Python raises at once, while tracing: see
`static.side_effects`). Its attributes are plain values (a saved exception
type is rebuilt by name, builtin types only: `jit.serialization`).
"""
from __future__ import annotations

from ...core.registry import NotLowerable
from ..scope import relocate
from .registry import ControlOpDef, register_control_op


def append_raise(block, exc, origin=None):
    """Append to `block` an op raising `exc`'s type with its arguments
    (`origin`: the user's line, by default the calling user frame)."""
    return block.append_op("raise", [], [], {"exception": type(exc), "args": tuple(exc.args)},
                           origin=origin)


def _interpret(op, scope, run_block):
    raise op.attrs["exception"](*op.attrs["args"])


def _emit(em, op, indent):
    exc = em.global_value("e", op.attrs["exception"])
    args = em.global_value("a", tuple(op.attrs["args"]))
    em.emit(f"raise {exc}(*{args})", indent, op)


def _lower_xla(low, op, env):
    """An error site set where its block runs (raised by the host after the call)."""
    exc, args = op.attrs["exception"], tuple(op.attrs["args"])
    low.fail_if(True, lambda: relocate(exc(*args), op))


RAISE = register_control_op(ControlOpDef(
    "raise", _interpret, _emit, values=("exception", "args"), always_kept=True,
)).lowering(
    xla=_lower_xla,
    onnx=NotLowerable("it raises an exception at run time; ONNX has no exceptions"))
