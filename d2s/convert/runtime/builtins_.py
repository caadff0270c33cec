"""`print`, `assert`, `len` and `.shape` as called by converted code.

Python values and eager Tensors behave exactly as the builtins.  For static
Variables: `len` / `.shape` give Python ints where known at build time and
int64 Variables where dynamic; `print` / `assert` / `raise` become ops that
act when the program runs (see the static paths below).
"""
import builtins

from .dispatch import _any_static, _is_static
from .iteration import python_int

__all__ = ["convert_print", "convert_assert", "convert_len", "convert_shape", "convert_raise"]


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
    """Known dims as ints; if any dim is unknown, the int64 shape Variable."""
    shape = value.shape
    if all(d is not None and d >= 0 for d in shape):
        return tuple(shape)
    from d2s.core import ops
    return python_int(ops.shape(value))


def _static_len(value):
    first = value.shape[0] if value.shape else None
    if first is not None and first >= 0:
        return first
    from d2s.core import ops
    return python_int(ops.shape(value)[0])
