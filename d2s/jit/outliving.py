"""State that outlives the call: a traced value written into a user's object.

A converted function may store a traced value where the caller still reaches
it after the call (DESIGN §4): a Layer attribute or buffer
(`self._mean = ...`), an item of a list or dict held by `self`, an argument
or a global (`cache[k] = x`, `self.hist.append(h)`), an attribute of a plain
object. Done as traced, the write would leave the trace's static Variable in
that object: eager code after the call, and every later call of the same
program, would read a build-time value (arithmetic on it silently builds
more Variables). So a trace is bracketed by a `Watch`:

- before it, the mutable containers reachable from the roots (the bound
  Layer and its sublayers, the arguments, the closure cells, the globals the
  function names) are recorded shallowly: a list's items, a dict's items,
  an object's `__dict__` (a dict like any other);
- after it, every entry that now holds a Variable is put back as it was and
  becomes an `Effect`; its Variables become outputs of the program, and each
  successful run performs the same write with that run's eager Tensors
  (`replay`). A run that raises performs none: the replay comes after the
  whole run. Entries the trace changed to plain Python values stay as the
  trace left them (Python side effects happen once per trace, §4);
- a trace that fails puts back every entry it changed (`rollback`).

The function's own input Tensors are the other case: an in-place write
that reaches one (`cache[:, i] = k`, `x.add_(1)`) rebinds its data Variable
(static.rebinding), and its final value becomes an "input" effect: after
each successful run it is written into the Tensor the *running* call passed
at that input position, by value (`core.inplace.write_back`: the Tensor
keeps its identity, and its gradient path when the run was taped). A list
or dict entry of an argument holding such an input is no effect of its own:
eagerly the entry still holds the same Tensor. As the program reads two
positions holding one Tensor (`f(a, a)`) as one value, a program writing
its inputs holds only for calls passing the same Tensors alike
(`Effects.aliases_hold`).

A diff and not interception because these writes are ordinary Python stores
into builtin lists and dicts, made by the user's code or by code it calls
(a sublayer, a helper function): nothing can hook them, but all of them end
in a reachable container.

How a write replays. A list that only grew (`append`, `extend`) replays as
an `extend` of the new items, so a history grows call after call as
eagerly; an item set replays as the same item set. A registered parameter or
buffer of a Layer given a value of its own shape and dtype is updated in
place (its `_value`), as PaddlePaddle's BatchNorm updates its statistics:
programs that captured it read the new value, an xla program keeps it on
the device, and a training step's guard still holds. Anything else (a list
that shrank and gained traced items, a value computed inside a branch or
loop body) cannot be replayed and is a `ControlFlowError` naming the target,
the line that computed the value, and what to write instead.
"""
from __future__ import annotations

import copy

from ..core import inplace, state
from ..core.tensor import Tensor
from ..static.control_flow import ControlFlowError
from ..static.ir import Variable
from ..static.rebinding import entry_written, latest
from ..static.reachable import (LEAVES, MAX_DEPTH, MAX_NODES, function_roots, holds,
                                is_layer, walkable_object)

__all__ = ["Watch", "Effects", "CALLS", "swap_in", "swap_out", "function_roots"]

_MAX_DEPTH = MAX_DEPTH
_MAX_NODES = MAX_NODES
_LEAVES = LEAVES
_is_layer = is_layer
_walkable_object = walkable_object


_PY_SCALARS = (int, float, bool, str, type(None))


def has_variable(value, depth=0):
    """`value` is, or holds in a container or a plain object, a static Variable."""
    return holds(value, _is_variable, _plain_object, depth)


def _is_variable(value):
    return isinstance(value, Variable)


def _plain_object(value):
    """A user's object (not a Layer) whose attributes a new value may carry:
    rebuilt per run as a shallow copy (`_ObjectTemplate`)."""
    return not _is_layer(value) and _walkable_object(value) and not isinstance(value, _LEAVES)


