"""`print`, `assert`, `len`, `isinstance`, `max`, `min`, `sum`, `reversed`, `any`,
`all` and `.shape` as called by converted code.

Python values and eager Tensors behave exactly as the builtins.  For static
Variables: `len` / `.shape` give Python ints where known at build time and
weak int64 scalar Variables where dynamic (`.shape` is always a tuple);
`print` / `assert` / `raise` become ops that act when the program runs (see
the static paths below); a Variable is a `d2s.Tensor` to `isinstance`;
`max`/`min`/`any`/`all` over one-element Variables select at run time
(builtins would ask `bool()` of a Variable while the program is built);
`sum`/`max`/`min` of one Variable (a list appended in a tensor loop is one:
a tensor array) fold its rows, as the builtins fold an eager Tensor's, and
`reversed` of one is its rows last first.
"""
import builtins
import re
import string

from .dispatch import _any_static, _is_static
from .iteration import python_int
from .logical import check_truth_size
from .try_bodies import check_uncaught_raise

__all__ = ["convert_print", "convert_assert", "convert_len", "convert_shape", "convert_size", "convert_raise",
           "convert_isinstance", "convert_max", "convert_min", "convert_reversed", "convert_sum",
           "convert_any", "convert_all"]


def convert_print(*args, **kwargs):
    """`print(...)`: an op when a Variable is printed, or an eager Tensor (a
    parameter, a captured tensor) while a program is built: eager code prints
    the tensor's value on every call, so the program reads it on every run
    (printing it once while tracing would show it one time, with the value
    it had then). A print into a `file` keeps Python's print for tensors: the
    print op writes to stdout only."""
    if kwargs.get("file") is None and any(isinstance(a, FString) for a in args):
        return _static_print(*args, **kwargs)
    if _any_static(args) or (kwargs.get("file") is None and _any_tensor(args)
                             and _building()):
        return _static_print(*args, **kwargs)
    builtins.print(*args, **kwargs)


class FString:
    """An f-string printed by converted code with a tensor of the program in
    it: `print` makes it part of its op, formatted when the program runs
    (static.side_effects). `fstring_pieces`: ("text", s) and ("value", v,
    conversion, spec)."""

    __slots__ = ("fstring_pieces",)

    def __init__(self, pieces):
        self.fstring_pieces = pieces

    def __str__(self):  # printed into a file: the text as traced
        return "".join(p[1] if p[0] == "text" else _format_now(*p[1:])
                       for p in self.fstring_pieces)


def _format_now(value, conversion, spec):
    from d2s.core.ops.debug_ops import format_field
    if conversion:
        value = {"r": repr, "s": str, "a": ascii}[conversion](value)
    return format_field(value, spec)


def _pieces_or_text(pieces, values, text):
    """An `FString` of `pieces` when `values` hold a tensor of the program
    being built, else `text()` (Python's own formatting, its errors too)."""
    if pieces is not None and (_any_static(values) or (_any_tensor(values) and _building())):
        return FString(pieces)
    return text()


_PERCENT = re.compile(r"%(?P<key>\([^)]*\))?(?P<spec>[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?"
                      r"[hlL]?[diouxXeEfFgGcrsa%])")


def convert_percent(fmt, right):
    """`"loss %.4f" % x.item()` printed by converted code: formatted when the
    program runs where it holds a tensor of the program (see convert_fstring)."""
    values = right if type(right) is tuple else (right,)
    pieces, it, start = [], iter(values), 0
    for m in _PERCENT.finditer(fmt):
        pieces.append(("text", fmt[start:m.start()]))
        start = m.end()
        spec = m.group("spec")
        if spec == "%":
            pieces.append(("text", "%"))
            continue
        if m.group("key") is not None or "*" in spec:
            pieces = None   # mapping keys, `*` widths: Python's own formatting
            break
        value = next(it, it)
        if value is it:
            pieces = None
            break
        pieces.append(("value", value, "", "%" + spec))
    if pieces is not None:
        pieces.append(("text", fmt[start:]))
        if next(it, it) is not it:
            pieces = None
    return _pieces_or_text(pieces, values, lambda: fmt % right)


def convert_str_format(fmt, *args):
    """`"loss {:.3f}".format(x.item())` printed by converted code (positional
    fields only): formatted when the program runs where it holds a tensor of
    the program (see convert_fstring)."""
    pieces, auto = [], 0
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        parsed = None
    for literal, field, spec, conversion in parsed or ():
        pieces.append(("text", literal))
        if field is None:
            continue
        if field == "":
            index, auto = auto, auto + 1
        elif field.isdigit():
            index = int(field)
        else:
            pieces = None
            break
        if index >= len(args) or "{" in (spec or ""):
            pieces = None
            break
        pieces.append(("value", args[index], conversion or "", spec or ""))
    return _pieces_or_text(None if parsed is None else pieces, args,
                           lambda: fmt.format(*args))


