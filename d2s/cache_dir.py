"""Where d2s keeps files between processes: one per-user folder, or none.

`cache_root()` is `$D2S_CACHE_DIR` when set (set but empty: no caching at
all), else `$XDG_CACHE_HOME/d2s`, else `~/.cache/d2s` (on Windows
`%LOCALAPPDATA%\\d2s`).  Each user of the folder takes a subfolder:
`subfolder("convert")` holds converted source; a backend keeps its compiled
code in another (`subfolder("xla")`), so one variable moves or disables
everything d2s caches.

The cache holds code that d2s compiles and runs, so whoever can write into
it can run code as its user.  Hence, at every use (each read or write of an
entry, each time a backend asks for its folder; never once per process, as
a folder can be swapped later):

* the folder is reached from `/` one component at a time, each opened
  relative to its parent's descriptor with `O_NOFOLLOW` and checked with
  `fstat` on that descriptor (what was checked is what is used): the cache
  root and its subfolders must be owned by the user and writable by no one
  else; each ancestor must be owned by the user or by root and be writable
  by no one else, unless it is sticky (like `/tmp`: others cannot rename or
  remove what they do not own) and the next component is the user's or
  root's.  Ancestors of the user's home folder are the system's and are
  not checked;
* an entry is opened relative to the folder's descriptor with `O_NOFOLLOW`
  (a symbolic link planted as an entry is not followed) and used only when
  `fstat` says it is a regular file of the user's, writable by no one else.

Whatever fails is ignored, the caller going on without the cache, with one
`RuntimeWarning` per process and reason.  The user id compared is
`_uid()`, so tests can play another user (root passes as "root" too).

Entries carry a checksum (`digest`, over their name and content) that their
reader verifies: a damaged or renamed entry is never used.  Folders are
created 0o700 and entries 0o600, written through a temporary file renamed
into place (a concurrent reader sees the old entry or the new one).

Every folder is bounded: when its entries pass `$D2S_CACHE_MAX_MB`
(megabytes per folder; `DEFAULT_MAX_MB` when unset, 0 or negative for no
bound), the least recently used are removed, oldest first, until it holds
three quarters of that.  "Used" is the entry's modification time, which a
read refreshes (`read_entry`); files another process removed meanwhile are
skipped.  A process does not list the folder at its first write when the
size recorded by a recent listing of a large folder (the `.size` file)
leaves room: several
processes writing at once may pass the bound for a while, until the next
listing.  A write that fails (full or read-only disk) turns writing off for
the folder with one warning.  Standard library only, so any layer may use it.
"""
import errno
import hashlib
import os
import stat
import tempfile
import threading
import time
import warnings

__all__ = ["ENV_VAR", "MAX_MB_VAR", "DEFAULT_MAX_MB", "cache_root", "subfolder",
           "report_unusable", "read_entry", "write_entry", "write_atomic", "digest",
           "evict", "max_bytes", "code_digest", "function_digest"]

ENV_VAR = "D2S_CACHE_DIR"
MAX_MB_VAR = "D2S_CACHE_MAX_MB"
DEFAULT_MAX_MB = 1024
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 3600    # a temporary file this old was left by a killed writer

_lock = threading.Lock()
_unusable = set()   # folders whose writes failed (full, read-only): not written again
_warned = set()     # reasons (and roots) reported once
_sizes = {}         # folder -> bytes it holds, as far as this process knows

_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) \
    | getattr(os, "O_CLOEXEC", 0)
_O_FILE = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_SECURE = os.name == "posix" and hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd


def _uid():
    """The user whose cache this is (a function: tests play another user)."""
    return os.geteuid()


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


def _warn_once(reason, message):
    with _lock:
        if reason in _warned:
            return
        _warned.add(reason)
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def report_unusable(path, reason):
    """Warn once that `path` cannot be used (`reason`), and stop writing there."""
    with _lock:
        if path in _unusable:
            return
        _unusable.add(path)
    _warn_once(("unusable", os.path.dirname(path)),
               f"d2s: not caching in {path} ({reason}); going on without the cache. "
               f"Set {ENV_VAR} to a writable folder, or to '' to turn caching off.")


def _refuse(path, reason, kind=None):
    """Warn once per reason (or `kind` of reason) that the folder at `path`
    is not safe to use."""
    _warn_once(("unsafe", kind or reason),
               f"d2s: not using the cache folder {path}: {reason}; a folder others can "
               f"write lets them plant code that d2s runs. Going on without the cache; "
               f"set {ENV_VAR} to a private folder (or to '' to turn caching off).")


