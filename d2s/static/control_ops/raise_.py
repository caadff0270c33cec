"""`raise`: a `raise` statement inside a traced branch or loop body, in one place.

`raise() {exception, args}` raises `exception(*args)` when its block runs
(outside sub-blocks Python raises at once, while tracing: see
`static.side_effects`). Its attributes are plain values; a saved exception
type is rebuilt by name (`raisable`): ordinary builtin errors only
(`RAISABLE`), any other type a program was traced with raises as
`RuntimeError` once loaded, and a file naming a builtin outside the list
(`SystemExit`, `KeyboardInterrupt`, `StopIteration`, ...) is refused.
"""
from __future__ import annotations

import builtins

from ...core.attr_schema import VALUE, Spec, optional, sequence_of
from ...core.ops.debug_ops import _FSTRING
from .registry import ControlOpDef, register_control_op


# What a loaded `raise` op may raise: errors a program can report. Never what
# is no error (SystemExit ends the process, KeyboardInterrupt fakes a Ctrl-C,
# GeneratorExit / StopIteration end an enclosing generator or loop), nor
# environment errors (OSError and its family) a model has no reason to raise.
RAISABLE = frozenset({
    Exception, ArithmeticError, AssertionError, AttributeError, FloatingPointError,
    IndexError, KeyError, LookupError, NameError, NotImplementedError, OverflowError,
    RuntimeError, TypeError, UnboundLocalError, UnicodeError, ValueError,
    ZeroDivisionError})


def raisable(name):
    """The exception type a saved `raise` op names: an allowed builtin error,
    `RuntimeError` for a name Python does not define (the user's own class),
    None for any other builtin (refused by the loader)."""
    found = getattr(builtins, name, None)
    if found is None:
        return RuntimeError
    return found if isinstance(found, type) and found in RAISABLE else None


def _exception_problem(v):
    if isinstance(v, type) and v in RAISABLE:
        return None
    shown = v.__name__ if isinstance(v, type) else repr(v)[:80]
    return (f"a loaded program may raise only "
            f"{', '.join(sorted(t.__name__ for t in RAISABLE))}; got {shown}")


def append_raise(block, exc, origin=None, values=(), fstring=None):
    """Append to `block` an op raising `exc`'s type with its arguments
    (`origin`: the user's line, by default the calling user frame); with
    `fstring` ((template, kinds): `core.ops.debug_ops._format_fstring`) its
    one argument is that text formatted with `values` when it runs."""
    attrs = {"exception": type(exc), "args": () if fstring else tuple(exc.args),
             "fstring": fstring}
    return block.append_op("raise", list(values), [], attrs, origin=origin)


def raised(op, values):
    """The exception `op` raises, its message formatted from `values`."""
    fstring = op.attrs.get("fstring")
    if fstring is None:
        return op.attrs["exception"](*op.attrs["args"])
    from ...core.ops.debug_ops import _format_fstring
    return op.attrs["exception"](_format_fstring(values, *fstring))


def _interpret(op, scope, run_block):
    raise raised(op, [scope.get(v.name) for v in op.inputs])


RAISE = register_control_op(ControlOpDef(
    "raise", _interpret, values=("exception", "args", "fstring"), always_kept=True,
    value_types={"exception": Spec(_exception_problem, "an allowed exception type"),
                 "args": sequence_of(VALUE, max_len=64, kinds=(tuple,)),
                 "fstring": optional(_FSTRING)},
))
