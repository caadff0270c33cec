"""`and`, `or`, `not` and chained comparisons, lazy on the right-hand side.

Python values keep exact Python semantics (`a and b` is `a` when `a` is
falsy, else `b`; the right side is evaluated only when needed).  A static
Variable on the left builds `cond(a, b, a)` / `cond(a, a, b)`; the right
side is traced inside its branch, so a Python operand after it that
short-circuits is never evaluated, as in Python.

The result of a static `a and b` / `a or b` is one tensor on both paths:
with a bool `a` (a comparison, the usual case) it is bool, the right side
taken by its truth value (`x > 1 or limit is None`); with a number-valued
`a` (`x or default`) values are kept, the right side promoted by the
branch-output rule.

A right side the converter marks `simple` (no calls in its source) facing a
bool left side is first traced inline: when its ops are pure and cheap it
is combined elementwise (`logical_and` / `logical_or`, no conditional on
the path; `d2s.static.inline_operand` says when and why), else the `cond`
above is built.
"""
import operator

from .dispatch import _is_static, _static_nn

__all__ = ["convert_logical_and", "convert_logical_or", "convert_logical_not",
           "convert_compare_chain", "convert_contains", "python_test_only", "static_truth"]


def convert_logical_and(lhs, rhs_fn, simple=False):
    """`lhs and rhs_fn()`; `simple`: the right side's source has no calls (it
    may be traced twice: see the module docstring)."""
    if _is_static(lhs):
        return _static_select(lhs, rhs_fn, False, "the value of `and`", simple)
    return rhs_fn() if lhs else lhs


def convert_logical_or(lhs, rhs_fn, simple=False):
    """`lhs or rhs_fn()`; `simple`: see `convert_logical_and`."""
    if _is_static(lhs):
        return _static_select(lhs, rhs_fn, True, "the value of `or`", simple)
    return lhs if lhs else rhs_fn()


def convert_logical_not(value):
    if _is_static(value):
        return _static_logical_not(value)
    return not value


def convert_contains(key, container):
    """`key in container`, Python's test. A dict entry that a tensor loop or
    `if` assigns on only some of the paths a run may take (a cache entry
    first created inside a decoding loop: `if "prev_key" in state: ...
    state["prev_key"] = k`) holds a value the program may leave unset: the
    test would be decided once, while the program is built, for every trip,
    so it is an error saying what to write instead."""
    found = key in container
    if found and isinstance(container, dict):
        value = container[key]
        if _is_static(value) and getattr(value, "may_be_undefined", False):
            from d2s.static import ControlFlowError
            raise ControlFlowError(  # (it names the file and line)
                f"`{key!r} in ...` tests a dict entry that a loop or `if` on a tensor "
                "assigns on only some of the paths a run takes (e.g. first created inside "
                "the loop); a static program decides `in` once, while it is built, not per "
                "trip. Create the entry before the loop (e.g. an empty tensor of the shape "
                "it grows from, `d2s.zeros([batch, 0, dim])`, that `concat` extends), or "
                "keep a tensor flag of whether it was set")
    return found


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne, "is": operator.is_,
            "is not": operator.is_not, "in": convert_contains,
            "not in": lambda a, b: not convert_contains(a, b)}


def convert_compare_chain(left, *ops_and_fns):
    """`left op1 r1 op2 r2 ...` given as (left, 'op1', lambda: r1, 'op2', lambda: r2, ...)."""
    op, right_fn, rest = ops_and_fns[0], ops_and_fns[1], ops_and_fns[2:]
    right = right_fn()
    result = _COMPARE[op](left, right)
    if not rest:
        return result
    return convert_logical_and(result, lambda: convert_compare_chain(right, *rest))


def python_test_only(value, targets, construct):
    """The test of an `and`/`or` or ternary left unconverted because `:=` binds
    `targets` in a part evaluated only on some paths: Python tests it as it
    is; a static Variable there is an error naming the targets."""
    if _is_static(value):
        from d2s.static import ControlFlowError
        names = ", ".join(f"'{t}'" for t in targets)
        raise ControlFlowError(
            f"{construct} tests a tensor and assigns {names} with `:=` on a path taken "
            "only at run time; a converted branch cannot carry that assignment: assign "
            "it in a statement before")
    return value


def comprehension_test(value):
    """The test of a comprehension's `if`: Python's, unless it is a static
    Variable, where the items kept (the length of the result) would be known
    only at run time while the comprehension builds its result now."""
    if _is_static(value):
        from d2s.static import ControlFlowError
        from d2s.static.ir import user_origin
        origin = user_origin()
        where = f" ({origin[0]}, line {origin[1]})" if origin else ""
        raise ControlFlowError(
            f"a comprehension's `if` tests a tensor{where}: which items it keeps is known "
            "only when the program runs, but the comprehension builds its result while "
            "the program is built; append to a list in a `for` loop with an `if` inside "
            "(the list is carried as a tensor array), or keep every item and choose with "
            "d2s.where")
    return value


# ---- static paths ------------------------------------------------------------

