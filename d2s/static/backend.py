"""Which backend runs programs, chosen by name.

"numpy" (the default) runs generated Python over the numpy kernels; "xla"
lowers the program to XLA through JAX (`d2s.backends.xla`). The global
default is `set_backend(name)` or, until that is called, the environment
variable `D2S_BACKEND`, read once per process when the default is first
asked for (every call of a converted function asks: reading `os.environ`
each time cost about 1 µs per call). A backend's package is imported by name
when a program first runs on it: `static` never imports `d2s.backends`, and the
default install never imports jax.
"""
from __future__ import annotations

import importlib
import os

# name -> module implementing it (None: the numpy executor in `static` itself)
BACKENDS = {"numpy": None, "xla": "d2s.backends.xla"}

# "default": set_backend's choice (None: D2S_BACKEND's); "env": D2S_BACKEND's, once read
_STATE = {"default": None, "env": None}


class BackendFallbackWarning(UserWarning):
    """A program ran on the numpy backend because the chosen backend cannot
    run one of its ops (the message names the op, the file and the line)."""


def _checked(name, where):
    if name not in BACKENDS:
        raise ValueError(f"{where}: unknown backend {name!r}; choose one of "
                         f"{', '.join(repr(b) for b in BACKENDS)}")
    return name


def set_backend(name):
    """Make `name` ("numpy" or "xla") the backend of programs that do not choose one."""
    _STATE["default"] = _checked(name, "set_backend")


def get_backend():
    """The global default backend's name."""
    return _STATE["default"] or _STATE["env"] or _read_env()


def _read_env():
    name = _STATE["env"] = _checked(os.environ.get("D2S_BACKEND") or "numpy", "D2S_BACKEND")
    return name


def resolve(name):
    """`name`, or the global default when it is None."""
    return get_backend() if name is None else _checked(name, "backend")


def implementation(name):
    """The module running backend `name` (None for numpy), imported on first use.
    A missing optional dependency raises ImportError with the pip command."""
    module = BACKENDS[resolve(name)]
    return None if module is None else importlib.import_module(module)
