"""`and`, `or`, `not` and chained comparisons, lazy on the right-hand side.

Python values keep exact Python semantics (`a and b` is `a` when `a` is
falsy, else `b`; the right side is evaluated only when needed).  A static
Variable on the left builds `cond(a, b, a)` / `cond(a, a, b)`.
"""
import operator

from .dispatch import _is_static, _static_nn

__all__ = ["convert_logical_and", "convert_logical_or", "convert_logical_not",
           "convert_compare_chain"]


def convert_logical_and(lhs, rhs_fn):
    if _is_static(lhs):
        return _static_logical_and(lhs, rhs_fn)
    return rhs_fn() if lhs else lhs


def convert_logical_or(lhs, rhs_fn):
    if _is_static(lhs):
        return _static_logical_or(lhs, rhs_fn)
    return lhs if lhs else rhs_fn()


def convert_logical_not(value):
    if _is_static(value):
        return _static_logical_not(value)
    return not value


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne, "is": operator.is_,
            "is not": operator.is_not, "in": lambda a, b: a in b,
            "not in": lambda a, b: a not in b}


def convert_compare_chain(left, *ops_and_fns):
    """`left op1 r1 op2 r2 ...` given as (left, 'op1', lambda: r1, 'op2', lambda: r2, ...)."""
    op, right_fn, rest = ops_and_fns[0], ops_and_fns[1], ops_and_fns[2:]
    right = right_fn()
    result = _COMPARE[op](left, right)
    if not rest:
        return result
    return convert_logical_and(result, lambda: convert_compare_chain(right, *rest))


# ---- static paths ----------------------------------------------------------

def _to_bool_variable(value, like):
    """A Python value as a bool Variable (for mixing with a static operand)."""
    if _is_static(value):
        return value.astype("bool") if str(value.dtype) != "bool" else value
    from d2s.core import ops
    return ops.full([], bool(value), dtype="bool")


def _static_logical_and(lhs, rhs_fn):
    pred = _to_bool_variable(lhs, lhs)
    out = _static_nn().cond(pred, lambda: (_to_bool_variable(rhs_fn(), lhs),), lambda: (pred,))
    return out[0] if isinstance(out, (list, tuple)) else out


def _static_logical_or(lhs, rhs_fn):
    pred = _to_bool_variable(lhs, lhs)
    out = _static_nn().cond(pred, lambda: (pred,), lambda: (_to_bool_variable(rhs_fn(), lhs),))
    return out[0] if isinstance(out, (list, tuple)) else out


def _static_logical_not(value):
    from d2s.core import ops
    return ops.logical_not(_to_bool_variable(value, value))
