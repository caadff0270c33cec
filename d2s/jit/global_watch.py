"""A warning when a module global that a traced function read has changed.

A program is traced once per signature: every Python value the converted
function reads while tracing, module globals included, is frozen into the
program (`SCALE = 2` read as `x * SCALE` is a constant 2 in it). Rebinding
`SCALE = 20` later does not retrace: the program keeps computing with 2.
Keying programs by every global's value would cost each call a lookup per
global name for a rare case, so d2s documents this behaviour and, as a cheap
guard, watches the globals the function's own code names whose values are
plain data (numbers, text, bytes, None, tuples of those, numpy scalars and
arrays), at the first call after the trace and then at every
`CHECK_EVERY`-th call (a counter per call; the lookups are spread out): a
check finding one rebound to other data (identity compared first, then
values: a global array changed in place is not seen; globals read by the functions it calls are not watched)
warns once per function and name, saying what to do instead. Globals the
function itself assigns (`global` statements) are not watched.
"""
import dis
import types
import warnings

import numpy as np

__all__ = ["watch", "CHECK_EVERY"]

CHECK_EVERY = 32

_PLAIN = (type(None), bool, int, float, complex, str, bytes, np.generic, np.ndarray)


def _plain(value):
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return isinstance(value, _PLAIN)


def _names(code):
    """(names `code` and its nested code read or write as globals or
    attributes, the globals they assign or delete)."""
    names = set(code.co_names)
    written = {ins.argval for ins in dis.get_instructions(code)
               if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner, inner_written = _names(const)
            names |= inner
            written |= inner_written
    return names, written


class GlobalWatch:
    """The plain globals `fn` read, as they were when its program was traced."""
    __slots__ = ("fn", "namespace", "watched", "countdown")

    def __init__(self, fn, namespace, watched):
        self.fn = fn
        self.namespace = namespace
        self.watched = watched   # [(name, value as traced)]
        self.countdown = 1       # calls until the next check (the caller counts down)

    def check(self):
        """Warn (once per name) for each watched global rebound since the trace.
        Returns this watch while any global is still watched, else None."""
        self.countdown = CHECK_EVERY
        get = self.namespace.get
        for name, value in self.watched:
            if get(name, _MISSING) is not value:
                self._changed(name, value)
        return self if self.watched else None

    def _changed(self, name, value):
        now = self.namespace.get(name, _MISSING)
        if now is not _MISSING and _equal(now, value):   # rebound to the same value
            self.watched = [(n, now if n == name else v) for n, v in self.watched]
            return
        self.watched = [(n, v) for n, v in self.watched if n != name]
        code = self.fn.__code__
        shown = "deleted" if now is _MISSING else _short(now)
        warnings.warn(
            f"d2s: the global {name!r} read by {self.fn.__qualname__} "
            f"({code.co_filename}, line {code.co_firstlineno}) was {_short(value)} when its "
            f"program was traced and is {shown} now; the program keeps the traced value "
            f"(globals are frozen at the trace). Pass it as an argument (a tensor, so one "
            f"program serves every value) or keep it constant.", RuntimeWarning, stacklevel=4)


_MISSING = object()


def _equal(a, b):
    """Whether two plain values are the same data (type, shape and content)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b) or (a != a and b != b)   # (NaN as traced: the same)
    except (TypeError, ValueError):
        return False


def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def watch(fn):
    """A GlobalWatch of `fn`'s plain globals as they are now, or None when it
    reads none (nothing to check at each call)."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    namespace = getattr(fn, "__globals__", None)
    if code is None or not isinstance(namespace, dict):
        return None
    watched = []
    names, written = _names(code)
    for name in sorted(names - written):   # (a global it assigns is its own business)
        if name.startswith("__") or name not in namespace:
            continue
        value = namespace[name]
        if _plain(value):
            watched.append((name, value))
    return GlobalWatch(fn, namespace, watched) if watched else None
