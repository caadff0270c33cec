"""`compile()` of generated source, read back from disk when the same text was
compiled before (in any process).

A second process's first call compiles the same texts again: the converted
function's module (the conversion cache gives its text back) and the
program's generated code (the trace rebuilds the same program, so the same
text).  Compiling is the largest part of loading a cached conversion and
about a tenth of a trace; loading the marshalled code object costs a
thirtieth of that.

Entries are content-addressed: `<sha256 of the text>.<cache tag>.pyc` in
`cache_dir.subfolder("bytecode")`, each exactly a hash-based, checked .pyc of
its text (PEP 552: the interpreter's magic number, the flags, then
`importlib.util.source_hash` of the text, then the marshalled code object),
what Python itself writes and trusts in `__pycache__`.  One is used only
when its header matches the text being compiled, so it never stands for
other code than that text; a missing, damaged or foreign one is compiled
afresh and rewritten, atomically (temporary file, then rename), so
concurrent processes never read half a file.  The code object is not
pickled: marshal is Python's own bytecode format, which runs nothing when
read.  Code objects carry the file name they were compiled under: a loaded
one is renamed to the caller's (line maps and tracebacks are looked up by
it).  Write failures warn once (`cache_dir`) and compiling goes on.

Standard library only (the converter's AST side uses it too).
"""
import hashlib
import importlib.util
import marshal
import os
import sys
import types

from . import cache_dir

__all__ = ["compile_module", "entry_path"]

_SUBFOLDER = "bytecode"
_CHECKED_HASH_FLAGS = (0b11).to_bytes(4, "little")


def _encoded(text):
    return text.encode("utf-8", "surrogatepass")


def entry_path(text):
    """Where the bytecode of `text` is kept (None when caching is off or unusable)."""
    folder = cache_dir.subfolder(_SUBFOLDER)
    if folder is None:
        return None
    digest = hashlib.sha256(_encoded(text)).hexdigest()
    return os.path.join(folder, f"{digest}.{sys.implementation.cache_tag}.pyc")


def _header(text):
    return importlib.util.MAGIC_NUMBER + _CHECKED_HASH_FLAGS + importlib.util.source_hash(
        _encoded(text))


def compile_module(text, filename):
    """`compile(text, filename, "exec")`, from the cache where it holds `text`'s bytecode."""
    path = entry_path(text)
    if path is None:
        return compile(text, filename, "exec")
    header = _header(text)
    code = _read(path, header)
    if code is not None:
        return _with_filename(code, filename)
    code = compile(text, filename, "exec")
    cache_dir.write_atomic(path, header + marshal.dumps(code))
    return code


def _read(path, header):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not data.startswith(header):
        return None
    try:
        code = marshal.loads(memoryview(data)[len(header):])
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is types.CodeType else None


def _with_filename(code, filename):
    """`code` and the code objects nested in it, as if compiled from `filename`."""
    consts = code.co_consts
    if any(type(c) is types.CodeType for c in consts):
        consts = tuple(_with_filename(c, filename) if type(c) is types.CodeType else c
                       for c in consts)
        return code.replace(co_filename=filename, co_consts=consts)
    return code.replace(co_filename=filename)
