"""Guards on the plain Python values a trace read from state that outlives the call.

A trace bakes every Python value it reads into the program: `x /
self.temperature` divides by the number it found, `SCALE` read by a helper
is a constant. The caller may change these between calls (`model.temperature
= 2.0`, `cfg.t = 7`, `opts["scale"] = 5`, a module global), and a program
built for the old value would silently compute with it. So the reads of
converted code are recorded while it is traced (convert.runtime.reads), and
each read of an entry that existed before the trace, in a container
reachable from the function's arguments, `self`, closures or globals
(jit.outliving's `Watch.before`), becomes a guard on the entry:

- a plain value (None, bool, int, float, complex, str, bytes, numpy
  scalars, tuples of those) must still be equal, of the same type;
- a numpy array must still be the same array, holding what it held
  (core.array_contents: its bytes compared on every call, up to a size);
- any other object (a sublayer, a config object, a list or dict on the
  access path, a function) must still be the same object;
- a list or dict whose contents the trace may have read whole (iterated,
  passed to a call, `len()`) must keep its length and its items;
- Tensors are never guarded by value: they are inputs or captured by path.

The globals the converted functions a trace called name are guarded the same
way (those of the top function are jit.global_watch's).

The guards are compiled into one function (one expression per entry); the
entries in Layers' `__dict__`s are checked only after some Layer attribute
was assigned a non-tensor value since they last held
(`state.plain_attributes_version`, bumped by `Layer.__setattr__`), so a
model whose guards all sit in its Layers costs one comparison per call. A
program whose guards fail is traced again for the values now and kept
beside the others (jit.concrete_program's `GuardedProgram`).
"""
from __future__ import annotations

import numpy as np

from ..core import state
from ..core.tensor import Tensor
from ..static.control_flow import ControlFlowError
from ..static.ir import Variable
from ..static.origins import resolved
from ..static.reachable import is_layer
from ..core import array_contents
from .global_watch import _equal, _names

__all__ = ["ReadGuards", "build", "grown_only"]

_PLAIN = (type(None), bool, int, float, complex, str, bytes, np.generic)
_MISSING = object()


def _plain(value):
    if type(value) is tuple:
        return all(_plain(v) for v in value)
    return isinstance(value, _PLAIN)


def _kind(value):
    """How an entry holding `value` is guarded: "eq", "is", "array" (the same
    array, holding what it held: core.array_contents) or None (not at all)."""
    if isinstance(value, (Tensor, Variable)):
        return None
    if type(value) is np.ndarray:
        return "array"
    return "eq" if _plain(value) else "is"


def grown_only(reads, watch):
    """Ids of the lists the trace reached only as `.append` / `.extend`
    receivers (never their length or items, never passed on), through
    attribute or item loads: their length is no condition of the program."""
    roles, read = {}, set()
    for container, key, kinds, value in reads.entries.values():
        if isinstance(container, list):
            read.add(id(container))
        if isinstance(value, list):
            roles.setdefault(id(value), set()).update(kinds)
    roots = {id(v) for _, v in watch.roots}
    return frozenset(i for i, kinds in roles.items()
                     if kinds == {"append"} and i not in read and i not in roots)


class ReadGuards:
    """The guards of one program: `holds()` is their compiled check."""

    __slots__ = ("entries", "holds")

    def __init__(self, entries):
        # (kind, container, key, expected, label, in a Layer's __dict__)
        self.entries = entries
        self.holds = _compile(entries)

    def failing(self):
        """Labels of the entries that do not hold now (for messages)."""
        return [e[4] for e in self.entries if not _compile([e])()]

    def labels(self):
        return [e[4] for e in self.entries]


def build(reads, watch):
    """The `ReadGuards` of a trace's `reads` (convert.runtime.reads.Reads), for
    the containers `watch` (jit.outliving.Watch) recorded before it; None when
    there is nothing to guard."""
    entries, seen, whole = [], set(), []
    before = watch.before
    for container, key, roles, value in reads.entries.values():
        if key is None:  # the container itself, read whole (a tensor index, a[-1])
            whole.append((container, False))
            continue
        rec = before.get(id(container))
        if rec is None:
            continue  # made by the trace (or out of reach): nothing to guard
        _, copy, label, owner = rec
        old = _entry(copy, key)
        now = _entry(container, key)
        if old is _MISSING or old is not value or now is not old:
            continue  # the trace wrote it (jit.outliving replays and guards writes)
        kind = _kind(old)
        if kind is None:
            continue
        attr = owner is not None and container is getattr(owner, "__dict__", None)
        where = f"{label}.{key}" if attr else f"{label}[{key!r}]"
        if kind == "array":
            _check_not_written(reads, old, _label(where, reads, container, key))
        _add(entries, seen, kind, container, key, old, _label(where, reads, container, key),
             attr and is_layer(owner))
        if None in roles and isinstance(old, (list, dict)):
            whole.append((old, False))
        elif roles - {"path"} and is_layer(old):
            # a Layer called or iterated: which sublayers it holds (a Sequential's,
            # a LayerList's), changed only through Layer.__setattr__ / __delattr__
            whole.append((old.__dict__.get("_sub_layers"), True))
    for container, layer in whole:
        rec = before.get(id(container))
        if rec is None:
            continue
        _, copy, label, owner = rec
        if owner is not None or len(container) != len(copy):
            continue  # (an object's __dict__: read entry by entry; changed by the trace)
        _add(entries, seen, "len", container, None, len(copy), f"len({label})", layer)
        items = enumerate(copy) if isinstance(copy, list) else copy.items()
        for key, old in items:
            kind = _kind(old)
            if kind is not None and _entry(container, key) is old:
                _add(entries, seen, kind, container, key, old, f"{label}[{key!r}]", layer)
    for fn in reads.functions.values():
        _global_entries(fn, entries, seen)
    for container, key, value, label, at, absent in reads.fixed.values():
        _fixed_entry(entries, seen, container, key, value, label, at, absent)
    return ReadGuards(entries) if entries else None