class _ObjectTemplate:
    """A plain object made by the trace holding traced values: each run stores
    a shallow copy of it with its attributes rebuilt."""
    __slots__ = ("obj", "attrs")

    def __init__(self, obj, attrs):
        self.obj = obj
        self.attrs = attrs


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class Effect:
    """One write a run performs: `kind` "set" (container[key] = value; an
    object's attribute when `owner` is set), "extend" (list.extend(value)) or
    "assign" (an eager Tensor's value, in place: `container` is the Tensor).
    `route`: for a container the trace reached through an argument, how to
    reach it from each call's own arguments (`_Route`), else None."""
    __slots__ = ("kind", "container", "key", "template", "owner", "label", "route")

    def __init__(self, kind, container, key, template, owner, label, route=None):
        self.kind = kind
        self.container = container
        self.key = key
        self.template = template
        self.owner = owner
        self.label = label
        self.route = route

    def targets(self, call):
        """(container, owner) this run writes: the traced call's, or for a
        container reached through an argument, the one `call` (the running
        call's (args, kwargs)) holds at the same place."""
        if self.route is None or call is None:
            return self.container, self.owner
        found = self.route.resolve(call, self.label)
        if self.route.is_object:
            return found.__dict__, (found if self.owner is not None else None)
        return found, None


class _Route:
    """Where a container sits under a call's arguments: the argument (a
    position or a keyword) and the steps from it (("item", key) for a list,
    tuple or dict item, ("attr", name) for an object's attribute);
    `is_object`: the container is that object's `__dict__`."""
    __slots__ = ("argument", "steps", "is_object", "where")

    def __init__(self, argument, steps, is_object):
        self.argument, self.steps, self.is_object = argument, steps, is_object
        self.where = ""   # ", computed at <file>, line N" of a value written there

    def resolve(self, call, label):
        args, kwargs = call
        kind, key = self.argument
        try:
            value = args[key] if kind == "pos" else kwargs[key]
            for how, k in self.steps:
                value = getattr(value, k) if how == "attr" else value[k]
        except (IndexError, KeyError, AttributeError, TypeError):
            raise ControlFlowError(
                f"{label}{self.where}: the program writes this entry of an argument after "
                "each run, "
                "and this call's argument has no such entry (its structure differs from "
                "the call the program was traced for); pass arguments of the same structure, "
                "or return the new values and store them after the call") from None
        return value


class _Calls:
    """The running call's arguments, per thread (set by StaticFunction around a
    run): a program's writes into an argument's containers go to this call's."""

    def __init__(self):
        import threading
        self._local = threading.local()

    @property
    def current(self):
        return getattr(self._local, "call", None)

    def running(self, args, kwargs):
        import contextlib

        @contextlib.contextmanager
        def scope():
            before = getattr(self._local, "call", None)
            self._local.call = (tuple(args), dict(kwargs))
            try:
                yield
            finally:
                self._local.call = before
        return scope()


CALLS = _Calls()


