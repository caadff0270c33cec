"""Items a loop body (or a branch) on a tensor writes through another name: a k/v cache.

A loop on a tensor carries the names its own code assigns, and the
attribute/subscript targets its own code writes (analysis.targets). A
transformer's decoding loop updates its per-layer caches elsewhere: the
attention layer's `forward` does `cache["k"] = concat([cache["k"], k])`,
or a Python `for c in caches:` writes `c["k"]`. Those writes store the
body's values in dicts and lists the loop can reach but whose items it does
not carry, so after the loop they would hold values of the body.

As the outliving-state watch does for a whole trace (jit.outliving), the
loop records the containers reachable from its body's and condition's
closure cells and named globals (static.reachable.function_roots) before
it starts, and after each trace of its body looks for items, other than
its own targets (`acc[0]`, `self.h`), that now hold a static Variable.
Each becomes a loop variable read and written through its container, and
the loop is traced again from scratch: an item whose shape grows per trip
(`concat`) gets an unknown dim like any loop variable, a preallocated one
(`cache["k"][:, i] = k`) keeps its shape. A tensor `if` does the same with
what its branches write: those items become outputs of its `cond`.

A Python number such a write changes (a helper's `counter["n"] += 1`, a
sublayer's `self.calls += 1`) is carried the same way: left as the trace
made it, it would change once per branch traced and once per trace of the
body, whatever the data says. Carried, it becomes a tensor holding the
number of the path taken and the trips run (as the construct's own targets
do). Other Python values (a lazily created parameter, a string) are side
effects of the trace, made once, as anywhere in traced code.

What a static loop cannot carry is a clear error: a list that gets or loses
traced items (its length would differ per trip), or a dict given a tensor
as a key.
"""
from d2s.static.reachable import (LEAVES, MAX_DEPTH, MAX_NODES, function_roots, holds,
                                  walkable_object)

from .dispatch import _is_static
from .undefined import UndefinedVar

__all__ = ["LoopItems", "holds_static"]

_MISSING = object()
# A Layer's dicts whose entries read as its attributes (`self.attn.k`).
_LAYER_DICTS = ("_sub_layers", "_parameters", "_buffers")


class _Item:
    """One carried item: `container[key]` (a dict entry, a list slot or an
    object's attribute through its `__dict__`)."""

    __slots__ = ("container", "key", "label")

    def __init__(self, container, key, label):
        self.container, self.key, self.label = container, key, label

    def get(self):
        if isinstance(self.container, dict) and self.key not in self.container:
            return UndefinedVar(self.label)
        return self.container[self.key]

    def set(self, value):
        if type(value) is UndefinedVar:
            if isinstance(self.container, dict):
                self.container.pop(self.key, None)
            return
        self.container[self.key] = value


def holds_static(value):
    """`value` is, or holds in a list, tuple, dict or plain object, a static Variable."""
    return holds(value, _is_static)