def static_truth(value):
    """`bool(value)` for a static Variable, as a bool Variable: `value != 0` for
    numbers, as `bool()` of an eager Tensor (a tensor `if t:` / `while t:`).

    A Variable whose dims are all known and hold other than one element
    raises bool()'s own ValueError of an eager Tensor (an `except ValueError`
    around the code takes it on both sides); with an unknown dim, the size
    is checked when the program runs."""
    if _is_list_array(value):
        return _array_not_empty(value)
    check_truth_size(value)
    return value if value.dtype.kind == "b" else value != 0


def _is_list_array(value):
    """A tensor array stands for the Python list a tensor loop filled: its
    truth is the list's (`if outs:`, `while stack:`), not its items'."""
    from d2s.static.tensor_array import is_tensor_array
    return is_tensor_array(value)


def _array_not_empty(value):
    from d2s.core.ops import lift
    from .builtins_ import convert_len
    return lift(convert_len(value)) > 0


def check_truth_size(value):
    """Raise as `bool()` of an eager Tensor does when the static Variable
    `value` surely holds other than one element. Called before a construct's
    trace begins too: the error holds for every input, so an `except` may
    take it (`control_flow._traced`)."""
    if _is_list_array(value):
        return
    shape = tuple(value.shape)
    if all(type(d) is int and d >= 0 for d in shape):
        size = 1
        for d in shape:
            size *= d
        if size != 1:
            raise ValueError(f"bool() of a Tensor with {size} elements is ambiguous; only "
                             "one-element tensors convert")


def _truth(value):
    """The truth of a right-hand side facing a bool left side: a bool tensor,
    or a Python bool (the branch-output rule gives it the left side's shape)."""
    from d2s.core.tensor import Tensor
    if _is_static(value) or isinstance(value, Tensor):
        return value if str(value.dtype) == "bool" else value != 0
    return bool(value)


def _static_select(lhs, rhs_fn, lhs_when, label, simple=False):
    """`cond(truth(lhs), ...)` giving `lhs` on the path where its truth is
    `lhs_when`, and the lazily traced right side on the other.

    A one-element right side takes the left side's shape (`tok != eos and
    step < n` with `tok` of shape [1] and a 0-d `step`): eager Python gives
    either operand, and a test of `if`/`while` only needs its one element;
    other shapes that differ are an error saying how to write the test."""
    pred = static_truth(lhs)
    as_bool = str(lhs.dtype) == "bool"
    if simple and as_bool:
        combined = _combined(lhs, rhs_fn, lhs_when, label)
        if combined is not None:
            return combined

    def rhs():
        value = rhs_fn()
        value = _truth(value) if as_bool else value
        return (_like_left(lhs, value, label),)

    def keep():
        return (lhs,)

    true_fn, false_fn = (keep, rhs) if lhs_when else (rhs, keep)
    out = _static_nn().cond(pred, true_fn, false_fn, names=[label])
    return out[0] if isinstance(out, (list, tuple)) else out


def _combined(lhs, rhs_fn, lhs_when, label):
    """`lhs & truth(rhs)` (`lhs | ...` for `or`) with the right side traced
    inline, when its ops are pure and cheap; else None (nothing traced)."""
    from d2s.core import ops
    from d2s.static.inline_operand import NOT_INLINED, trace_inline

    def rhs():
        value = _truth(rhs_fn())
        if not (_is_static(value) and str(value.dtype) == "bool"):
            raise TypeError("not a bool tensor")  # (a Python value: the cond's rule)
        value = _like_left(lhs, value, label)
        if tuple(value.shape) != tuple(lhs.shape):
            raise TypeError("shapes differ")  # (a dim known at run time: the cond checks)
        return (ops.logical_or if lhs_when else ops.logical_and)(lhs, value)

    out = trace_inline(lhs.block.program, rhs)
    return None if out is NOT_INLINED else out


def _like_left(lhs, value, label):
    """`value` reshaped to the left side's shape when it holds one element
    and only the shapes differ; unchanged when they agree (or it is a
    Python value, or a dim is known only at run time at the same rank)."""
    shape = getattr(value, "shape", None)
    if shape is None or tuple(shape) == tuple(lhs.shape):
        return value
    shape, left = tuple(shape), tuple(lhs.shape)
    known = all(type(d) is int for d in shape)
    if known and _numel(shape) == 1 and all(type(d) is int for d in left):
        from d2s.core import ops
        return ops.reshape(value, list(left))
    if len(shape) == len(left) and not (known and all(type(d) is int for d in left)):
        return value  # same rank, a dim known only at run time: the cond checks it
    from d2s.static import ControlFlowError
    shown = [d if type(d) is int else None for d in shape]
    op = "and" if "and" in label else "or"
    raise ControlFlowError(
        f"`{op}` of a one-element tensor of shape {list(left)} and a tensor of shape "
        f"{shown}: a converted `{op}` gives one of its operands, and here they may differ "
        f"in shape. Reduce the right side to one element (`a > 0 {op} (b > 0).all()`, "
        f"or `.any()`), or combine same-shaped tensors elementwise with "
        f"`{'&' if op == 'and' else '|'}`")


def _numel(shape):
    size = 1
    for d in shape:
        size *= d
    return size


def _static_logical_not(value):
    from d2s.core import ops
    return ops.logical_not(static_truth(value))