class Effects:
    """The writes one program performs after each run; `variables` are the
    program outputs they read (in order, each once)."""

    def __init__(self, effects, variables, guards=(), read_paths=()):
        self.effects = effects
        self.variables = variables
        # (dict, key, captured Tensor, label): read by path from now on
        self.read_paths = list(read_paths)
        # (dict, key, value before the trace, label): entries written whose old
        # Python value (or absence) the trace may have read
        self.guards = list(guards)
        # jit.guards.ValueGuard: eager tensors whose value the trace read as Python
        self.value_guards = []
        # jit.read_guards.ReadGuards: plain values it read from the caller's state
        self.read_guards = None
        # {(id(container), key): the value converted code first read there}
        self.first_reads = {}
        # {index in `guards`: _Route} for entries of containers under the arguments
        self.guard_routes = {}
        # signature.tensor_aliases of the traced call, when it writes an input
        # in place: the program holds for calls passing the same Tensors alike
        self.aliases = None
        self.writes_inputs = False
        # [(leaf position in the result, input position)]: the call returns the
        # written input Tensor itself there (jit.concrete_program._returned_inputs)
        self.returned = []

    def hold(self):
        """The entries the program wrote, and the values it read, still hold
        what its trace found."""
        read = self.read_guards
        if read is not None and not read.holds():
            return False
        for g in self.value_guards:
            if not g.holds():
                return False
        call = CALLS.current if self.guard_routes else None
        for i, (d, key, before, label) in enumerate(self.guards):
            route = self.guard_routes.get(i) if call is not None else None
            if route is not None:  # an argument's container: this call's
                try:
                    d = route.resolve(call, label)
                except ControlFlowError:
                    return False
                if route.is_object:
                    d = d.__dict__
            if key is _LENGTH:
                if len(d) != before:
                    return False
                continue
            now = d.get(key, _MISSING)
            if now is before:
                continue
            if isinstance(before, Tensor):
                if not (isinstance(now, Tensor) and now.shape == before.shape
                        and now.dtype == before.dtype):
                    return False
            elif not (type(now) is type(before) and isinstance(
                    before, (int, float, str, bool)) and now == before):
                return False
        return True

    def replays(self):
        """Whether a run has writes to perform or conditions beyond its reads."""
        return bool(self.effects or self.value_guards or self.guards)

    def __bool__(self):
        return bool(self.effects or self.value_guards or self.guards
                    or self.read_guards is not None)

    def aliases_hold(self, tensors):
        """The running call passes the same Tensor at the same positions as the
        traced call did (only a program writing an input in place asks)."""
        if not self.writes_inputs:
            return True
        if self.aliases is None:  # distinct Tensors, the common case: no list built
            n = len(tensors)
            return n < 2 or (tensors[0] is not tensors[1] if n == 2
                             else len(set(map(id, tensors))) == n)
        from .signature import tensor_aliases
        return tensor_aliases(tensors) == self.aliases

    def check_inputs(self, tensors):
        """Before a run: an input the program writes in place may be written,
        as eagerly (not a leaf that requires grad while gradients are on)."""
        if self.writes_inputs:
            for e in self.effects:
                if e.kind == "input":
                    inplace.check_writable(tensors[e.key], e.label)

    def replay(self, values, tensors=None):
        """Perform every write with `values` (eager Tensors, one per variable);
        `tensors`: the running call's input Tensors (written in place where
        the program writes its inputs)."""
        replaced = False
        call = CALLS.current
        done = set()
        for e in self.effects:
            if e.kind == "assign":
                new = values[e.template.index]
                e.container._value = new._value
                continue
            if e.kind == "input":
                target = tensors[e.key]
                if id(target) not in done:  # (a Tensor passed twice: written once)
                    done.add(id(target))
                    inplace.write_back(target, values[e.template.index], e.label)
                continue
            container, owner = e.targets(call)
            if e.kind == "python":  # a Python value the trace wrote (jit.guards)
                if owner is not None:
                    setattr(owner, e.key, e.template)
                else:
                    container[e.key] = e.template
                continue
            value = _rebuild(e.template, values)
            if e.kind == "extend":
                container.extend(value)
                continue
            replaced = True
            if owner is not None:
                setattr(owner, e.key, value)
            else:
                container[e.key] = value
        if replaced:  # programs reading these entries by path look again
            state.tensor_attributes_version[0] += 1

    def add_assigns(self, assigns, program):
        """Also write each (eager Tensor, Variable) of `assigns` in place."""
        gb = program.global_block()
        for tensor, var in assigns:
            label = f"tensor '{tensor.name}'" if tensor.name else \
                f"a {tensor.dtype.name}{list(tensor.shape)} tensor"
            Watch._check_visible(var, label, gb)
            slot = _Slot(len(self.variables))
            self.variables.append(var)
            self.effects.append(Effect("assign", tensor, None, slot, None, label))

    def add_input_writes(self, written, program, labels, aliases):
        """Also write each (input position, Variable of its final value) of
        `written` into the running call's Tensor at that position, after
        each run (`labels`: the inputs' names as the user wrote them)."""
        if not written:
            return
        gb = program.global_block()
        for position, var in written:
            label = f"the input '{labels[position]}'"
            Watch._check_visible(var, label, gb)
            slot = _Slot(len(self.variables))
            self.variables.append(var)
            self.effects.append(Effect("input", None, position, slot, None, label))
        self.writes_inputs = True
        self.aliases = aliases

    def input_labels(self):
        """The labels of the inputs the program writes in place."""
        return [e.label for e in self.effects if e.kind == "input"]

    def labels(self):
        return [e.label for e in self.effects]


def _template(value, slots, depth=0):
    """`value` with each Variable replaced by its `_Slot` (new containers are
    rebuilt per run, as eager code builds them per call)."""
    if isinstance(value, Variable):
        slot = slots.get(id(value))
        if slot is None:
            slot = slots[id(value)] = (_Slot(len(slots)), value)
        return slot[0]
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, list):
        return [_template(v, slots, depth + 1) for v in value]
    if type(value) is tuple:
        return tuple(_template(v, slots, depth + 1) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*[_template(v, slots, depth + 1) for v in value])
    if type(value) is dict:
        return {k: _template(v, slots, depth + 1) for k, v in value.items()}
    if _plain_object(value) and has_variable(value, depth):
        return _ObjectTemplate(value, {k: _template(v, slots, depth + 1)
                                       for k, v in vars(value).items()})
    return value