def _check_not_written(reads, array, label):
    """A numpy array the trace itself wrote into (`self.counts[0] += 1` in a
    converted forward) would be written once, while the program is built,
    and never by its runs, where eager code writes it on every call."""
    snap = reads.arrays.get(id(array))
    if snap is None or array_contents.same(array, snap):
        return
    if array.shape == snap[0] and array.dtype == snap[1] and array.flags.writeable:
        np.copyto(array, array_contents.frozen(snap))  # (the caller's array as it was)
    raise ControlFlowError(
        f"{label}: converted code writes into this numpy array in place; the write "
        f"happens once, while the program is traced, not on every call as it does eagerly. "
        f"Hold the value in a Tensor (a Layer buffer, `self.register_buffer(...)`) and "
        f"update it with tensor ops (`self.counts[0] += 1` on a Tensor is replayed on every "
        f"run), or write the array outside the converted function.")


def _fixed_entry(entries, seen, container, key, value, label, at, absent):
    """A class's plain attribute (or, `absent`, an instance's absence of its
    own) or a user module's, as the trace read it: guarded on every call (no
    Layer's `__setattr__` sees a class's or a module's attributes change)."""
    if absent:
        if _entry(container, key) is _MISSING:
            _add(entries, seen, "is", container, key, _MISSING, label, False)
        return
    if not _plain(value) or _entry(container, key) is not value:
        return  # an object (a class's method, a sublayer type): not a value baked in
    origin = resolved(*at)
    _add(entries, seen, "eq", container, key, value,
         f"{label} (read at {origin[0]}, line {origin[1]}: `{origin[2]}`)", False)


def _global_entries(fn, entries, seen):
    """The plain (or array) module globals `fn`'s code names, as they are now."""
    namespace = getattr(fn, "__globals__", None)
    code = getattr(fn, "__code__", None)
    if not isinstance(namespace, dict) or code is None:
        return
    names, written = _names(code)
    for name in sorted(names - written):
        if name.startswith("__") or name not in namespace:
            continue
        value = namespace[name]
        if _plain(value) or isinstance(value, np.ndarray):
            label = (f"global '{name}' (read by {fn.__qualname__}, {code.co_filename}, "
                     f"line {code.co_firstlineno})")
            _add(entries, seen, _kind(value), namespace, name, value, label, False)


def _add(entries, seen, kind, container, key, value, label, layer):
    k = (kind, id(container), key)
    if k not in seen:
        seen.add(k)
        if kind == "array":
            if array_contents.checked(value):
                # (checked on every call: a write into an array tells no Layer)
                value, layer = (value, array_contents.snapshot(value)), False
            else:
                array_contents.warn_unchecked(label, value)
                kind = "is"
        entries.append((kind, container, key, value, label, layer))


def _entry(container, key):
    if isinstance(container, list):
        return container[key] if type(key) is int and 0 <= key < len(container) else _MISSING
    try:
        return container.get(key, _MISSING)
    except TypeError:
        return _MISSING


def _label(where, reads, container, key):
    at = reads.origins.get((id(container), key))
    if at is None:
        return where
    origin = resolved(*at)  # (the user's line of the converted code's)
    return f"{where} (read at {origin[0]}, line {origin[1]}: `{origin[2]}`)"


def _compile(entries):
    """One function checking every entry (see the module doc)."""
    ns = {"M": _MISSING, "V": state.plain_attributes_version, "memo": [-1], "eq": _equal,
          "same": array_contents.same}
    layer_terms, terms = [], []
    for i, (kind, container, key, value, _, layer) in enumerate(entries):
        ns[f"c{i}"], ns[f"k{i}"], ns[f"v{i}"], ns[f"t{i}"] = container, key, value, type(value)
        if kind == "len":
            term = f"len(c{i}) == v{i}"
        else:
            get = (f"(c{i}[k{i}] if len(c{i}) > k{i} else M)" if isinstance(container, list)
                   else f"c{i}.get(k{i}, M)")  # (a dict, a class's mappingproxy)
            if kind == "is":
                term = f"{get} is v{i}"
            elif kind == "array":  # value: (the array, its snapshot)
                ns[f"v{i}"], ns[f"s{i}"] = value
                term = f"((x := {get}) is v{i} and same(x, s{i}))"
            elif type(value) is tuple:
                term = f"eq({get}, v{i})"
            else:
                term = f"((x := {get}) is v{i} or (type(x) is t{i} and x == v{i}))"
        (layer_terms if layer else terms).append(term)
    src = ["def check():"]
    if layer_terms:
        src += ["    if V[0] != memo[0]:",
                f"        if not ({' and '.join(layer_terms)}):",
                "            return False",
                "        memo[0] = V[0]"]
    src.append(f"    return {' and '.join(terms) if terms else 'True'}")
    exec(compile("\n".join(src), "<d2s read guards>", "exec"), ns)  # noqa: S102 (own text)
    return ns.pop("check")  # (not left in its own globals: no reference cycle)
