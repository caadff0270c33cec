"""Backends: the registry of what runs a Program, by name.

A backend is a declared type (`d2s.backends.base.Backend`); this module maps
names to them, imports one only when a program first runs on it (the
default install never imports jax), and holds the one fallback policy: a
program, or a part of one, that a backend cannot run (`Unsupported`) runs
on the numpy backend after one `BackendFallbackWarning` naming the op, the
user's file and line (`fallback_executable`, `fallback_runner`, `warn_fallback`).

"numpy" (the default) runs generated Python over the numpy kernels
(`d2s.backends.numpy`); "xla" lowers the program to XLA through JAX
(`d2s.backends.xla`); `register_backend(name, loader)` adds another. The
global default is `set_backend(name)` or, until that is called, the
environment variable `D2S_BACKEND`, read once per process when the default
is first asked for (every call of a converted function asks).

`jit` reaches backends only through this module; `static` (below the
backends) reaches it by name (`d2s.static.backend`).
"""
from __future__ import annotations

import importlib
import os
import threading

from .base import BackendFallbackWarning, Unsupported

# The backend every other falls back to: it runs every op.
FALLBACK = "numpy"

# name -> loader: a callable returning the Backend, or "module:attribute"
_LOADERS = {"numpy": "d2s.backends.numpy:BACKEND", "xla": "d2s.backends.xla:BACKEND"}
_LOADED = {}  # name -> its Backend, once loaded
_LOCK = threading.Lock()

# "default": set_backend's choice (None: D2S_BACKEND's); "env": D2S_BACKEND's, once read
_STATE = {"default": None, "env": None}


def register_backend(name, loader):
    """Register backend `name`: `loader()` returns its Backend (called on first
    use), or `loader` is "package.module:attribute" naming it. Registering a
    name again replaces it (its loaded Backend too)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_backend: the name must be a non-empty str, got {name!r}")
    if not (callable(loader) or isinstance(loader, str) and ":" in loader):
        raise TypeError("register_backend: the loader must be a callable returning the "
                        "Backend or a 'module:attribute' string")
    with _LOCK:
        _LOADERS[name] = loader
        _LOADED.pop(name, None)


def unregister_backend(name):
    """Forget backend `name` (the global default falls back to numpy if it was it)."""
    if name == FALLBACK:
        raise ValueError(f"the {FALLBACK!r} backend cannot be unregistered")
    with _LOCK:
        _LOADERS.pop(name, None)
        _LOADED.pop(name, None)
        if _STATE["default"] == name:
            _STATE["default"] = None
        if _STATE["env"] == name:
            _STATE["env"] = None


def names():
    """The registered backends' names."""
    return list(_LOADERS)


def _checked(name, where):
    if name not in _LOADERS:
        raise ValueError(f"{where}: unknown backend {name!r}; choose one of "
                         f"{', '.join(repr(b) for b in _LOADERS)}")
    return name


def set_backend(name):
    """Make `name` (a registered backend) the backend of programs that do not choose one."""
    _STATE["default"] = _checked(name, "set_backend")


def get_backend():
    """The global default backend's name."""
    return _STATE["default"] or _STATE["env"] or _read_env()


def _read_env():
    name = _STATE["env"] = _checked(os.environ.get("D2S_BACKEND") or FALLBACK, "D2S_BACKEND")
    return name


def resolve(name):
    """`name`, or the global default when it is None (an unknown name is an error)."""
    return get_backend() if name is None else _checked(name, "backend")


def get(name=None):
    """The Backend registered as `name` (None: the global default), loaded on
    first use. A missing optional dependency raises ImportError with the pip
    command."""
    name = resolve(name)
    backend = _LOADED.get(name)
    if backend is None:
        with _LOCK:
            backend = _LOADED.get(name)
            if backend is None:
                loader = _LOADERS[name]
                if isinstance(loader, str):
                    module, attr = loader.split(":")
                    backend = getattr(importlib.import_module(module), attr)
                else:
                    backend = loader()
                _LOADED[name] = backend
    return backend


# ---- the fallback policy -----------------------------------------------------------------
def fallback_message(backend_name, error):
    """The one warning's text: the op the backend stopped at, the user's file and line."""
    op = getattr(error, "op", None)
    where = ""
    if op is not None and op.origin:
        where = f" at {op.origin[0]}, line {op.origin[1]}"
        if len(op.origin) > 2 and op.origin[2]:
            where += f" ({op.origin[2]})"
    what = f"op '{op.type}'{where}" if op is not None else "this program"
    reason = getattr(error, "reason", None) or str(error)
    return (f"{backend_name} backend: {what} cannot be lowered: {reason}; the program runs "
            f"on the {FALLBACK} backend")