class _Unsafe(Exception):
    pass


_homes = {}      # uid -> its home folder, resolved
_real_roots = {}  # cache root -> its resolved path (dropped when a link is met on the way)


def _home():
    uid = _uid()
    home = _homes.get(uid)
    if home is None:
        try:
            import pwd
            home = pwd.getpwuid(uid).pw_dir
        except (ImportError, KeyError):
            home = os.path.expanduser("~")
        home = _homes[uid] = os.path.realpath(home) if home else "/"
    return home


def _skipped_ancestors(real_root):
    """The system's folders above the user's home, when the root is inside it:
    not checked (see the module doc)."""
    home = _home()
    skip = set()
    if real_root.startswith(home.rstrip(os.sep) + os.sep):
        above = os.path.dirname(home)
        while True:
            skip.add(above)
            if above == os.path.dirname(above):
                break
            above = os.path.dirname(above)
    return skip


def _check(info, where, uid, *, own):
    """Raise `_Unsafe` unless the folder `info` (an fstat) may be used. `own`:
    part of the cache (the user's alone); else an ancestor (the user's or
    root's; writable by others only when sticky: then each entry in it is
    its owner's, and the next folder on the way is checked as the user's or
    root's)."""
    if not stat.S_ISDIR(info.st_mode):
        raise _Unsafe(f"{where} is not a folder")
    if own:
        if info.st_uid != uid:
            raise _Unsafe(f"{where} is owned by another user")
    elif info.st_uid not in (uid, 0):
        raise _Unsafe(f"{where} (an enclosing folder) is owned by another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        if own or not info.st_mode & stat.S_ISVTX:
            raise _Unsafe(f"{where} is writable by other users")


def _is_link(name, dir_fd):
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _open_folder(name, create=True):
    """A descriptor of `cache_root()/name`, reached and checked as the module
    doc says (created when missing and `create`), and its path; None when
    caching is off or the folder is unusable (reported once)."""
    root = cache_root()
    if root is None:
        return None
    path = os.path.join(root, name)
    if not _SECURE:   # pragma: no cover - no descriptor-relative opens (Windows)
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            return None, path   # (no descriptor: the callers use the path)
        except OSError as exc:
            report_unusable(path, exc.strerror or str(exc))
            return None
    try:
        real_root = _real_roots.get(root)
        if real_root is None:
            real_root = _real_roots[root] = os.path.realpath(root)
        parts = [p for p in real_root.split(os.sep) if p] + [name]
        skip = _skipped_ancestors(real_root)
        n_root = len(parts) - 1     # parts[n_root - 1]: the root; parts[n_root]: the subfolder
        # (missing folders on the way are created 0o700, as `makedirs` would, but private)
        fd = os.open("/", _O_DIR)
    except OSError as exc:
        report_unusable(path, exc.strerror or str(exc))
        return None
    walked = ""
    uid = _uid()
    try:
        if os.sep not in skip:
            _check(os.fstat(fd), os.sep, uid, own=False)
        for i, part in enumerate(parts):
            walked += os.sep + part
            try:
                child = os.open(part, _O_DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                child = os.open(part, _O_DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd):
                    # (swapped in since realpath, or a link as a cache folder)
                    raise _Unsafe(f"{walked} is a symbolic link") from None
                raise
            os.close(fd)
            fd = child
            info = os.fstat(fd)
            if walked not in skip:
                _check(info, walked, uid, own=i >= n_root - 1)
        return fd, path
    except FileNotFoundError:
        os.close(fd)
        if not create:
            return None   # nothing there yet
        report_unusable(path, "not found")
        return None
    except _Unsafe as unsafe:
        os.close(fd)
        _real_roots.pop(root, None)   # resolved afresh next time
        _refuse(root, str(unsafe))
        return None
    except OSError as exc:
        os.close(fd)
        report_unusable(path, exc.strerror or str(exc))
        return None


def subfolder(name):
    """`cache_root()/name`, created user-only and checked now (see the module
    doc); None when caching is off or the folder is unusable."""
    opened = _open_folder(name)
    if opened is None:
        return None
    fd, path = opened
    if fd is not None:
        os.close(fd)
    return path


def digest(name, *parts):
    """Hex checksum of an entry named `name` made of `parts` (bytes): a renamed
    entry does not match either."""
    h = hashlib.blake2b(name.encode("utf-8", "surrogatepass") + b"\0", digest_size=32,
                        person=b"d2s-cache-entry")
    for part in parts:
        h.update(part)
    return h.hexdigest()


def _entry_ok(info):
    return (stat.S_ISREG(info.st_mode) and info.st_uid == _uid()
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def read_entry(folder, name):
    """The bytes of entry `name` in `subfolder(folder)`, or None (absent,
    unusable folder, a link, not the user's: see the module doc). A hit
    marks the entry used now (for eviction). The caller checks its checksum."""
    opened = _open_folder(folder)
    if opened is None:
        return None
    dfd, path = opened
    if dfd is None:   # pragma: no cover - Windows: by path, without the checks
        try:
            with open(os.path.join(path, name), "rb") as f:
                return f.read()
        except OSError:
            return None
    try:
        fd = os.open(name, _O_FILE, dir_fd=dfd)
    except OSError as exc:
        os.close(dfd)
        if exc.errno == errno.ELOOP:
            _refuse(os.path.join(cache_root() or "", folder),
                    f"its entry {name} is a symbolic link", kind=("link", folder))
        return None
    try:
        info = os.fstat(fd)
        if not _entry_ok(info):
            _refuse(os.path.join(cache_root() or "", folder),
                    f"its entry {name} is not a private file of this user's",
                    kind=("foreign", folder))
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read()
        if time.time() - info.st_mtime > 1.0:   # (one write per second at most)
            try:
                os.utime(fd)
            except OSError:
                pass
        return data
    except OSError:
        return None
    finally:
        os.close(fd)
        os.close(dfd)


def write_entry(folder, name, data):
    """Write bytes `data` as entry `name` of `subfolder(folder)`: through a
    temporary file renamed into place, so a concurrent reader sees the old
    entry or the whole new one. Best effort: a failure turns writing off for
    the folder (one warning, see `report_unusable`), leaving no temporary
    file. May evict old entries (see the module doc)."""
    opened = _open_folder(folder)
    if opened is None:
        return
    dfd, path = opened
    if dfd is None:   # pragma: no cover - Windows: by path, without the checks
        _write_by_path(path, name, data)
        return
    if path in _unusable:
        os.close(dfd)
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path, prefix=_TMP_PREFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        # renamed within the checked descriptor: a folder swapped since is not written
        os.replace(os.path.basename(tmp), name, src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp = None
        _account(dfd, path, len(data))
    except (OSError, ValueError) as exc:
        report_unusable(path, getattr(exc, "strerror", None) or str(exc))
    finally:
        if tmp is not None:
            try:
                os.unlink(os.path.basename(tmp), dir_fd=dfd)
            except OSError:
                pass
        os.close(dfd)


def _write_by_path(folder, name, data):  # pragma: no cover - Windows
    if folder in _unusable:
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=_TMP_PREFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(folder, name))
        tmp = None
    except (OSError, ValueError) as exc:
        report_unusable(folder, getattr(exc, "strerror", None) or str(exc))
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_atomic(path, data):
    """`write_entry` for a path inside a subfolder of the cache root."""
    folder, name = os.path.split(path)
    write_entry(os.path.basename(folder), name, data)


# ---- eviction ---------------------------------------------------------------------------

def max_bytes():
    """Each folder's bound in bytes (`$D2S_CACHE_MAX_MB`), or None for none."""
    value = os.environ.get(MAX_MB_VAR, "").strip()
    try:
        mb = float(value) if value else DEFAULT_MAX_MB
    except ValueError:
        _warn_once(("max", value), f"d2s: {MAX_MB_VAR}={value!r} is not a number of "
                                   f"megabytes; using {DEFAULT_MAX_MB}")
        mb = DEFAULT_MAX_MB
    return None if mb <= 0 else int(mb * 1024 * 1024)


def _account(dfd, path, added):
    """Add `added` bytes to what `path` holds; evict when past the bound.
    A process learns what the folder holds from the size its last listing
    recorded (`_MARKER`, when younger than `_MARKER_AGE`: a large folder's
    listing, a `stat` per entry, would weigh on every first call), else by
    listing it; then it
    counts its own writes, and lists it again when they pass the bound."""
    limit = max_bytes()
    if limit is None:
        return
    with _lock:
        known = _sizes.get(path)
        if known is not None:
            _sizes[path] = known + added
            if known + added <= limit:
                return
    if known is None:
        recorded = _read_marker(dfd)
        if recorded is not None and recorded + added <= limit:
            _sizes[path] = recorded + added
            return
    total, count = _evict_fd(dfd, limit)
    _sizes[path] = total
    if count >= _MARKED_FROM:
        _write_marker(dfd, total)


_MARKED_FROM = 256     # entries from which a listing is worth recording
_MARKER = ".size"      # the bytes the folder held at its last listing
_MARKER_AGE = 600      # seconds a recorded size is trusted


def _read_marker(dfd):
    try:
        fd = os.open(_MARKER, _O_FILE, dir_fd=dfd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not _entry_ok(info) or time.time() - info.st_mtime > _MARKER_AGE:
            return None
        return int(os.read(fd, 32).decode("ascii"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _write_marker(dfd, total):
    try:
        fd = os.open(_MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                     0o600, dir_fd=dfd)
    except OSError:
        return
    try:
        os.write(fd, str(total).encode("ascii"))
    except OSError:
        pass
    finally:
        os.close(fd)


def _entry_groups(dfd):
    """{entry: [size, last use, [file names]]}; JAX's entries are a
    `<key>-cache` file with its `<key>-atime` beside it: one entry."""
    groups = {}
    now = time.time()
    with os.scandir(dfd) as it:
        for item in it:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue   # removed meanwhile
            if not stat.S_ISREG(info.st_mode):
                continue
            name = item.name
            if name.startswith("."):   # temporary files, the size marker
                if name.startswith(_TMP_PREFIX) and now - info.st_mtime > _STALE_TMP_SECONDS:
                    _unlink(dfd, name)
                continue
            key = name[:-6] if name.endswith(("-cache", "-atime")) else name
            group = groups.setdefault(key, [0, 0.0, []])
            group[0] += info.st_size
            group[1] = max(group[1], info.st_mtime)
            group[2].append(name)
    return groups


def _unlink(dfd, name):
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass   # another process removed it first


def _evict_fd(dfd, limit):
    groups = _entry_groups(dfd)
    total = sum(g[0] for g in groups.values())
    count = len(groups)
    if total <= limit:
        return total, count
    target = limit * 3 // 4
    for size, _, names in sorted(groups.values(), key=lambda g: g[1]):
        if total <= target:
            break
        for name in sorted(names, key=lambda n: n.endswith("-atime")):
            _unlink(dfd, name)
        total -= size
        count -= 1
    return total, count


def evict(folder):
    """Bound `subfolder(folder)` now (for folders d2s does not write itself:
    JAX writes `xla/`); returns the bytes it holds, or None."""
    limit = max_bytes()
    opened = _open_folder(folder, create=False)
    if opened is None or limit is None or opened[0] is None:
        if opened is not None and opened[0] is not None:
            os.close(opened[0])
        return None
    dfd, path = opened
    try:
        total, count = _evict_fd(dfd, limit)
        _sizes[path] = total
        if count >= _MARKED_FROM:
            _write_marker(dfd, total)
        return total
    except OSError:
        return None
    finally:
        os.close(dfd)


# ---- what a key says of code ------------------------------------------------------------

def _token(value):
    if isinstance(value, (tuple, frozenset)):
        inner = sorted(_token(v) for v in value) if isinstance(value, frozenset) else \
            [_token(v) for v in value]
        return f"{type(value).__name__}({','.join(inner)})"
    return f"{type(value).__name__}:{value!r}"


def _feed(h, code):
    h.update(code.co_code)
    h.update(repr((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                   code.co_flags, code.co_names, code.co_varnames, code.co_freevars,
                   code.co_cellvars, code.co_name)).encode("utf-8", "surrogatepass"))
    for const in code.co_consts:
        if type(const) is type(code):
            _feed(h, const)
        else:
            h.update(_token(const).encode("utf-8", "surrogatepass") + b"\0")


def code_digest(code):
    """Hex digest of a code object's content (bytecode, constants, names,
    nested code): equal for the same source compiled alike, in any process."""
    h = hashlib.sha256()
    _feed(h, code)
    return h.hexdigest()


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def function_digest(fn):
    """Hex digest of what a function computes, as far as its code, defaults
    and plain closure values (numbers, text; others by type) say; for other
    callables, their type and name."""
    h = hashlib.sha256()
    code = getattr(fn, "__code__", None)
    if code is None:
        h.update(f"{type(fn).__qualname__} {getattr(fn, '__name__', '')}".encode())
        return h.hexdigest()
    _feed(h, code)
    for value in (fn.__defaults__ or ()):
        h.update((_token(value) if isinstance(value, _PLAIN) else type(value).__qualname__)
                 .encode("utf-8", "surrogatepass") + b"\0")
    for cell in (fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            value = None
        if callable(value) and hasattr(value, "__code__"):
            _feed(h, value.__code__)
        else:
            h.update((_token(value) if isinstance(value, _PLAIN) else type(value).__qualname__)
                     .encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()
