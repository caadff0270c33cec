"""Tracebacks of errors from converted code, as the user wrote the code.

An error raised while tracing or running a converted function passes through
d2s's converter, tracer and executor: a dozen frames or more that say
nothing about the user's mistake, and the converted function's own frames
name generated code the user never saw. At the boundary where the error
leaves d2s, `user_traceback` rebuilds the traceback: the user's frames are
kept, each frame of converted code becomes a frame at the user's original
file and line (so the traceback prints that line's source), and d2s's own
frames are dropped (with Python's, such as `contextlib`, called from them).
JAX filters its tracebacks by module path the same way; PaddlePaddle's
dy2static maps converted frames back to the user's source.

`D2S_FULL_TRACEBACK=1` keeps every frame, for debugging d2s itself.
"""
from __future__ import annotations

import os
import sysconfig
import types

from . import origin as _origin

_D2S_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_HIDDEN_NOTE = "(d2s's own frames are hidden from this traceback: D2S_FULL_TRACEBACK=1 shows them)"


def full_traceback():
    return os.environ.get("D2S_FULL_TRACEBACK", "").strip() not in ("", "0")


class _Marker(Exception):
    pass


def _frame_at(filename, lineno, name, source_line):
    """A traceback entry whose frame runs line `lineno` of `filename` in a
    function called `name` (a tiny code object compiled with that file name
    and line, raising at once): the traceback module prints the user's line
    from the file itself. The raise statement spans the line's text, so
    Python marks no part of it with carets."""
    text = (source_line or "").strip()
    width = max(len(text) - len("raise "), 1)
    stmt = "raise " + "_" * width
    indent = ""
    lines = [""] * max(lineno - 1, 0)
    if source_line and lineno > 1:
        indent = " " * (len(source_line) - len(source_line.lstrip()))
        if indent:
            lines[-1] = "if 1:"
    code = compile("\n".join(lines + [indent + stmt]), filename, "exec")
    code = code.replace(co_name=name)
    try:
        exec(code, {"__name__": "__d2s_frame__", "_" * width: _Marker})
    except _Marker as e:
        tb = e.__traceback__.tb_next  # this function's own entry is the first
        return tb.tb_frame, tb.tb_lasti, tb.tb_lineno
    return None  # pragma: no cover - the code always raises


def _internal(filename, seen_d2s):
    if filename.startswith(_D2S_DIR):
        return True
    if filename.startswith("<d2s") and not _origin.is_generated_filename(filename):
        return True  # a program's generated code: its errors already name the user's line
    # Python's own modules called from d2s (contextlib, functools, threading)
    return seen_d2s and (filename.startswith(_STDLIB_DIR) or filename.startswith("<frozen"))


def user_traceback(tb):
    """The traceback `tb` as the user's code: see the module doc. Returns `tb`
    itself when nothing would be left."""
    entries, seen_d2s = [], False
    while tb is not None:
        code = tb.tb_frame.f_code
        filename = code.co_filename
        if _origin.is_generated_filename(filename):
            where = _origin.lookup(filename, tb.tb_lineno)
            if where is not None:
                fake = _frame_at(where.filename, where.lineno, where.function_name,
                                 where.source_line)
                if fake is not None:
                    entries.append(fake)
            seen_d2s = True
        elif _internal(filename, seen_d2s):
            seen_d2s = seen_d2s or filename.startswith(_D2S_DIR)
        else:
            entries.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    if not entries:
        return None
    new = None
    for frame, lasti, lineno in reversed(entries):
        new = types.TracebackType(new, frame, lasti, lineno)
    return new


def _innermost(tb):
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return None if tb is None else (tb.tb_frame.f_code.co_filename, tb.tb_lineno)


def _locate(exc, where):
    """Put the user's file and line first in the message of a d2s error that
    asks for it (`locate_in_message`: the conversion errors), as compilers
    and linters do (`file.py:12: message`): the line the error surfaced at in
    the user's code; the message may name another (the construct's). Other
    exceptions, the user's own included, keep theirs."""
    if where is None or not getattr(type(exc), "locate_in_message", False):
        return
    if not exc.args or not isinstance(exc.args[0], str):
        return
    filename, lineno = where
    head = f"{filename}:{lineno}: "
    message = exc.args[0]
    if message.startswith(head):
        return  # (located at an inner boundary already)
    exc.args = (head + message,) + exc.args[1:]


def for_user(exc):
    """`exc`, its traceback rebuilt by `user_traceback` (unless
    `D2S_FULL_TRACEBACK` is set) and, for d2s's conversion errors, the user's
    file and line first in its message. To be raised where the error leaves
    d2s (again at each enclosing boundary: a rebuilt traceback is rebuilt as
    is)."""
    new = user_traceback(exc.__traceback__)
    if new is not None:
        _locate(exc, _innermost(new))
    if full_traceback() or new is None:
        return exc
    if hasattr(exc, "add_note") and _HIDDEN_NOTE not in getattr(exc, "__notes__", ()):
        exc.add_note(_HIDDEN_NOTE)
    return exc.with_traceback(new)
