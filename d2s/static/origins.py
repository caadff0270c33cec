"""Where an op came from in the user's code: the frame walk, the line tables
and the `(filename, lineno, text)` an `Operator.origin` resolves to.

Kept apart from the IR because it is about frames and source lines, not
programs: the builder asks `user_frame()` for every op of a trace (so it is
lean: a dict lookup per frame, a bisection per line), errors, exports and
saved programs read the resolved origins.
"""
from __future__ import annotations

import bisect
import linecache
import os
import sys
import warnings

_D2S_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Functions (filename, lineno) -> (filename, lineno) or None, registered by
# higher layers (the converter maps generated code back to the user's lines).
ORIGIN_RESOLVERS = []


# id(code object) -> (that code object, start offsets, line numbers): where
# each instruction's line is. Every op of a trace asks for its user's line,
# and a frame's `f_lineno` is found by scanning its code's line table from
# the start: in one converted function of a thousand lines that made
# tracing quadratic. Read once per code object (held, so its id stays its
# own; the table is cleared when it grows large), a line is a bisection.
_LINE_TABLES = {}
_LINE_TABLES_MAX = 4096


def _lineno(frame):
    """`frame.f_lineno`, from the table of its code object."""
    return code_line(frame.f_code, frame.f_lasti, frame)


def code_line(code, lasti, frame=None):
    """The line of instruction `lasti` of `code` (`frame.f_lineno` where the
    table has none and the frame is at hand; else the code's first line)."""
    table = _LINE_TABLES.get(id(code))
    if table is None or table[0] is not code:
        starts, lines = [], []
        for start, _end, line in code.co_lines():
            starts.append(start)
            lines.append(line)
        if len(_LINE_TABLES) >= _LINE_TABLES_MAX:
            _LINE_TABLES.clear()
        table = _LINE_TABLES[id(code)] = (code, starts, lines)
    i = bisect.bisect_right(table[1], lasti) - 1
    line = table[2][i] if i >= 0 else None
    if line is None:
        return frame.f_lineno if frame is not None else code.co_firstlineno
    return line


def resolved(fn, lineno):
    """(fn, lineno, text), or where a registered resolver maps it."""
    for resolve in ORIGIN_RESOLVERS:
        mapped = resolve(fn, lineno)
        if mapped is not None:
            return mapped
    return (fn, lineno, linecache.getline(fn, lineno).strip())


def user_origin():
    """(filename, lineno, text) of the innermost frame outside the d2s package."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_D2S_DIR):
            return resolved(fn, _lineno(f))
        f = f.f_back
    return None


def warn_in_user_code(message, category):
    """`warnings.warn` attributed to the user's line: the innermost frame
    outside d2s (and outside Python's own frozen modules), mapped back from
    converted code. A fixed `stacklevel` cannot do this: the depth of d2s's
    frames differs per path (a first call, a backward, a training step), and
    counting past the outermost frame names `sys:1`."""
    f = sys._getframe(1)
    while f is not None and (_in_d2s(f.f_code.co_filename)
                             or f.f_code.co_filename.startswith("<frozen")):
        f = f.f_back
    if f is None:
        warnings.warn(message, category, stacklevel=2)
        return
    filename, lineno = f.f_code.co_filename, _lineno(f)
    mapped = resolved(filename, lineno)
    g = f.f_globals
    warnings.warn_explicit(message, category, mapped[0], mapped[1],
                           module=g.get("__name__"),
                           registry=g.setdefault("__warningregistry__", {}),
                           module_globals=g if mapped[0] == filename else None)


class PendingOrigin:
    """Where an op was built, kept as (code object, instruction offset)
    until someone reads `Operator.origin` (an Operator keeps the two in its
    own slots; this record carries them to the ops made as its copies).
    Nearly every op of a trace is built from user code, and nearly no origin
    is ever read (they name the user's line in errors, exports and saved
    programs): finding the line and its text for each op cost a tenth of a
    trace."""

    __slots__ = ("code", "lasti")

    def __init__(self, code, lasti):
        self.code = code
        self.lasti = lasti

    def resolve(self):
        return resolved(self.code.co_filename, code_line(self.code, self.lasti))


# file name -> whether it is d2s's own: every op of a trace walks the frames
# between the user's code and the builder (seven or eight), and a lookup of
# the (interned, hash-cached) file name costs less than comparing prefixes.
_IN_D2S = {}


def _in_d2s(filename):
    if len(_IN_D2S) >= 4096:
        _IN_D2S.clear()
    inside = _IN_D2S[filename] = filename.startswith(_D2S_DIR)
    return inside


def pending_user_origin():
    """`user_origin()` of the caller's caller, resolved when first read."""
    f = _user_frame(sys._getframe(2))
    return None if f is None else PendingOrigin(f.f_code, f.f_lasti)


def user_frame():
    """The innermost frame outside the d2s package, from the caller's caller
    outwards (None if there is none): where an op the caller builds comes
    from, kept unresolved by `Operator._owned`."""
    return _user_frame(sys._getframe(2))


def _user_frame(f):
    known = _IN_D2S
    while f is not None:
        code = f.f_code
        inside = known.get(code.co_filename)
        if inside is None:
            inside = _in_d2s(code.co_filename)
        if not inside:
            return f
        f = f.f_back
    return None


def traceback_origin(tb):
    """Like `user_origin`, for where an exception was raised: the innermost
    frame of traceback `tb` outside the d2s package (its stack is gone)."""
    found = None
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if not fn.startswith(_D2S_DIR):
            found = (fn, tb.tb_lineno)
        tb = tb.tb_next
    return resolved(*found) if found else None
