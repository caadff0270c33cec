"""`convert_call(f)`: the callable converted code actually calls for `f(...)`.

User functions (and methods, partials of them) are converted on first use
and cached; library code, builtins, classes and anything marked
`_d2s_not_to_static` are returned unchanged.  Functions whose source cannot
be found are called as they are.
"""
import functools
import inspect
import types

__all__ = ["convert_call"]

_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _convert_function_or_self(fn):
    from ..api import convert_function, is_convertible, cached_conversion
    cached = cached_conversion(fn)
    if cached is not None:
        return cached
    if fn.__code__.co_flags & _GENERATOR_FLAGS or not is_convertible(fn):
        return fn
    from ..errors import SourceUnavailableError
    try:
        return convert_function(fn)[0]
    except SourceUnavailableError:
        return fn


def convert_call(f):
    if isinstance(f, types.FunctionType):
        return _convert_function_or_self(f)
    if isinstance(f, types.MethodType):
        func = f.__func__
        if not isinstance(func, types.FunctionType):
            return f
        converted = _convert_function_or_self(func)
        return f if converted is func else types.MethodType(converted, f.__self__)
    if isinstance(f, functools.partial):
        converted = convert_call(f.func)
        return f if converted is f.func else functools.partial(converted, *f.args, **f.keywords)
    return _convert_special_callable(f)


def _convert_special_callable(f):
    """Callable objects: a d2s Layer (duck-typed: `forward` and `training`) runs
    its `forward` converted (a StaticFunction forward traces inline by itself);
    other objects run their converted `__call__`."""
    if isinstance(f, type):
        return f
    forward = getattr(f, "forward", None)
    if forward is not None and hasattr(f, "training"):
        converted = convert_call(forward)
        return f if converted is forward else converted
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):
        converted = _convert_function_or_self(call)
        if converted is not call:
            return types.MethodType(converted, f)
    return f