def _rebuild(template, values):
    if type(template) is _Slot:
        return values[template.index]
    if isinstance(template, list):
        return [_rebuild(v, values) for v in template]
    if type(template) is tuple:
        return tuple(_rebuild(v, values) for v in template)
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*[_rebuild(v, values) for v in template])
    if type(template) is dict:
        return {k: _rebuild(v, values) for k, v in template.items()}
    if type(template) is _ObjectTemplate:
        new = copy.copy(template.obj)
        vars(new).update({k: _rebuild(v, values) for k, v in template.attrs.items()})
        return new
    return template


class Watch:
    """The containers reachable from `roots` ((label, value) pairs) as they
    were before a trace (see module doc)."""

    def __init__(self, roots, arguments=None):
        # `arguments`: {index in `roots`: ("pos", i) or ("kw", name)} for the
        # roots that are the call's arguments (their containers get routes)
        arguments = arguments or {}
        kept = [(i, label, v) for i, (label, v) in enumerate(roots) if v is not None]
        self.roots = [(label, v) for _, label, v in kept]
        self._root_args = [arguments.get(i) for i, _, _ in kept]
        # id(container) -> _Route, for containers first reached through an argument
        self.routes = {}
        # id -> (container, shallow copy, label, owning object or None)
        self.before = {}
        self._walk(self.before, record=True)
        # id(a Layer's `_parameters` / `_buffers` dict) -> the Layer
        self._registry_owner = {}
        for _, _, _, obj in self.before.values():
            if obj is not None and _is_layer(obj):
                for reg in ("_parameters", "_buffers"):
                    held = obj.__dict__.get(reg)
                    if isinstance(held, dict):
                        self._registry_owner[id(held)] = obj

    def _walk(self, seen, record):
        count = 0
        stack = [(value, label, 0, None, None if arg is None else (arg, ()))
                 for (label, value), arg in reversed(list(zip(self.roots, self._root_args)))]
        while stack and count < _MAX_NODES:
            value, label, depth, owner, route = stack.pop()
            if isinstance(value, _LEAVES) or depth > _MAX_DEPTH:
                continue
            if isinstance(value, tuple):
                for i, v in enumerate(value):
                    stack.append((v, f"{label}[{i}]", depth + 1, None,
                                  None if route is None else (route[0], route[1] + (("item", i),))))
                continue
            if isinstance(value, (list, dict)):
                container, obj = value, owner
            elif _walkable_object(value):
                container, obj = value.__dict__, value
                if id(container) in seen:
                    continue
            else:
                continue
            if id(container) in seen:
                continue
            count += 1
            if record:
                copy = list(container) if isinstance(container, list) else dict(container)
                seen[id(container)] = (container, copy, label, obj)
                if route is not None:
                    self.routes[id(container)] = _Route(route[0], route[1], obj is not None)
            else:
                seen[id(container)] = (container, None, label, obj)
            items = enumerate(container) if isinstance(container, list) else list(
                container.items())
            how = "attr" if obj is not None else "item"
            for key, v in items:
                if obj is not None:
                    child = f"{label}.{key}"
                else:
                    child = f"{label}[{key!r}]"
                stack.append((v, child, depth + 1, None,
                              None if route is None else (route[0], route[1] + ((how, key),))))

    # ---- after the trace ---------------------------------------------------------------
    def rollback(self):
        """The trace failed: every recorded container as it was."""
        touched_layers = False
        for container, copy, _, owner in self.before.values():
            if isinstance(container, list):
                if len(container) != len(copy) or any(a is not b for a, b in zip(container, copy)):
                    container[:] = copy
            elif _dict_changed(container, copy):
                container.clear()
                container.update(copy)
                touched_layers = touched_layers or owner is not None
        if touched_layers:
            state.tensor_attributes_version[0] += 1
            state.plain_attributes_version[0] += 1

    def collect(self, program, grown_only=frozenset()):
        """The trace succeeded: put back every entry holding a Variable and
        return the writes to replay (`Effects`). `grown_only`: ids of the lists
        the trace only appended to, never reading their length or items
        (convert.runtime.reads): no guard on their length."""
        self.grown_only = grown_only
        slots, effects = {}, []
        self.guards, self.read_paths = [], []
        gb = program.global_block()
        restore = []
        for container, copy, label, owner in list(self.before.values()):
            if isinstance(container, list):
                found = self._list_effects(container, copy, label, slots, gb)
                if found:
                    effects.extend(found)
                    restore.append((container, copy, None))
            else:
                found = self._dict_effects(container, copy, label, owner, slots, program)
                if found:
                    effects.extend(found)
                    restore.append((container, copy, [e.key for e in found]))
        for container, copy, keys in restore:
            if keys is None:
                container[:] = copy
            else:
                for key in keys:
                    if key in copy:
                        container[key] = copy[key]
                    else:
                        container.pop(key, None)
        if restore:
            state.tensor_attributes_version[0] += 1
            state.plain_attributes_version[0] += 1
        ordered = sorted(slots.values(), key=lambda s: s[0].index)
        variables = [v for _, v in ordered]
        for e in effects:
            if e.kind != "assign":
                e.route = self.routes.get(id(e.container))
                if e.route is not None and not e.route.where and e.kind != "python":
                    e.route.where = _origin_of(_rebuild(e.template, variables), gb)
        found = Effects(effects, variables, self.guards, self.read_paths)
        found.guard_routes = {i: self.routes[id(g[0])] for i, g in enumerate(self.guards)
                              if id(g[0]) in self.routes}
        return found

    def _list_effects(self, lst, copy, label, slots, gb):
        if not any(has_variable(v) for v in lst):
            return []
        n = len(copy)
        if len(lst) >= n and all(a is b for a, b in zip(lst, copy)):
            new = lst[n:]
            self._check_visible(new, f"{label} (items appended)", gb)
            # the trace may have read its length or items: the program holds for
            # a list of this length only (jit.guards), unless it only grew it
            if id(lst) not in self.grown_only:
                self.guards.append((lst, _LENGTH, n, label))
            return [Effect("extend", lst, None, _template(new, slots), None, label)]
        if len(lst) == n and all(a is b or has_variable(a) for a, b in zip(lst, copy)):
            found = []
            marks = entry_written(lst)
            for i, (a, b) in enumerate(zip(lst, copy)):
                if a is not b and _input_written_in_place(b, a, marks.get(i)):
                    lst[i] = b  # (the caller's Tensor itself is written: "input" effects)
                    continue
                if a is not b:
                    self._check_visible(a, f"{label}[{i}]", gb)
                    found.append(Effect("set", lst, i, _template(a, slots), None,
                                        f"{label}[{i}]"))
            return found
        raise ControlFlowError(
            f"{label}: a list that outlives the call lost or moved items and got traced "
            f"values in "
            f"one to_static call{_origin_of(lst, gb)}; a run cannot replay that. Build the "
            "new list inside the function and return it (assign it after the call), or "
            "only append to or set items of the caller's list")

    def _dict_effects(self, d, copy, label, owner, slots, program):
        gb = program.global_block()
        found = []
        layer = owner if owner is not None and _is_layer(owner) else None
        if layer is None:  # a Layer's `_parameters` / `_buffers` dict: its layer
            layer = self._registry_owner.get(id(d))
        registered = {}
        marks = entry_written(d)
        if layer is not None:  # as registered before the trace
            for reg in ("_parameters", "_buffers"):
                held = layer.__dict__.get(reg)
                if isinstance(held, dict):
                    entry = self.before.get(id(held))
                    registered.update(entry[1] if entry is not None else held)
        for key, value in list(d.items()):
            before = copy.get(key, _MISSING)
            if value is before:
                continue
            where = f"{label}.{key}" if owner is not None else f"{label}[{key!r}]"
            if _input_written_in_place(before, value, marks.get(key)):
                d[key] = before  # (the caller's Tensor itself is written: "input" effects)
                continue
            if not has_variable(value):
                if (type(value) in _PY_SCALARS and (before is _MISSING or type(before)
                                                    in _PY_SCALARS)):
                    # `self.step += 1` with a Python int: the program is built for the
                    # value before (a guard) and the write is replayed after each run
                    is_attr = owner is not None and d is getattr(owner, "__dict__", None)
                    self.guards.append((d, key, before, where))
                    found.append(Effect("python", d, key, value,
                                        owner if is_attr else None, where))
                continue
            self._check_visible(value, where, gb)
            is_attr = owner is not None and d is getattr(owner, "__dict__", None)
            if (isinstance(before, Tensor) and _registered(layer, d, key, before, registered)
                    and isinstance(value, Variable) and value.dtype == before.dtype
                    and tuple(value.shape) == tuple(before.shape)):
                # a parameter or buffer given a value of its own shape and dtype
                found.append(Effect("assign", before, key, _template(value, slots), None,
                                    where))
                continue
            if isinstance(before, Variable):
                pass  # an input of the program (see swap_in): the signature checks it
            elif not isinstance(before, Tensor):
                # the trace may have read this Python value (or its absence): the
                # program holds only while the entry still is what it was
                self.guards.append((d, key, before, where))
            elif id(before) in program._captured_ids:
                # the program reads it: for a tensor of that shape and dtype only,
                # and (a dict item, a plain object's attribute) by path from now on
                # (a Layer's tensor attributes are read by path already)
                self.guards.append((d, key, before, where))
                if layer is None:
                    self.read_paths.append((d, key, before, where))
            found.append(Effect("set", d, key, _template(value, slots),
                                owner if is_attr else None, where))
        return found

    @staticmethod
    def _check_visible(value, where, gb):
        for var in _variables(value):
            if var.block is not gb:
                raise ControlFlowError(
                    f"{where} is set to '{var.name}', a value of a tensor `if` or loop body "
                    f"of a to_static call{_origin_of(var, gb)}, and the object outlives the "
                    "call: the program cannot write it back. Assign it to a local name in "
                    "the branch or loop and write the object after it")


