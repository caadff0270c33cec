"""`static`'s way to the backend registry (`d2s.backends`), which sits above it.

`static` never imports the backends' packages: `d2s.static.Executor` finds
the registry by name when it first needs it, and everything here forwards
to it (`get_backend`, `set_backend`, `resolve`, `BackendFallbackWarning`).
"""
from __future__ import annotations

import importlib

_REGISTRY = []  # the `d2s.backends` module, once imported


def registry():
    """The `d2s.backends` module (the registry), imported on first use."""
    if not _REGISTRY:
        _REGISTRY.append(importlib.import_module("d2s.backends"))
    return _REGISTRY[0]


def set_backend(name):
    """Make `name` the backend of programs that do not choose one (`d2s.backends`)."""
    registry().set_backend(name)


def get_backend():
    """The global default backend's name."""
    return registry().get_backend()


def resolve(name):
    """`name`, or the global default when it is None."""
    return registry().resolve(name)


def __getattr__(name):
    if name == "BackendFallbackWarning":  # (defined with the backends' interface)
        return registry().BackendFallbackWarning
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
