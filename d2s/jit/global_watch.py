"""A guard on the module globals a traced function reads.

A program is traced once per signature: every Python value the converted
function reads while tracing, module globals included, is frozen into the
program (`SCALE = 2` read as `x * SCALE` is a constant 2 in it). So the
plain globals the function's own code names (numbers, text, bytes, None,
tuples of those, numpy scalars and arrays) are watched: each call compares
their identities with those the programs were traced for (one dict lookup
and `is` per name; nothing for a function that reads none), and when one was
rebound to other data the function switches to the programs traced for the
values now (traced on demand), as TorchDynamo guards globals. A global
numpy array is also compared with what it held (core.array_contents: a write
into it is a new value too). At most `MAX_VALUES` sets of values are kept;
past that it warns once, naming the global, and keeps retracing. Not seen
here: globals read only by the functions it calls (jit.read_guards guards
those), and globals the function itself assigns (`global` statements: its
own business).
"""
import dis
import types
import warnings

import numpy as np

from ..core import array_contents

__all__ = ["watch", "MAX_VALUES"]

MAX_VALUES = 8  # program caches kept per function, one per set of global values

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
    """The plain globals (and closure variables) `fn` read, as they were when
    its programs were traced, and the program caches kept per set of their
    values."""
    __slots__ = ("fn", "namespace", "watched", "cells", "contents", "caches", "warned")

    def __init__(self, fn, namespace, watched, cells=()):
        self.fn = fn
        self.namespace = namespace
        self.watched = watched   # [(name, value as traced)]
        self.cells = list(cells)  # [(name, closure cell, value as traced)]
        self.contents = _contents(fn, self._named())  # [(array, its snapshot)]
        self.caches = []         # [(values, ProgramCache)], the current one last
        self.warned = False

    def _named(self):
        """[(label, value)] of everything watched."""
        return ([(f"global '{n}'", v) for n, v in self.watched]
                + [(f"closure variable '{n}'", v) for n, _, v in self.cells])

    def changed(self):
        """Whether a watched global was rebound since, or an array written
        into (the per-call check)."""
        get = self.namespace.get
        for name, value in self.watched:
            if get(name, _MISSING) is not value:
                return True
        for _, cell, value in self.cells:
            if _cell_value(cell) is not value:
                return True
        for array, snap in self.contents:
            if not array_contents.same(array, snap):
                return True
        return False

    def _values(self):
        """The watched values as the programs were traced for them (an
        array's contents then, not the array now)."""
        held = {id(a): array_contents.frozen(snap) for a, snap in self.contents}
        return tuple(held.get(id(v), v) for _, v in self._named())

    def switch(self, cache, new_cache):
        """The program cache for the globals' values now: `cache` (the current
        one) when they were only rebound to equal data, one kept for these
        values before, or `new_cache()`."""
        if not self.caches:
            self.caches.append((self._values(), cache))
        get = self.namespace.get
        self.watched = [(n, get(n, _MISSING)) for n, _ in self.watched]
        self.cells = [(n, c, _cell_value(c)) for n, c, _ in self.cells]
        self.contents = _contents(self.fn, self._named())
        values = self._values()
        for i, (kept, c) in enumerate(self.caches):
            if len(kept) == len(values) and all(_equal(a, b) for a, b in zip(kept, values)):
                self.caches.append(self.caches.pop(i))
                return c
        if len(self.caches) >= MAX_VALUES:
            self.caches.pop(0)
            if not self.warned:
                self.warned = True
                self._warn(self.caches[-1][0], values)
        fresh = new_cache()
        self.caches.append((values, fresh))
        return fresh

    def _warn(self, before, now):
        changed = [n for (n, _), a, b in zip(self._named(), before, now) if not _equal(a, b)]
        names = [n.split(" ", 1)[1] for n in changed if n.startswith("global ")]
        cells = [n.split(" ", 2)[2] for n in changed if n.startswith("closure variable ")]
        what = " and ".join(
            part for part in (f"global(s) {', '.join(names)}" if names else "",
                              f"closure variable(s) {', '.join(cells)}" if cells else "")
            if part) or "globals"
        code = self.fn.__code__
        warnings.warn(
            f"d2s: the {what} read by "
            f"{self.fn.__qualname__} ({code.co_filename}, line {code.co_firstlineno}) took "
            f"more than {MAX_VALUES} values; each value is frozen into a program of its own, "
            f"so the function is traced again for each (the oldest are dropped). Pass it as "
            f"an argument (a tensor, so one program serves every value) or keep it "
            f"constant.", RuntimeWarning, stacklevel=4)


_MISSING = object()


def _contents(fn, named):
    """(array, snapshot) of each watched numpy array small enough to compare
    on every call; a larger one is said once (core.array_contents)."""
    out = []
    for label, value in named:
        if type(value) is np.ndarray:
            if array_contents.checked(value):
                out.append((value, array_contents.snapshot(value)))
            else:
                code = fn.__code__
                array_contents.warn_unchecked(
                    f"{label} (read by {fn.__qualname__}, {code.co_filename}, "
                    f"line {code.co_firstlineno})", value)
    return out


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:  # (an empty cell)
        return _MISSING


def _cells_written(code):
    """The closure variables `code` and its nested code assign (`nonlocal`)."""
    written = {ins.argval for ins in dis.get_instructions(code)
               if ins.opname in ("STORE_DEREF", "DELETE_DEREF")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            written |= _cells_written(const)
    return written


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
    """A GlobalWatch of `fn`'s plain globals and closure variables as they
    are now, or None when it reads none (nothing to check at each call). A
    closure variable is watched as a global is: the enclosing function may
    rebind it (`nonlocal`) or write into the array it holds."""
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
    cells = []
    own = _cells_written(code)  # (a variable it assigns itself: its own business)
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        value = _cell_value(cell)
        if name not in own and value is not _MISSING and _plain(value):
            cells.append((name, cell, value))
    return GlobalWatch(fn, namespace, watched, cells) if watched or cells else None
