"""The persistent conversion cache: converted code kept on disk between processes.

A second process converting the same function reads the converted code
object back (marshalled: Python's own bytecode format, which runs nothing
when read, as in a .pyc) instead of parsing, transforming and compiling
again.

An entry is a JSON file (never pickle) named by its key, in
`cache_dir.subfolder("convert")`.  The key hashes everything the converted
code depends on:

* the function's source text (the block actually parsed), where it is (file
  and first line: converted code is compiled at its user's line numbers)
  and the names the text is compiled against: name, qualified name
  (private-name mangling), free variables (closure or global), for a lambda
  its line and parameters;
* the converter's fingerprint: a hash of d2s's own `convert` sources, so an
  edited or upgraded d2s never reads a conversion made by another, even at
  the same version number;
* the Python implementation, version and bytecode magic number (the AST and
  the bytecode differ between them) and the optimisation level (`python -O`);
* the content of the function's code object (`cache_dir.code_digest`):
  an entry is written only after the text was checked to be the one that
  code was built from (`source_match.check`, by the caller), so a hit never
  stands for text edited since the function was defined.

Each entry holds a checksum (`cache_dir.digest` of its name and its other
fields, serialized canonically) verified on read: a flipped bit anywhere in
what the entry says is never converted code.  Entries are read and written
through `cache_dir.read_entry`/`write_entry` (the folder's and the entry's
ownership checks).

No line map is stored: the code's line numbers are the user's file lines
(`positions`), read from the function's text when asked for.  The converted
code's text is not stored either: `.code` prints it on demand
(`code_text`).  Entries are written to a temporary file and renamed into
place, so concurrent processes never read half an entry; one that does not
parse, or whose recorded key, fingerprint or Python differ from the
expected ones, is ignored (and replaced by the next conversion).  Write
failures (read-only or full disk) warn once and turn writing off;
conversion goes on.
"""
import base64
import binascii
import functools
import hashlib
import importlib.util
import json
import marshal
import os
import platform
import sys
import types

from .. import cache_dir
from ..bytecode_cache import with_filename

__all__ = ["FORMAT", "converter_fingerprint", "entry_key", "load", "store", "entry_path"]

FORMAT = 3
_SUBFOLDER = "convert"
# Code objects carry the file name they were compiled under (each conversion's
# own); an entry holds them under this one, so it is the same in any process,
# and the loader names them anew.
_STORED_FILENAME = "<d2s converted>"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def converter_fingerprint():
    """Hash of every source file of `d2s.convert`."""
    digest = hashlib.sha256(b"d2s.convert\n")
    prefix = len(_PACKAGE_DIR) + 1   # os.walk's folders start with it: relpath, cheaply
    for folder, subfolders, files in os.walk(_PACKAGE_DIR):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            digest.update(path[prefix:].encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(f.read())
            digest.update(b"\0")
    return digest.hexdigest()


def python_version():
    return (f"{sys.implementation.name} {platform.python_version()} "
            f"magic {importlib.util.MAGIC_NUMBER.hex()}")


def entry_key(fn, source):
    """The hex key of `fn`'s entry, converted from `source` (a FunctionSource)."""
    code = fn.__code__
    parts = [f"d2s conversion {FORMAT}", converter_fingerprint(), python_version(),
             f"optimize {sys.flags.optimize}", cache_dir.code_digest(code), source.filename,
             str(source.start), fn.__name__, fn.__qualname__, " ".join(code.co_freevars)]
    if source.is_lambda:
        params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        parts += [f"lambda at {code.co_firstlineno}", " ".join(params)]
    digest = hashlib.sha256("\n".join(parts).encode())
    digest.update(b"\0")
    digest.update("".join(source.lines).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def entry_path(fn, source):
    """Where `fn`'s entry lives (None when caching is off or unusable)."""
    folder = cache_dir.subfolder(_SUBFOLDER)
    if folder is None:
        return None
    return os.path.join(folder, entry_key(fn, source) + ".json")


def _checksum(name, entry):
    # ("function" names the module for people reading the file: not used)
    fields = {k: v for k, v in entry.items() if k not in ("checksum", "function")}
    return cache_dir.digest(name, json.dumps(fields, sort_keys=True).encode("utf-8"))


def _well_formed(entry, key):
    return (isinstance(entry, dict) and entry.get("format") == FORMAT
            and entry.get("key") == key
            and isinstance(entry.get("bytecode"), str)
            and entry.get("checksum") == _checksum(key + ".json", entry)
            and entry.get("fingerprint") == converter_fingerprint()
            and entry.get("python") == python_version())


def load(fn, source):
    """The code object stored for `fn` converted from `source` (what
    `loader.compile_function` made), or None."""
    if cache_dir.cache_root() is None:
        return None
    key = entry_key(fn, source)
    data = cache_dir.read_entry(_SUBFOLDER, key + ".json")
    if data is None:
        return None
    try:
        entry = json.loads(data.decode("utf-8"))
    except ValueError:       # (UnicodeDecodeError too) corrupt: convert (and rewrite)
        return None
    if not _well_formed(entry, key):
        return None
    try:
        code = marshal.loads(base64.b64decode(entry["bytecode"], validate=True))
    except (binascii.Error, EOFError, ValueError, TypeError):
        return None
    return code if type(code) is types.CodeType else None


def store(fn, source, code):
    """Write `code` as the entry of `fn` converted from `source` (best effort)."""
    if cache_dir.cache_root() is None:
        return
    key = entry_key(fn, source)
    entry = {"format": FORMAT, "key": key,
             "fingerprint": converter_fingerprint(), "python": python_version(),
             "function": f"{fn.__module__}.{fn.__qualname__}",
             "bytecode": base64.b64encode(marshal.dumps(
                 with_filename(code, _STORED_FILENAME))).decode("ascii")}
    entry["checksum"] = _checksum(key + ".json", entry)
    # json.dumps: the C encoder; `json.dump` takes the pure-Python one, whose
    # closures are reference cycles left for the collector
    cache_dir.write_entry(_SUBFOLDER, key + ".json", json.dumps(entry).encode("utf-8"))