def convert_fstring(spec, *values):
    """An f-string argument of `print` (transformers.builtin_calls): its text
    when it holds no tensor of a program being built, else an `FString`."""
    pieces, it = [], iter(values)
    for s in spec:
        pieces.append(("text", s) if isinstance(s, str) else ("value", next(it)) + tuple(s))
    if _any_static(values) or (_any_tensor(values) and _building()):
        return FString(pieces)
    return "".join(p[1] if p[0] == "text" else _format_now(*p[1:]) for p in pieces)


def _any_tensor(values):
    from d2s.core.tensor import Tensor
    return any(isinstance(v, Tensor) for v in values)


def _building():
    from d2s.core import state
    return state.current_builder() is not None


def convert_assert(test, msg_fn=None):
    """`assert test, msg` with `msg` evaluated only on failure."""
    if _is_static(test):
        return _static_assert(test, msg_fn)
    if not test:
        raise AssertionError(msg_fn()) if msg_fn is not None else AssertionError()


def convert_raise(exc):
    """`raise exc`; inside a branch of a tensor `if` (or a static loop body) it
    becomes an op that raises the same type and message when that code runs
    (an error now if a converted `try` running it would catch it:
    `try_bodies`)."""
    if isinstance(exc, type) and issubclass(exc, BaseException):
        exc = exc()
    from d2s.static.side_effects import append_raise
    if not append_raise(exc):
        raise exc
    check_uncaught_raise(exc)


def convert_len(value):
    if _is_static(value):
        return _static_len(value)
    return builtins.len(value)


def convert_isinstance(value, classinfo):
    """`isinstance` as user code means it: a static Variable is a `d2s.Tensor`
    (it stands for the eager Tensor the same code gets when run eagerly), so
    `if isinstance(x, d2s.Tensor)` takes the tensor path in both modes.

    PaddlePaddle answers the same question with a metaclass whose
    `__instancecheck__` depends on the mode; here only converted code asks,
    so d2s's own `isinstance(x, Tensor)` (eager value or not?) is unchanged."""
    if builtins.isinstance(value, classinfo):
        return True
    if _is_static(value):
        from d2s.core.tensor import Tensor
        return builtins.issubclass(Tensor, classinfo)
    return False


def convert_max(*args, **kwargs):
    """`max(a, b, ...)` / `max(items)`: with static Variables among the items
    (no `key`/`default`), the first largest item, picked at run time."""
    return _extreme(builtins.max, "max", lambda item, best: item > best, args, kwargs)


def convert_min(*args, **kwargs):
    return _extreme(builtins.min, "min", lambda item, best: item < best, args, kwargs)


def convert_reversed(seq):
    """`reversed(seq)`: of a static Variable (a list appended in a tensor loop
    is one), its rows last first, itself a Variable a converted `for` walks
    (`reversed` would ask its length while the program is built)."""
    if _is_static(seq) and seq.shape:
        return seq[::-1]
    return builtins.reversed(seq)


def convert_sum(*args, **kwargs):
    """`sum(items, start=0)`: of a static Variable (a list appended in a tensor
    loop, carried as a tensor array, is one), `start` plus the sum of its
    rows, in the dtype eager `0 + row + ...` gives; else the builtin (a
    Python list of Variables adds them one by one, as eagerly)."""
    if args and _is_static(args[0]) and args[0].shape and builtins.len(args) <= 2 \
            and set(kwargs) <= {"start"}:
        start = args[1] if builtins.len(args) == 2 else kwargs.get("start", 0)
        return start + _row_sum(args[0])
    return builtins.sum(*args, **kwargs)


def convert_any(iterable):
    """`any(items)`: a bool Variable when an item is static (each item's truth
    as `bool()` of an eager Tensor; every item is evaluated)."""
    from d2s.core import ops
    return _fold_truth(builtins.any, "any", ops.logical_or, True, iterable)


def convert_all(iterable):
    from d2s.core import ops
    return _fold_truth(builtins.all, "all", ops.logical_and, False, iterable)


def convert_shape(value):
    if _is_static(value):
        return _static_shape(value)
    return value.shape


def convert_size(value):
    """`x.size`: the number of elements, a Python int where every dim is known
    while the program is built, else a weak int64 0-d Variable (as an unknown
    `x.shape[i]` is) computed when it runs."""
    if _is_static(value) and None in tuple(value.shape):
        from d2s.core.ops import numel
        return python_int(numel(value))
    return value.size


# ---- static paths ----------------------------------------------------------

