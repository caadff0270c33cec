"""`compile()` of generated source, read back from disk when the same text was
compiled before (in any process).

A second process's first call compiles the same texts again: the program's
generated code (the trace rebuilds the same program, so the same text) and
the step calls.  Compiling is about a tenth of a trace; loading the
marshalled code object costs a thirtieth of that.  (Converted functions
are compiled from their tree, and the conversion cache keeps their code
objects itself.)

Entries are content-addressed: `<sha256 of the text and the optimisation
level>.opt<level>.<cache tag>.pyc` in `cache_dir.subfolder("bytecode")`
(`compile` drops `assert` and `if __debug__:` blocks under `python -O`: the
two levels never share bytecode), each a hash-based, checked .pyc of its
text (PEP 552: the interpreter's magic number, the flags, then
`importlib.util.source_hash` of the text, then the marshalled code object,
what Python itself writes in `__pycache__`) followed by a 32-byte checksum
of the entry's name and all that (`cache_dir.digest`): the .pyc header
alone names the text, not the code, and a flipped bit in the code would
run silently.  One is used only when its header matches the text being
compiled and its checksum holds, so it never stands for other code than
that text; a missing, damaged or foreign one is compiled afresh and
rewritten, atomically (temporary file, then rename), so concurrent
processes never read half a file.  Reads and writes go through
`cache_dir.read_entry`/`write_entry` (the folder's and the entry's checks).  The code object is not
pickled: marshal is Python's own bytecode format, which runs nothing when
read.  Code objects carry the file name they were compiled under: a loaded
one is renamed to the caller's (line maps and tracebacks are looked up by
it).  Write failures warn once (`cache_dir`) and compiling goes on.

Standard library only (the converter's cache renames its code objects with
`with_filename` too).
"""
import hashlib
import importlib.util
import marshal
import os
import sys
import types

from . import cache_dir

__all__ = ["compile_module", "entry_name", "entry_path", "with_filename"]

_SUBFOLDER = "bytecode"
_CHECKED_HASH_FLAGS = (0b11).to_bytes(4, "little")
_CHECKSUM = 32   # bytes of `cache_dir.digest` after the .pyc


def _encoded(text):
    return text.encode("utf-8", "surrogatepass")


def entry_name(text):
    """The file name of `text`'s bytecode at this interpreter's optimisation level."""
    level = sys.flags.optimize
    digest = hashlib.sha256(f"optimize {level}\n".encode() + _encoded(text)).hexdigest()
    return f"{digest}.opt{level}.{sys.implementation.cache_tag}.pyc"


def entry_path(text):
    """Where the bytecode of `text` is kept (None when caching is off or unusable)."""
    folder = cache_dir.subfolder(_SUBFOLDER)
    if folder is None:
        return None
    return os.path.join(folder, entry_name(text))


def _header(text):
    return importlib.util.MAGIC_NUMBER + _CHECKED_HASH_FLAGS + importlib.util.source_hash(
        _encoded(text))


def compile_module(text, filename):
    """`compile(text, filename, "exec")`, from the cache where it holds `text`'s bytecode."""
    if cache_dir.cache_root() is None:
        return compile(text, filename, "exec")
    name = entry_name(text)
    header = _header(text)
    code = _read(name, header)
    if code is not None:
        return with_filename(code, filename)
    code = compile(text, filename, "exec")
    body = header + marshal.dumps(code)
    cache_dir.write_entry(_SUBFOLDER, name, body + bytes.fromhex(cache_dir.digest(name, body)))
    return code


def _read(name, header):
    data = cache_dir.read_entry(_SUBFOLDER, name)
    if data is None or len(data) < len(header) + _CHECKSUM or not data.startswith(header):
        return None
    body = memoryview(data)[:-_CHECKSUM]
    if bytes.fromhex(cache_dir.digest(name, body)) != data[-_CHECKSUM:]:
        return None
    try:
        code = marshal.loads(body[len(header):])
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is types.CodeType else None


def with_filename(code, filename):
    """`code` and the code objects nested in it, as if compiled from `filename`."""
    consts = code.co_consts
    if any(type(c) is types.CodeType for c in consts):
        consts = tuple(with_filename(c, filename) if type(c) is types.CodeType else c
                       for c in consts)
        return code.replace(co_filename=filename, co_consts=consts)
    return code.replace(co_filename=filename)
