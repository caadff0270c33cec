"""`to_static` and `not_to_static`."""
from __future__ import annotations

import types

from .. import backends as backend_state
from .static_function import StaticFunction


def _is_layer(obj):
    # Duck-typed: jit sits below nn and never imports it.
    return (not isinstance(obj, (types.FunctionType, types.MethodType, StaticFunction))
            and callable(getattr(obj, "forward", None)) and hasattr(obj, "training"))


def to_static(function=None, input_spec=None, full_graph=True, check_finite=False,
              backend=None, compile=None, build_strategy=None):
    """Convert a function, a Layer method, or a Layer instance into static programs.

    `@to_static`, `@to_static(input_spec=[...])` and `to_static(fn)` return a
    `StaticFunction`; `to_static(layer)` converts `layer.forward` in place and
    returns the same layer.

    A function that calls `loss.backward()`, `optimizer.step()` or
    `clear_grad()` becomes one training-step program (jit.train_step). With
    `check_finite=True` a step whose outputs, new parameters, gradients or
    optimizer state hold a NaN or infinity raises `FloatingPointError` and
    changes nothing.

    `backend` (a registered backend's name, see `d2s.backends`) runs its programs there; None follows the
    global default at each call (`set_backend`, `D2S_BACKEND`). The programs
    themselves are the same on every backend. Converting an already converted
    function (or Layer) again with another `backend` or `compile` gives it
    those, keeping the programs it built.

    `compile` (backends that compile, xla): None (the default) runs a call
    whose shape is not compiled yet on numpy while the program compiles in
    the background, unless `D2S_XLA_SYNC=1`; "sync" compiles on the calling
    thread (the first call of a shape waits for it); "async" is the
    background compile whatever `D2S_XLA_SYNC` says.

    `build_strategy` (PaddlePaddle's `paddle.static.BuildStrategy`: which
    fusions its executor applies) is accepted so that ported calls run
    unchanged, and unused: it chooses how Paddle runs a program, never
    what the program computes.
    """
    if backend is not None:
        backend_state.resolve(backend)  # an unknown name fails here, not at the first call
    _check_compile(compile)

    def again(sf):
        """A converted function asked for again: with the new backend/compile."""
        if (backend is None or backend == sf._backend) and \
                (compile is None or compile == sf._compile):
            return sf
        return sf.with_backend(backend if backend is not None else sf._backend, compile)

    def decorate(fn):
        if isinstance(fn, StaticFunction):
            return again(fn)
        if _is_layer(fn):
            forward = type(fn).forward
            if isinstance(forward, StaticFunction):
                bound = again(forward.__get__(fn, type(fn)))
                if bound is not forward.__get__(fn, type(fn)):
                    object.__setattr__(fn, "forward", bound)
                return fn
            sf = StaticFunction(forward, input_spec, full_graph, check_finite=check_finite,
                                backend=backend, compile=compile)
            object.__setattr__(fn, "forward", sf.__get__(fn, type(fn)))
            return fn
        if isinstance(fn, types.MethodType):
            return StaticFunction(fn.__func__, input_spec, full_graph,
                                  check_finite=check_finite, backend=backend,
                                  compile=compile).__get__(
                fn.__self__, type(fn.__self__))
        if not callable(fn):
            raise TypeError(f"to_static expects a function or a Layer, got {type(fn).__name__}")
        return StaticFunction(fn, input_spec, full_graph, check_finite=check_finite,
                              backend=backend, compile=compile)

    if function is None:
        return decorate
    return decorate(function)


def _check_compile(mode):
    if mode not in (None, "sync", "async"):
        raise ValueError(f"to_static: compile={mode!r}; write compile='sync' (compile on the "
                         "calling thread), compile='async' (run on numpy while the backend "
                         "compiles in the background) or leave it None (D2S_XLA_SYNC decides)")


def not_to_static(fn):
    """Mark `fn` never to be converted: called as plain Python while tracing."""
    fn._d2s_not_to_static = True
    return fn


def ignore_module(modules):
    """Paddle's `jit.ignore_module`: functions defined in `modules` (a list
    of module objects or names; submodules included) are not converted when
    converted code calls them; they run as plain Python while tracing (as
    library code does), so tensor-dependent `if`/`while` in them is not
    turned into program control flow."""
    from ..convert.api import ignore_modules
    ignore_modules(modules)