def warn_fallback(backend_name, error):
    """Warn once (per program part) that it runs on numpy; returns the message."""
    from ..static.origins import warn_in_user_code
    message = fallback_message(backend_name, error)
    warn_in_user_code(message, BackendFallbackWarning)
    return message


def fallback_executable(parts):
    """The numpy backend's executable of `parts`: what a part another backend
    cannot run runs on (the caller has warned, see `warn_fallback`). The
    parts' own one when they keep theirs per backend (`parts.executable(name)`)."""
    own = getattr(parts, "executable", None)
    if own is not None:
        return own(FALLBACK)
    return get(FALLBACK).executable(parts)


def executable(name, parts):
    """`parts` on backend `name`: its Executable, or numpy's after one warning
    when the backend refuses the whole program (`Unsupported`). A backend
    that does not fall back part by part itself (`falls_back_itself`, as
    xla does to keep its device values) gets `PartsFallBack` around its
    executable: a part that raises `Unsupported` runs on numpy from then on."""
    backend = get(name)
    try:
        exe = backend.executable(parts)
    except Unsupported as e:
        if backend.name == FALLBACK:
            raise
        warn_fallback(backend.name, e)
        return fallback_executable(parts)
    if getattr(backend, "falls_back_itself", False):
        return exe
    return PartsFallBack(backend.name, exe, parts)


class PartsFallBack:
    """An Executable whose parts each run on `exe` until it raises
    `Unsupported`, then on the numpy backend (after one warning per part)."""

    plain_call = None
    text_needs_feeds = True

    def __init__(self, name, exe, parts):
        self.name = name
        self.exe = exe
        self.parts = parts
        self._on_numpy = set()  # the parts that fell back
        self.text_needs_feeds = getattr(exe, "text_needs_feeds", True)

    def _run(self, part, *args):
        if part not in self._on_numpy:
            try:
                return getattr(self.exe, part)(*args)
            except Unsupported as e:
                self._on_numpy.add(part)
                warn_fallback(self.name, e)
        return getattr(fallback_executable(self.parts), part)(*args)

    def forward(self, feeds, captured, feed_attrs=None):
        return self._run("forward", feeds, captured, feed_attrs)

    def forward_for_grad(self, feeds, captured, feed_attrs=None):
        on_numpy = "forward_for_grad" in self._on_numpy
        values, saved = self._run("forward_for_grad", feeds, captured, feed_attrs)
        on_numpy = on_numpy or "forward_for_grad" in self._on_numpy
        arrays = list(feeds) + [t._value for t in captured]
        return values, (on_numpy, saved, arrays)

    def backward(self, saved, cts, wanted):
        on_numpy, saved, arrays = saved
        numpy = fallback_executable(self.parts)
        if on_numpy:  # the forward ran on numpy: so does its backward
            return numpy.backward(saved, cts, wanted)
        if "backward" not in self._on_numpy:
            try:
                return self.exe.backward(saved, cts, wanted)
            except Unsupported as e:
                self._on_numpy.add("backward")
                warn_fallback(self.name, e)
        return numpy.gradients_from(arrays, cts, wanted)  # the forward again, on numpy

    def step(self, tensors):
        return self._run("step", tensors)

    def text(self, feeds):
        return self._run("text", feeds)

    def output_attrs(self, feeds, captured, feed_attrs, grad=False):
        if "forward" in self._on_numpy or not hasattr(self.exe, "output_attrs"):
            return None
        return self.exe.output_attrs(feeds, captured, feed_attrs, grad)


def runner(name, program, feed_names, fetch_names):
    """What `static.Executor` runs (program, feeds, fetches) with on backend
    `name`; numpy's after one warning when the backend refuses it (a runner
    refusing it later, for some feeds, falls back itself)."""
    backend = get(name)
    try:
        return backend.runner(program, feed_names, fetch_names)
    except Unsupported as e:
        if backend.name == FALLBACK:
            raise
        warn_fallback(backend.name, e)
        return get(FALLBACK).runner(program, feed_names, fetch_names)


__all__ = ["register_backend", "unregister_backend", "names", "get", "set_backend",
           "get_backend", "resolve", "executable", "runner", "fallback_executable",
           "warn_fallback", "BackendFallbackWarning", "Unsupported", "FALLBACK",
           "PartsFallBack"]
