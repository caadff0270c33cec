"""Where d2s keeps files between processes: one per-user folder, or none.

`cache_root()` is `$D2S_CACHE_DIR` when set (set but empty: no caching at
all), else `$XDG_CACHE_HOME/d2s`, else `~/.cache/d2s` (on Windows
`%LOCALAPPDATA%\\d2s`).  Each user of the folder takes a subfolder:
`subfolder("convert")` holds converted source; a backend keeps its compiled
code in another (`subfolder("xla")`), so one variable moves or disables
everything d2s caches.

Folders are created readable and writable by their owner only (0o700): the
cache holds code that d2s compiles and runs, so a folder that other users
could write to is refused.  A folder that cannot be created or written is
treated as absent from then on (callers go on without caching), and
reported with one `RuntimeWarning` per process and cache root: a full disk
fails every subfolder at once, and one warning says it.  Standard library
only, so any layer may use it.
"""
import os
import stat
import tempfile
import threading
import warnings

__all__ = ["ENV_VAR", "cache_root", "subfolder", "report_unusable", "write_atomic"]

ENV_VAR = "D2S_CACHE_DIR"

_lock = threading.Lock()
_ready = set()      # folders created (or found) usable in this process
_unusable = set()   # folders reported once and given up on
_warned = set()     # roots whose failure has been reported


def cache_root():
    """The root cache folder (absolute; maybe not created yet), or None when off."""
    value = os.environ.get(ENV_VAR)
    if value is not None:
        return os.path.abspath(os.path.expanduser(value)) if value.strip() else None
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(os.path.abspath(base), "d2s")


def report_unusable(path, reason):
    """Warn once that `path` cannot be used (`reason`), and stop using it."""
    root = os.path.dirname(path)
    with _lock:
        if path in _unusable:
            return
        _unusable.add(path)
        _ready.discard(path)
        if root in _warned:
            return
        _warned.add(root)
    warnings.warn(f"d2s: not caching in {path} ({reason}); going on without the cache. "
                  f"Set {ENV_VAR} to a writable folder, or to '' to turn caching off.",
                  RuntimeWarning, stacklevel=3)


def _check_private(path):
    """Why `path` must not be used (owned by someone else, writable by others), or None."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return "not a folder"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "owned by another user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "writable by other users"
    return None


def subfolder(name):
    """`cache_root()/name`, created user-only; None when caching is off or unusable."""
    root = cache_root()
    if root is None:
        return None
    path = os.path.join(root, name)
    if path in _ready:
        return path
    if path in _unusable:
        return None
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        os.makedirs(path, mode=0o700, exist_ok=True)
        problem = _check_private(path)
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem is not None:
        report_unusable(path, problem)
        return None
    with _lock:
        _ready.add(path)
    return path


def write_atomic(path, data):
    """Write bytes `data` at `path` through a temporary file renamed into place,
    so a concurrent reader sees the old file or the whole new one, never half.
    Best effort: a failure reports the folder unusable (one warning, see
    `report_unusable`) and leaves no temporary file behind."""
    folder = os.path.dirname(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        tmp = None
    except (OSError, ValueError) as exc:
        report_unusable(folder, getattr(exc, "strerror", None) or str(exc))
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
