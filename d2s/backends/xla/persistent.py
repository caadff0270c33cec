"""The persistent compilation cache, across processes.

JAX's compilation cache, in d2s's cache folder (`d2s.cache_dir`:
`$D2S_CACHE_DIR`, by default a per-user folder; set to '' for none) under
`xla/`, serves the compiles the lowered-program cache (`lowered_cache`,
which stores its executables itself) leaves out: a later process loads an
executable instead of compiling it. The folder (and the thresholds that would skip our small,
fast compiles) are set only around d2s's own compile calls, with JAX's
scoped configuration states, so the user's global JAX configuration is
left as it was. Should those states be missing (another JAX version),
compiles simply run uncached. Programs with host effects (print) are
compiled uncached: JAX does not cache them.
"""
from __future__ import annotations

import contextlib

from ... import cache_dir as _cache_dir

try:  # scoped (context-manager) forms of JAX's configuration options
    from jax._src import config as _jax_config
    _STATES = (_jax_config.compilation_cache_dir,
               _jax_config.persistent_cache_min_compile_time_secs,
               _jax_config.persistent_cache_min_entry_size_bytes)
except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
    _STATES = None

SUBFOLDER = "xla"


def cache_dir():
    """The folder of XLA executables, or None when caching is off (or the
    folder is unusable: reported once by `d2s.cache_dir`)."""
    return _cache_dir.subfolder(SUBFOLDER)


def compile(lowered, cacheable=True):
    """`lowered.compile()`, through the persistent cache when it is on."""
    where = cache_dir() if cacheable and _STATES is not None else None
    if where is None:
        return lowered.compile()
    directory, min_time, min_size = _STATES
    with contextlib.ExitStack() as scope:
        scope.enter_context(directory(where))
        scope.enter_context(min_time(0))
        scope.enter_context(min_size(-1))  # -1: no minimum, and no global override
        return lowered.compile()