def _static_print(*args, sep=" ", end="\n", file=None, flush=False):
    """A print op: Variables are printed when the program runs (as eager Tensors
    print), Python values are part of the op."""
    from d2s.static.side_effects import append_print
    append_print(args, sep=sep, end=end)


def _static_assert(test, msg_fn):
    from d2s.static.side_effects import append_assert
    check_truth_size(test)   # `assert t` of a many-element t: bool()'s ValueError, as eager
    message = "" if msg_fn is None else msg_fn()
    append_assert(test, message)


def _static_shape(value):
    """A tuple, as eager: known dims are Python ints, unknown ones int64 scalar
    Variables read from one `shape` op, weak like the Python ints they stand for
    (`x / x.shape[0]` keeps x's dtype; `b, n = x.shape` unpacks)."""
    shape = value.shape
    if all(d is not None for d in shape):
        return tuple(shape)
    from d2s.core.ops import shape as shape_of
    dims = shape_of(value)
    return tuple(_dynamic_dim(dims, value, i) if d is None else d for i, d in enumerate(shape))


def _dynamic_dim(dims, value, axis):
    """`value.shape[axis]` at run time, read from its `shape` op result `dims`."""
    from d2s.core.ops.shape_args import note_dim
    dim = python_int(dims[axis])
    note_dim(dim, value, axis)
    return dim


def _static_len(value):
    first = value.shape[0] if value.shape else None
    if first is not None and first >= 0:
        return first
    from d2s.core.ops import shape as shape_of
    return _dynamic_dim(shape_of(value), value, 0)


def _one_element(item, name):
    """Eager `bool()` needs a one-element tensor: the same ValueError here."""
    if _is_static(item) and item.size not in (1, None):
        raise ValueError(f"{name}(): bool() of a Tensor with {item.size} elements is "
                         "ambiguous; only one-element tensors convert")


def _row_sum(rows):
    """The rows of `rows` added up, in the dtype of eager `0 + row` (the sum
    op widens integers)."""
    import numpy as np

    from d2s.core import ops
    from d2s.core.tensor import Tensor
    total = ops.sum(rows, axis=0)
    eager = (0 + Tensor(np.zeros(1, dtype=rows.dtype))).dtype
    return total if total.dtype == eager else total.astype(eager)


def _extreme_row(rows, name):
    """`max(rows)` / `min(rows)` of a static Variable: eagerly its rows compared
    with `>` / `<` (each must have one element for `bool()`), the first best
    one; here the row at the first index where the reduced value occurs."""
    from d2s.core import ops
    first = rows.shape[0]
    if first == 1:
        return rows[0]       # eagerly the only row, compared with nothing
    size = 1
    for dim in rows.shape[1:]:
        size = None if dim is None or size is None else size * dim
    if size != 1:
        raise ValueError(f"{name}() of a Variable whose rows have "
                         f"{'many' if size is None else size} elements: eagerly bool() of "
                         "comparing two rows is ambiguous; only one-element rows compare")
    flat = ops.reshape(rows, [-1])
    best = (ops.max if name == "max" else ops.min)(flat)
    index = ops.argmax(ops.equal(flat, best).astype("int32"), axis=0)
    return ops.gather(rows, index, axis=0)


def _extreme(builtin, name, better, args, kwargs):
    if builtins.len(args) == 1 and _is_static(args[0]) and args[0].shape and not kwargs:
        return _extreme_row(args[0], name)
    if builtins.len(args) == 1 and not _is_static(args[0]):
        args = (list(args[0]),)   # an iterator: max/min consume every item anyway
        items = args[0]
    else:
        items = list(args)
    if kwargs or not _any_static(items):
        return builtin(*args, **kwargs)  # Python's own answer, or its own error
    from d2s.core import ops
    strong = {str(x.dtype) for x in items if _is_static(x) and not getattr(x, "weak", False)}
    if builtins.len(strong) > 1:
        raise TypeError(f"{name}() of tensors of dtypes {', '.join(sorted(strong))}: which one "
                        "it returns depends on run-time values; cast them to one dtype")
    best = items[0]
    for item in items[1:]:
        _one_element(item, name)
        _one_element(best, name)
        best = ops.where(better(item, best), item, best)
    return best


def _fold_truth(builtin, name, combine, absorbing, iterable):
    """Python's short-circuit while the items are Python values; once one is
    static, its truth joins a bool Variable (`combine`), and a later Python
    item equal to `absorbing` still decides the answer."""
    if _is_static(iterable):
        return builtin(iterable)  # rows of a Variable: the builtin's own error
    from .logical import static_truth
    out = None
    for item in iterable:
        if _is_static(item):
            _one_element(item, name)
            truth = static_truth(item)
            out = truth if out is None else combine(out, truth)
        elif bool(item) == absorbing:
            return absorbing
    return (not absorbing) if out is None else out
