"""Side effects of converted code as ops: `raise`, `print`, `assert`.

A `raise` traced inside a sub-block (a branch or a loop body) becomes an op
raising the same exception type and arguments when that block runs; outside
sub-blocks Python raises at once. Print and assert ops act at run time.
"""
from __future__ import annotations

from ..core import state
from ..core.dispatch import Symbolic
from ..core.tensor import Tensor
from .control_ops.raise_ import append_raise as append_raise_op
from .ir import Variable


def _building_block():
    builder = state.current_builder()
    return None if builder is None else builder.program.current_block()


def mark_block_terminates():
    """The block being traced ends the function (it returned): names it leaves
    undefined do not make the enclosing `cond` fail."""
    block = _building_block()
    if block is not None and block.idx != 0:
        block.terminates = True


def append_raise(exc):
    """Inside a sub-block (a branch or loop body being traced), append an op
    raising `exc`'s type with its arguments when the block runs; returns False
    (the caller raises now) anywhere else, where Python semantics apply."""
    block = _building_block()
    if block is None or block.idx == 0:
        return False
    pieces = getattr(exc.args[0], "fstring_pieces", None) if len(exc.args) == 1 else None
    if pieces is None:
        append_raise_op(block, exc)
    else:  # a message of tensor values: formatted when the raise runs
        values = []
        template, kinds = _fstring_part(pieces, values, state.current_builder())
        kinds = "".join(kinds.get(j, "-") for j in range(len(values)))
        append_raise_op(block, exc, values=values, fstring=(template, kinds))
    # The rest of this block never runs past the raise: names it leaves
    # undefined do not make the enclosing `cond` fail.
    block.terminates = True
    return True


def unbound_read(exc):
    """Whether `exc` is the error of reading a name that no path assigned so
    far in this trace (a Python loop that ran zero times, say): the converter
    marks it (`convert.runtime.undefined`), and `cond` / `while_loop` treat it
    as code that raises when it runs, not as a build error."""
    return getattr(exc, "_d2s_unbound_read", None) is not None


def abandon_block(block, exc):
    """The traced code of `block` (a branch or a loop body) stopped at the
    read that raised `exc` (see `unbound_read`): eager Python raises there
    only if that code runs, so the block raises it when it runs, at the
    user's line of the read, and ends there (its results are never read)."""
    from .ir import traceback_origin
    append_raise_op(block, exc, origin=traceback_origin(exc.__traceback__) or ())
    block.terminates = True


def append_print(args, sep=" ", end="\n"):
    from ..core.dispatch import bind
    builder = state.current_builder() or next(
        a._owning_builder() for a in args if isinstance(a, Symbolic))
    values, parts, fstrings = [], [], []
    for a in args:
        if isinstance(a, Variable) and a.weak and tuple(a.shape) == ():
            # a Python number the code made of a tensor (`x.item()`): printed as one
            a = _Pieces((("value", a, "", ""),))
        if isinstance(a, (Variable, Tensor)):
            parts.append(("value", len(values), bool(a.stop_gradient)))
            values.append(builder.to_var(a))
        elif getattr(a, "fstring_pieces", None) is not None:
            template, kinds = _fstring_part(a.fstring_pieces, values, builder)
            fstrings.append(len(parts))
            parts.append(("fstring", template, kinds))
        else:
            parts.append(("text", str(a)))
    for i in fstrings:  # one kind per value of the op: "-" where the template names none
        _, template, kinds = parts[i]
        parts[i] = ("fstring", template, "".join(kinds.get(j, "-") for j in range(len(values))))
    with state.building(builder):
        bind("print", *values, parts=tuple(parts), sep=sep, end=end)


def _fstring_part(pieces, values, builder):
    from ..core.ops.debug_ops import format_field
    """(template, {value index: kind}) of an f-string printed by converted
    code (convert.runtime: `("text", s)` and `("value", v, conversion,
    spec)` pieces): each tensor becomes a value of the print op, named by a
    positional field, formatted when the program runs (debug_ops); anything
    else is formatted now, as the f-string would."""
    template, kinds, n = [], {}, 0
    for piece in pieces:
        if piece[0] == "text":
            template.append(piece[1].replace("{", "{{").replace("}", "}}"))
            continue
        _, v, conversion, spec = piece
        if isinstance(v, (Variable, Tensor)):
            number = (isinstance(v, Variable) and getattr(v, "weak", False)
                      and tuple(v.shape) == ())
            kinds[len(values)] = "n" if number else ("T" if v.stop_gradient else "t")
            template.append("{%d%s%s}" % (n, "!" + conversion if conversion else "",
                                          ":" + spec if spec else ""))
            values.append(builder.to_var(v))
            n += 1
        else:
            if conversion:
                v = {"r": repr, "s": str, "a": ascii}[conversion](v)
            template.append(format_field(v, spec).replace("{", "{{").replace("}", "}}"))
    return "".join(template), kinds


class _Pieces:
    __slots__ = ("fstring_pieces",)

    def __init__(self, pieces):
        self.fstring_pieces = pieces


def append_assert(test, message):
    """An assert op; a message that is an f-string of values of the program
    (`f"too long: {x.shape[1]}"`) is formatted when the assert fails, with
    the values of that run, as eager code formats it."""
    from ..core.dispatch import bind
    builder = state.current_builder() or test._owning_builder()
    pieces = getattr(message, "fstring_pieces", None)
    if pieces is None:
        with state.building(builder):
            bind("assert", test, message=str(message))
        return
    values = []
    template, kinds = _fstring_part(pieces, values, builder)
    kinds = "".join(kinds.get(j, "-") for j in range(len(values)))
    with state.building(builder):
        bind("assert", test, *values, message=None, fstring=(template, kinds))