def swap_in(orig, new, undo):
    """Return `orig` (an argument: a list or dict holding tensors) with each
    tensor replaced in place, at any depth of lists and dicts, by the trace's
    value standing for it in `new` (the argument as the trace rebuilt it);
    `undo` records (container, key, tensor, value put there) for `swap_out`.
    Anything else (a tuple, another type) gives `new`, as before."""
    if isinstance(orig, list) and isinstance(new, list) and len(orig) == len(new):
        keys = range(len(orig))
    elif isinstance(orig, dict) and isinstance(new, dict) and orig.keys() == new.keys():
        keys = list(orig)
    else:
        return new
    for key in keys:
        o, n = orig[key], new[key]
        if o is n:
            continue
        if isinstance(o, (list, dict)):
            if swap_in(o, n, undo) is o:
                continue
        undo.append((orig, key, o, n))
        orig[key] = n
    return orig


def swap_out(undo):
    """Put back what `swap_in` replaced, where the entry still holds the value
    it put there (the trace's own writes were put back before: `collect`)."""
    for container, key, original, placed in reversed(undo):
        try:
            if container[key] is placed:
                container[key] = original
        except (IndexError, KeyError):
            pass
    undo.clear()


def _input_written_in_place(before, value, marked=None):
    """An entry that held an input of the program (a tensor of an argument's
    list or dict, swapped in) and now holds that input's value after an
    in-place write (`ys[0].add_(x)`): eagerly the entry still holds the same
    Tensor, which the write changed; the program writes that Tensor back.
    `marked`: the input a tensor loop wrote through this entry
    (static.rebinding.mark_entry): the loop carried the entry, whose value
    the input takes now (a link, read by the "input" effects)."""
    if not (isinstance(before, Variable) and before.is_data):
        return False
    if latest(before) is value:
        return True
    if marked is before and isinstance(value, Variable):
        latest(before)._latest = value
        return True
    return False