class LoopItems:
    """The containers reachable from `fns` (a loop's body and condition, or an
    `if`'s branches) as they were before the construct, and the items found
    to carry (`items`)."""

    def __init__(self, fns, names, keyed=()):
        self.items = []
        self.keyed = keyed            # source labels of targets whose key varies
        self._found = set()           # (id(container), key) of `items`
        self._taken = set(names)      # labels in use (the loop's state names)
        self.before = {}              # id -> (container, shallow copy, label, attribute dict)
        roots = function_roots([f for f in fns if f is not None], bare=True)
        # lists and dicts first: the walk has a budget, which a big Layer may use up
        self._walk(sorted(roots, key=lambda root: not isinstance(root[1], (list, dict))))

    def _walk(self, roots):
        # (value, label, depth, whether a dict's entries read as attributes)
        stack = [(value, label, 0, False) for label, value in reversed(roots)]
        count = 0
        while stack and count < MAX_NODES:
            value, label, depth, as_attrs = stack.pop()
            if depth > MAX_DEPTH or isinstance(value, LEAVES):
                continue
            if isinstance(value, tuple):
                stack.extend((v, f"{label}[{i}]", depth + 1, False) for i, v in enumerate(value))
                continue
            if isinstance(value, (list, dict)):
                container, attrs = value, as_attrs
            elif walkable_object(value):
                container, attrs = value.__dict__, True
            else:
                continue
            if id(container) in self.before:
                continue
            count += 1
            self.before[id(container)] = (container, list(container) if isinstance(
                container, list) else dict(container), label, attrs)
            entries = enumerate(container) if isinstance(container, list) else list(
                container.items())
            for key, v in entries:
                if attrs and key in _LAYER_DICTS and isinstance(v, dict):
                    # a Layer's sublayers, parameters, buffers: read as its attributes
                    stack.append((v, label, depth + 1, True))
                else:
                    stack.append((v, _child(label, key, attrs), depth + 1, False))

    def changed(self):
        """(id(container), key) of every entry that no longer holds what it held."""
        out = set()
        for cid, (container, copy, _, _) in self.before.items():
            if isinstance(container, list):
                if len(container) != len(copy):
                    out.add((cid, None))
                out.update((cid, i) for i, (a, b) in enumerate(zip(container, copy))
                           if a is not b)
            else:
                if len(container) == len(copy) and all(
                        copy.get(k, _MISSING) is v for k, v in container.items()):
                    continue
                out.update((cid, k) for k, v in container.items()
                           if copy.get(k, _MISSING) is not v)
                out.update((cid, k) for k in copy if k not in container)
        return out

    def find(self, covered, construct):
        """After a trace of the body (or a branch): the entries it set to static
        values that the construct's own targets do not cover (`covered`:
        targets.entries_read) join `items`; True if there are any."""
        new = []
        for cid, key in self.changed() - covered:
            if (cid, key) in self._found:
                continue
            container, copy, label, attrs = self.before[cid]
            if key is None:
                self._check_length(container, copy, label, construct)
                continue
            if isinstance(container, dict) and key not in container:
                continue   # deleted: a Python change, made once per trace
            value = container[key]
            if not holds_static(value) and not _python_number_changed(copy, key, value):
                continue   # any other Python value: a side effect of the trace, as anywhere
            if _is_static(key):
                raise _error(self._keyed_label(label), construct, (
                    "a dict gets an item under a tensor key; a program cannot choose a "
                    "dict's key at run time: use Python keys (an `int` or `str`), or keep "
                    "the values in one tensor and write it with `t[i] = v`"))
            new.append((cid, key, self._label(label, key, attrs)))
        for cid, key, label in sorted(new, key=lambda n: n[2]):
            self._found.add((cid, key))
            self.items.append(_Item(self.before[cid][0], key, label))
        return bool(new)

    def _keyed_label(self, label):
        """The source text of the write whose key is a tensor (`steps[i]`),
        where the construct's own code has one on this container."""
        root = label.split(".")[0].split("[")[0]
        for text in self.keyed:
            if text.split(".")[0].split("[")[0] == root:
                return text
        return f"{label}[...]"

    def _label(self, label, key, attrs):
        text = base = _child(label, key, attrs)
        n = 2
        while text in self._taken:
            text, n = f"{base} ({n})", n + 1
        self._taken.add(text)
        return text

    @staticmethod
    def _check_length(lst, copy, label, construct):
        n = min(len(lst), len(copy))
        if len(lst) > len(copy) and all(a is b for a, b in zip(lst, copy)) \
                and not any(holds_static(v) for v in lst[n:]):
            return   # Python values appended: a side effect of the trace
        if len(lst) < len(copy) and not any(holds_static(v) for v in lst):
            return
        raise _error(label, construct, (
            "the list gets or loses items holding tensors in each trip through another "
            "name (a called function, an attribute, an alias), so its length would differ "
            "per trip, which a static loop cannot carry; append to a list the loop's own "
            "code names (`outs.append(v)`, stacked after the loop), or return the value "
            "from the function and append it in the loop"))

    def restore(self):
        """Every recorded container as it was before the loop (a trace of the body
        found more items: the loop is built again from the start)."""
        for container, copy, _, _ in self.before.values():
            if isinstance(container, list):
                if len(container) != len(copy) or any(
                        a is not b for a, b in zip(container, copy)):
                    container[:] = copy
            elif len(container) != len(copy) or any(
                    copy.get(k, _MISSING) is not v for k, v in container.items()):
                container.clear()
                container.update(copy)

    def labels(self):
        return tuple(item.label for item in self.items)

    def get(self):
        return tuple(item.get() for item in self.items)

    def set(self, values):
        for item, value in zip(self.items, values):
            item.set(value)


def _python_number_changed(copy, key, value):
    """A Python number (`int`, `float`, `bool`) that held one before and now
    holds another: a called function's `self.calls += 1` or `counter["n"] +=
    1`. Left as the trace made it, the write would happen once per branch and
    per trace whatever the data says (both branches of a tensor `if` are
    traced); carried like the construct's own targets, it becomes the value
    of the path taken (a tensor, as PaddlePaddle's converted code makes it)."""
    try:
        before = copy[key]
    except (KeyError, IndexError):
        return False
    numbers = (int, float, bool)
    return (type(value) in numbers and type(before) in numbers
            and (type(value) is not type(before) or value != before))


def _child(label, key, attrs):
    """How messages name `label`'s entry `key`: `self.attn.k`, `caches[0]['k']`
    (a LayerList's sublayer `'0'` as `blocks[0]`)."""
    if attrs:
        return f"{label}[{key}]" if isinstance(key, str) and key.isdigit() else f"{label}.{key}"
    return f"{label}[{key!r}]"


def _error(label, construct, why):
    from d2s.static import ControlFlowError
    from d2s.static.ir import user_origin
    origin = user_origin()
    where = f' ("{origin[0]}", line {origin[1]})' if origin else ""
    return ControlFlowError(f"'{label}' is written inside {construct} on a tensor{where}: {why}")
