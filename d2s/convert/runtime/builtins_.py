"""`print`, `assert`, `len`, `isinstance` and `.shape` as called by converted code.

Python values and eager Tensors behave exactly as the builtins.  For static
Variables: `len` / `.shape` give Python ints where known at build time and
weak int64 scalar Variables where dynamic (`.shape` is always a tuple);
`print` / `assert` / `raise` become ops that act when the program runs (see
the static paths below); a Variable is a `d2s.Tensor` to `isinstance`.
"""
import builtins

from .dispatch import _any_static, _is_static
from .iteration import python_int

__all__ = ["convert_print", "convert_assert", "convert_len", "convert_shape", "convert_raise",
           "convert_isinstance"]


def convert_print(*args, **kwargs):
    if _any_static(args):
        return _static_print(*args, **kwargs)
    builtins.print(*args, **kwargs)


def convert_assert(test, msg_fn=None):
    """`assert test, msg` with `msg` evaluated only on failure."""
    if _is_static(test):
        return _static_assert(test, msg_fn)
    if not test:
        raise AssertionError(msg_fn()) if msg_fn is not None else AssertionError()


def convert_raise(exc):
    """`raise exc`; inside a branch of a tensor `if` (or a static loop body) it
    becomes an op that raises the same type and message when that code runs."""
    if isinstance(exc, type) and issubclass(exc, BaseException):
        exc = exc()
    from d2s.static.side_effects import append_raise
    if not append_raise(exc):
        raise exc


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


def convert_shape(value):
    if _is_static(value):
        return _static_shape(value)
    return value.shape


# ---- static paths ----------------------------------------------------------

def _static_print(*args, sep=" ", end="\n", file=None, flush=False):
    """A print op: Variables are printed when the program runs (as eager Tensors
    print), Python values are part of the op."""
    from d2s.static.side_effects import append_print
    append_print(args, sep=sep, end=end)


def _static_assert(test, msg_fn):
    from d2s.static.side_effects import append_assert
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
