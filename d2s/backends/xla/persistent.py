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

JAX opens its cache once per process, in the folder configured at its first
cached compile, and keeps using that folder: a process whose d2s cache
folder changes later (or whose user set `jax_compilation_cache_dir`
first) shares that one folder with JAX. Entries are keyed by the compiled
module and options, so sharing a folder never serves another program.

Where d2s is the first to open JAX's cache in a process (the user set no
folder of their own), JAX is given d2s's store (`_CheckedStore`) in place
of its own files: each entry is read and written through
`d2s.cache_dir.read_entry`/`write_entry`, so the folder and the entry are
checked at every use as for d2s's other caches, the entry carries a
checksum of its name and bytes that a read verifies (a damaged entry is
compiled again, never deserialized), and the folder is bounded like the
others (`D2S_CACHE_MAX_MB`). A folder the user configured is JAX's own.
"""
from __future__ import annotations

import contextlib
import functools
import threading

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


_CACHE_HIT = "/jax/compilation_cache/cache_hits"
_watch = threading.local()   # .hits: the list of the innermost `watching_cache_hits`
_listening = []              # [True] once the listener is registered


def _on_event(event, **kwargs):
    hits = getattr(_watch, "hits", None)
    if hits is not None and event == _CACHE_HIT:
        hits.append(event)


@contextlib.contextmanager
def watching_cache_hits():
    """A list that collects the compilation-cache hits of this thread's
    compiles inside the block.

    Whether a compile reads JAX's persistent cache is not only ours to say:
    JAX decides once per process that it uses the cache, and from then on
    reads the folder it first opened for every compile, scoped or not (a
    user's own `jax_compilation_cache_dir` too). An executable JAX loaded
    from there serializes without its kernels (jaxlib 0.10 on CPU: the
    process loading those bytes fails with "Function ... not found"), so a
    caller that means to store the executable asks whether it was loaded.
    """
    if not _listening:
        from jax import monitoring
        monitoring.register_event_listener(_on_event)
        _listening.append(True)
    outer = getattr(_watch, "hits", None)
    _watch.hits = hits = []
    try:
        yield hits
    finally:
        _watch.hits = outer


def _cache_enabled():
    try:
        return bool(_jax_config.enable_compilation_cache.value)
    except AttributeError:  # pragma: no cover - other JAX versions
        return False


_CHECKSUM = 32   # bytes of `cache_dir.digest` after each entry


@functools.lru_cache(maxsize=None)
def _checked_store():
    """A JAX compilation-cache store on `cache_dir`'s checked entries (see the
    module doc), or None where JAX's cache interface is not the expected one."""
    try:
        from jax._src.compilation_cache_interface import CacheInterface
    except ImportError:  # pragma: no cover - other JAX versions
        return None

    class _CheckedStore(CacheInterface):
        def __init__(self, path):
            import pathlib
            self._path = pathlib.Path(path)

        def get(self, key):
            name = f"{key}-cache"
            data = _cache_dir.read_entry(SUBFOLDER, name)
            if data is None or len(data) < _CHECKSUM:
                return None
            value = data[:-_CHECKSUM]
            if bytes.fromhex(_cache_dir.digest(name, value)) != data[-_CHECKSUM:]:
                return None   # damaged: compiled again (and rewritten)
            return value

        def put(self, key, value):
            name = f"{key}-cache"
            _cache_dir.write_entry(SUBFOLDER, name,
                                   value + bytes.fromhex(_cache_dir.digest(name, value)))

        def clear(self):
            pass
    return _CheckedStore


def _install(where):
    """Give JAX d2s's checked store for its persistent cache, unless JAX has
    opened its cache already (once per process, or again after JAX's
    `reset_cache`)."""
    try:
        from jax._src import compilation_cache as cc
        store = _checked_store()
        if store is None:
            return
        with cc._cache_initialized_mutex:
            if cc._cache_initialized or cc._cache is not None:
                return
            cc._cache = store(where)
            cc._cache_initialized = True
    except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
        return


def compile(lowered, cacheable=True):
    """`lowered.compile()`, through the persistent cache when it is on. An
    executable not `cacheable` is kept out of JAX's cache where d2s opened
    it for this process already (see `watching_cache_hits`): else a compile
    slower than JAX's threshold (on a loaded machine) would be written
    there, and a later process, served from it, could not store it. (A
    cache the user configured is the user's: left to its own settings.)"""
    where = cache_dir() if cacheable and _STATES is not None else None
    if where is None:
        if _STATES is None or _STATES[0].value is not None:
            return lowered.compile()
        with _STATES[1](float("inf")):  # no compile is that slow: never written
            return lowered.compile()
    directory, min_time, min_size = _STATES
    if directory.value is None and _cache_enabled():
        _install(where)
    with contextlib.ExitStack() as scope:
        scope.enter_context(directory(where))
        scope.enter_context(min_time(0))
        scope.enter_context(min_size(-1))  # -1: no minimum, and no global override
        return lowered.compile()