def _registered(layer, d, key, before, registered):
    """`before` is a Layer's registered parameter or buffer under `key`, seen
    in the Layer's `__dict__` or in its `_parameters` / `_buffers` dict."""
    if layer is None:
        return False
    if d is layer.__dict__ or d is layer.__dict__.get("_parameters") \
            or d is layer.__dict__.get("_buffers"):
        return registered.get(key) is before
    return False


def _dict_changed(d, copy):
    if len(d) != len(copy):
        return True
    for k, v in d.items():
        if copy.get(k, _MISSING) is not v:
            return True
    return False


def _variables(value, depth=0):
    if isinstance(value, Variable):
        yield value
    elif depth > _MAX_DEPTH or isinstance(value, _LEAVES):
        return
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _variables(v, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _variables(v, depth + 1)
    elif _plain_object(value):
        for v in vars(value).values():
            yield from _variables(v, depth + 1)


def _origin_of(value, gb):
    """`, computed at <file>, line N` for the op that made a Variable of `value`."""
    for var in _variables(value):
        block = var.block
        for op in reversed(block.ops):
            if any(var.name in names for names in _op_output_names(op)):
                origin = op.origin
                if origin:
                    return f" (computed at {origin[0]}, line {origin[1]})"
                return ""
    return ""


def _op_output_names(op):
    outs = op.outputs
    if isinstance(outs, dict):
        for v in outs.values():
            yield [getattr(x, "name", x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    else:
        yield [getattr(x, "name", x) for x in outs]


_MISSING = object()
_LENGTH = object()  # a guard key: the length of a list
