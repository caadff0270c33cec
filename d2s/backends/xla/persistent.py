"""Opt-in persistent compilation cache, across processes.

With `D2S_CACHE_DIR` set, JAX's compilation cache under
`<D2S_CACHE_DIR>/xla` serves d2s's compiles: a later process loads an
executable instead of compiling it. The cache directory (and the thresholds
that would skip our small, fast compiles) are set only around d2s's own
compile calls, with JAX's scoped configuration states, so the user's global
JAX configuration is left as it was. Should those states be missing (another
JAX version), compiles simply run uncached.
"""
from __future__ import annotations

import contextlib
import os

try:  # scoped (context-manager) forms of JAX's configuration options
    from jax._src import config as _jax_config
    _STATES = (_jax_config.compilation_cache_dir,
               _jax_config.persistent_cache_min_compile_time_secs,
               _jax_config.persistent_cache_min_entry_size_bytes)
except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
    _STATES = None


def cache_dir():
    """`<D2S_CACHE_DIR>/xla`, or None when the cache is off."""
    root = os.environ.get("D2S_CACHE_DIR")
    return os.path.join(root, "xla") if root else None


def compile(lowered, cacheable=True):
    """`lowered.compile()`, through the persistent cache when it is on."""
    where = cache_dir() if cacheable else None
    if where is None or _STATES is None:
        return lowered.compile()
    os.makedirs(where, exist_ok=True)
    directory, min_time, min_size = _STATES
    with contextlib.ExitStack() as scope:
        scope.enter_context(directory(where))
        scope.enter_context(min_time(0))
        scope.enter_context(min_size(-1))  # -1: no minimum, and no global override
        return lowered.compile()
