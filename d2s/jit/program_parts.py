"""The parts of a `ConcreteProgram` that are not how it runs: which eager
Tensors it reads besides its inputs (`CapturedTensors`) and where its output
values go in the returned structure (`OutputStructure`). How each backend
runs it is the backend's (`d2s.backends`)."""
from __future__ import annotations

import threading

from ..core import state
from ..core.dtypes import is_floating
from ..core.tensor import Tensor
from ..static.pytree import unflatten


class OutputStructure:
    """Where the output Variables go in the returned structure.

    The function's result is flattened to leaves; `positions` are the leaves
    computed by the program, every other leaf is a Python value traced as is
    (None included: a function may return None, so None never marks a slot).
    `lists` are the leaves that were Python lists filled in a tensor loop or
    `if` (a tensor array in the program, one value whose axis 0 holds the
    items): each run gives them back as a list of its rows, as eager code
    returns the list, its length known once the program has run.
    """
    __slots__ = ("tree", "constants", "positions", "single", "flat_tuple", "lists")

    def __init__(self, tree, constants, positions, lists=()):
        self.tree = tree
        self.constants = constants
        self.positions = positions
        self.lists = frozenset(lists)
        self.single = tree is None and positions == [0] and not self.lists  # the common case
        # `return a, b`: a tuple of computed values only (also kept fast)
        self.flat_tuple = (tree == (tuple, (None,) * len(constants))
                           and positions == list(range(len(constants))) and not self.lists)

    def restructure(self, values):
        if self.single:
            return values[0]
        if self.flat_tuple:
            return tuple(values)
        leaves = list(self.constants)
        lists = self.lists
        for pos, value in zip(self.positions, values):
            leaves[pos] = _rows(value) if pos in lists else value
        return unflatten(self.tree, leaves)


def _rows(value):
    """A tensor array's value as the Python list of its items (differentiable:
    each is a row of the output)."""
    return [value[i] for i in range(int(value.shape[0]))]


class CapturedTensors:
    """The eager Tensors a program reads besides its inputs (`program.captured`,
    in order): parameters and other tensors its code used.

    A tensor that was an attribute of a Layer (the converted method's `self`,
    a Layer argument, or one of their sublayers) is captured by its path,
    (layer, attribute): each run looks the attribute up again, so
    `layer.offset = new_tensor` after conversion is seen by the next run, as
    an in-place update of a parameter is. The program is built for the
    captured tensor's shape and dtype; a replacement that differs in either
    is a clear error. Tensors reached any other way (a global, a closure) are
    captured by reference to the object."""

    def __init__(self, program, paths=()):
        self.program = program
        self.tensors = list(program.captured.values())
        self.names = list(program.captured)
        # (the layer's __dict__, attribute, index into tensors, layer)
        self.paths = [(vars(layer), attr, i, layer) for layer, attr, i in paths]
        self.floating = [i for i, t in enumerate(self.tensors) if is_floating(t.dtype)]
        self.version = state.tensor_attributes_version[0]  # the paths were checked then
        self._lock = threading.Lock()

    @classmethod
    def from_layers(cls, program, roots):
        """Find the captured tensors held as attributes of `roots` (duck-typed
        Layers: `named_sublayers`) or of their sublayers."""
        index = {id(t): i for i, t in enumerate(program.captured.values())}
        paths, found = [], set()
        for root in roots:
            for _, layer in root.named_sublayers(include_self=True):
                for attr, value in vars(layer).items():
                    i = index.get(id(value))
                    if i is not None and i not in found:
                        found.add(i)
                        paths.append((layer, attr, i))
        return cls(program, paths)

    def current(self):
        """The tensors to read now (a replaced layer attribute is rebound first)."""
        if self.paths and state.tensor_attributes_version[0] != self.version:
            self._recheck()
        return self.tensors

    def _recheck(self):
        """Some layer's tensor attribute changed: rebind the paths that differ."""
        with self._lock:
            version = state.tensor_attributes_version[0]
            for attrs, attr, i, layer in self.paths:
                if attrs.get(attr) is not self.tensors[i]:
                    self._rebind(layer, attr, i, attrs)
            self.version = version

    def add_paths(self, entries):
        """Also read by path: (dict, key, the captured Tensor found there, label)
        per item of a dict (or a plain object's attribute) that a program's
        writes replace after each run (jit.outliving)."""
        index = {id(t): i for i, t in enumerate(self.tensors)}
        pathed = {i for _, _, i, _ in self.paths}
        for d, key, tensor, label in entries:
            i = index.get(id(tensor))
            if i is not None and i not in pathed:
                pathed.add(i)
                self.paths.append((d, key, i, label))

    def _rebind(self, layer, attr, i, attrs=None):
        new, old = (layer.__dict__ if attrs is None else attrs).get(attr), self.tensors[i]
        if not isinstance(new, Tensor) or new.shape != old.shape or new.dtype != old.dtype:
            what = (f"a {new.dtype.name}{list(new.shape)} tensor" if isinstance(new, Tensor)
                    else f"a {type(new).__name__}")
            where = layer if isinstance(layer, str) else f"{type(layer).__name__}.{attr}"
            raise ValueError(
                f"{where} was replaced by {what} after conversion; "
                f"the program was built for a {old.dtype.name}{list(old.shape)} tensor "
                "and reads the attribute on every run: assign a tensor of that shape "
                "and dtype")
        program, name = self.program, self.names[i]
        var = program._captured_ids.pop(id(old))
        program._captured_ids[id(new)] = var
        program.captured[name] = new
        tensors = list(self.tensors)  # runs in progress keep the list they read
        tensors[i] = new
        self.tensors = tensors
