"""`convert_call(f)`: the callable converted code actually calls for `f(...)`.

User functions (and methods, partials of them) are converted on first use
and cached; library code, builtins, classes and anything marked
`_d2s_not_to_static` are returned unchanged. A function decorated with
`@d2s.no_grad()` is converted inside its grad mode.  Functions whose source cannot
be found are called as they are.
"""
import functools
import inspect
import types
import weakref

from .python_random import draw_call
from .reads import note_function

__all__ = ["convert_call"]

_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _convert_function_or_self(fn):
    from ..api import convert_function, is_convertible, cached_conversion
    cached = cached_conversion(fn)
    if cached is not None:
        note_function(fn)  # (its globals are read: jit.read_guards)
        return cached
    if fn.__code__.co_flags & _GENERATOR_FLAGS or not is_convertible(fn):
        return fn
    from ..errors import SourceUnavailableError
    try:
        converted = convert_function(fn)[0]
    except SourceUnavailableError:
        return fn
    if converted is not fn:
        note_function(fn)
    return converted


def convert_call(f):
    if isinstance(f, types.FunctionType):
        if getattr(f, "_d2s_grad_mode", None) is not None:
            return _grad_mode_call(f)
        return _convert_function_or_self(f)
    if isinstance(f, (types.MethodType, types.BuiltinMethodType)):
        # np.random.beta, random.random: drawn on every run while tracing
        drawn = draw_call(f)
        if drawn is not None:
            return drawn
        if not isinstance(f, types.MethodType):
            return _convert_special_callable(f)
    if isinstance(f, types.MethodType):
        func = f.__func__
        if not isinstance(func, types.FunctionType):
            return f
        converted = convert_call(func)
        return f if converted is func else types.MethodType(converted, f.__self__)
    if isinstance(f, functools.partial):
        converted = convert_call(f.func)
        return f if converted is f.func else functools.partial(converted, *f.args, **f.keywords)
    return _convert_special_callable(f)


_grad_mode_calls = weakref.WeakKeyDictionary()  # decorated function -> its converted call


def _grad_mode_call(wrapper):
    """A function decorated with `@d2s.no_grad()` (or `enable_grad()`): its own
    code is converted (a tensor `if` in it works) and still runs in that grad
    mode. The builder detaches each op built under `no_grad()` (see
    `static.builder`), so gradients stop at the values the call computes, as
    on the eager tape, while an argument it hands back unchanged keeps its
    gradient path, as eagerly."""
    call = _grad_mode_calls.get(wrapper)
    if call is None:
        call = _grad_mode_calls[wrapper] = _converted_grad_mode_call(wrapper)
    return call


def _converted_grad_mode_call(wrapper):
    inner = convert_call(wrapper.__wrapped__)
    if inner is wrapper.__wrapped__:
        return wrapper
    from d2s.core.state import enable_grad, no_grad
    enabled = wrapper._d2s_grad_mode

    @functools.wraps(wrapper, updated=())  # not its `_d2s_grad_mode`: this is no wrapper
    def call(*args, **kwargs):
        with (enable_grad() if enabled else no_grad()):
            return inner(*args, **kwargs)
    return call


def _convert_special_callable(f):
    """Callable objects: a d2s Layer (duck-typed: `forward` and `training`) runs
    its `forward` converted (a StaticFunction forward traces inline by itself);
    other objects run their converted `__call__`."""
    if isinstance(f, type):
        return f
    forward = getattr(f, "forward", None)
    if forward is not None and hasattr(f, "training"):
        converted = convert_call(forward)
        if getattr(f, "_forward_pre_hooks", None) or getattr(f, "_forward_post_hooks", None):
            return functools.partial(_hooked_call, f, converted)
        return f if converted is forward else converted
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):
        converted = _convert_function_or_self(call)
        if converted is not call:
            return types.MethodType(converted, f)
    return f


def _hooked_call(layer, forward, *inputs, **kwargs):
    """A Layer with forward hooks, called from converted code: its hooks
    (converted too) around its converted forward, as `Layer.__call__` runs them."""
    return layer._call_forward(forward, inputs, kwargs, wrap=convert_call)
