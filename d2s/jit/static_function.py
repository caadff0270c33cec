"""`StaticFunction`: a function (or Layer method) run through cached static programs."""
from __future__ import annotations

import functools
import threading
import types
import warnings
import weakref

from ..convert import api as convert_api
from ..convert import origin as convert_origin
from ..convert.errors import D2SConversionError
from ..core import state
from ..core.tensor import Tensor
from .concrete_program import ConcreteProgram
from .signature import describe_change, make_signature
from .switch import log_code, to_static_enabled

MAX_PROGRAMS_BEFORE_WARNING = 10


class ProgramCache:
    """Signature key -> ConcreteProgram. `len()` is the number of programs built."""

    def __init__(self):
        self._programs = {}
        self._signatures = []

    def __len__(self):
        return len(self._programs)

    def __contains__(self, key):
        return key in self._programs

    def get(self, key):
        return self._programs.get(key)

    def add(self, signature, program):
        self._programs[signature.key] = program
        self._signatures.append(signature)

    def concrete_programs(self):
        return list(self._programs.values())

    def last_signature(self):
        return self._signatures[-1] if self._signatures else None


class StaticFunction:
    """Callable wrapper produced by `to_static`.

    In dynamic mode a call computes the input signature, builds the program
    for it once (converting the function's source the first time), and runs
    it on the eager inputs. Called while another program is being built, it
    traces inline into that program. With `enable_to_static(False)` it calls
    the original function.
    """

    def __init__(self, function, input_spec=None, full_graph=True, bound_self=None):
        self._function = function
        self._input_spec = list(input_spec) if input_spec is not None else None
        self._full_graph = full_graph
        self._bound_self = bound_self
        self._cache = ProgramCache()
        self._fast = {}  # fast key -> (ConcreteProgram, positions of tensor arguments)
        self._lock = threading.RLock()
        self._converted = None
        self._fallback_reason = None
        self._bound = weakref.WeakKeyDictionary() if bound_self is None else None
        functools.update_wrapper(self, function)

    # ---- descriptor: `@to_static` on a method -------------------------------------
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        try:
            bound = self._bound.get(instance)
        except TypeError:  # unhashable / not weak-referenceable instance
            bound = None
        if bound is None:
            bound = StaticFunction(self._function, self._input_spec, self._full_graph,
                                   bound_self=instance)
            try:
                self._bound[instance] = bound
            except TypeError:
                pass
            # Later lookups find it in the instance dict first (this is a
            # non-data descriptor): no weak-dict lookup per call.
            name = self._function.__name__
            if isinstance(getattr(instance, "__dict__", None), dict) \
                    and name not in instance.__dict__:
                instance.__dict__[name] = bound
        return bound

    # ---- contract attributes ------------------------------------------------------------
    @property
    def dygraph_function(self):
        if self._bound_self is not None:
            return types.MethodType(self._function, self._bound_self)
        return self._function

    @property
    def code(self):
        return self._get_converted()[1]

    @property
    def program_cache(self):
        return self._cache

    @property
    def concrete_program(self):
        """The most recently built program (PaddlePaddle's attribute)."""
        last = self._cache.last_signature()
        return None if last is None else self._cache.get(last.key)

    def get_concrete_program(self, *args, **kwargs):
        return self._concrete_for(args, kwargs)[0]

    # ---- calling ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not to_static_enabled() or self._fallback_reason is not None:
            return self.dygraph_function(*args, **kwargs)
        if not kwargs and not state._tls.builders and not state._global["static"]:
            # Cache-hit fast path (eager caller): a key of (type, shape, dtype,
            # stop_gradient) or (type, value) per positional argument.
            key = _fast_key(args, self._bound_self)
            hit = self._fast.get(key) if key is not None else None
            if hit is not None:
                concrete, positions = hit
                return concrete([args[i] for i in positions])
        if not state.in_dynamic_mode():
            # Inside another program's build (or static mode): trace inline.
            return self._call_converted(args, kwargs)
        try:
            concrete, signature = self._concrete_for(args, kwargs)
        except _FallBack:
            return self.dygraph_function(*args, **kwargs)
        tensors = [leaf for leaf, spec in zip(signature.leaves, signature.specs)
                   if spec is not None]
        if not kwargs:
            key = _fast_key(args, self._bound_self)
            positions = [i for i, a in enumerate(args) if type(a) is Tensor]
            if key is not None and len(positions) == len(tensors):
                self._fast[key] = (concrete, positions)
        return concrete(tensors)

    def _call_converted(self, args, kwargs):
        try:
            fn = self._get_converted()[0]
        except _FallBack:
            return self.dygraph_function(*args, **kwargs)
        if self._bound_self is not None:
            args = (self._bound_self,) + tuple(args)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            new = convert_origin.rewrite_exception(e)
            if new is e:
                raise
            raise new from None

    def _training_flag(self):
        return getattr(self._bound_self, "training", None)

    def _concrete_for(self, args, kwargs):
        fn = self._function
        if self._bound_self is not None:
            fn = _without_first_param(fn)
        signature = make_signature(fn, args, kwargs, self._input_spec, self._training_flag())
        concrete = self._cache.get(signature.key)
        if concrete is not None:
            return concrete, signature
        with self._lock:
            concrete = self._cache.get(signature.key)
            if concrete is None:
                concrete = self._build(signature)
        return concrete, signature

    def _build(self, signature):
        converted, _ = self._get_converted()
        try:
            concrete = ConcreteProgram.trace(converted, signature, self._bound_self)
        except _FallBack:
            raise
        except Exception as e:
            if not self._full_graph:
                self._fall_back(e)
            new = convert_origin.rewrite_exception(e)
            if new is e:
                raise
            raise new from None
        previous = self._cache.last_signature()
        self._cache.add(signature, concrete)
        if len(self._cache) > MAX_PROGRAMS_BEFORE_WARNING and previous is not None:
            warnings.warn(
                f"{self._function.__qualname__} has been converted into "
                f"{len(self._cache)} programs; the last one was built because "
                f"{describe_change(previous, signature)} changed. Use an InputSpec with "
                "None dims, or pass varying Python values as tensors.", stacklevel=4)
        return concrete

    def _get_converted(self):
        if self._converted is None:
            with self._lock:
                if self._converted is None:
                    try:
                        fn, code = convert_api.convert_function(self._function)
                    except D2SConversionError as e:
                        if self._full_graph:
                            raise
                        self._fall_back(e)
                    log_code(self._function.__qualname__, code)
                    self._converted = (fn, code)
        return self._converted

    def _fall_back(self, error):
        self._fallback_reason = str(error)
        warnings.warn(f"d2s.jit.to_static(full_graph=False): {self._function.__qualname__} "
                      f"runs eagerly because it cannot be converted: {error}", stacklevel=5)
        raise _FallBack()

    def __repr__(self):
        return f"<StaticFunction {self._function.__qualname__}>"


_SCALARS = (int, float, bool, str, type(None))


def _fast_key(args, bound_self):
    """A hashable key for flat positional calls of Tensors and Python scalars,
    or None (nested or other arguments take the full signature path)."""
    key = [getattr(bound_self, "training", None)]
    for a in args:
        t = type(a)
        if t is Tensor:
            v = a._value
            key.append((v.shape, v.dtype, a.stop_gradient))
        elif t in _SCALARS:
            key.append((t, a))
        else:
            return None
    return tuple(key)


class _FallBack(Exception):
    """Internal: conversion failed under full_graph=False; run eagerly."""


@functools.lru_cache(maxsize=None)
def _without_first_param(fn):
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    params = list(sig.parameters.values())[1:]

    def shim(*a, **k):  # pragma: no cover - only its signature is read
        pass
    shim.__signature__ = sig.replace(parameters=params)
    return shim
