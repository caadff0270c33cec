"""Reading and writing attribute/subscript targets carried as construct state.

Generated `get_state` / `set_state` functions read `acc[0]` or `self.h`
with `load_item` / `load_attr` and write them back with `store_item` /
`store_attr` (see convert/analysis/targets.py). A target that does not
exist yet reads as an UndefinedVar naming it, and writing an UndefinedVar
back makes it absent again, so each branch of a tensor `if` is traced from
the same starting state.

A tensor construct's output written back to a Layer's attribute (`if
x.sum() > 0: self.count += 1`, `self.h = self.cell(h)` in a tensor loop) is
the program's build-time Variable: right for the rest of the trace, but
eager code after the call, and the next call of the same program, would read
that Variable (arithmetic on it silently builds more Variables), never the
value of the path taken. While a program is traced (`layer_writes`) such
writes are remembered. A layer the caller can reach (the converted method's
`self`, an argument, a global, and their sublayers) has such writes turned
into writes the program replays after each run (jit.outliving) before this
looks; on any other layer the attribute then holds an UndefinedVar saying
so, whose use is an error naming it (a failed trace puts the value from
before back).
"""
import threading

from .dispatch import _is_static
from .undefined import UndefinedVar

_writes = threading.local()   # .outputs: id(value) -> (label, value before) while a
# construct writes back;
# .layers: [{(id(layer), name): (layer, name, label, value before, where)}], innermost trace last

__all__ = ["load_attr", "load_item", "store_attr", "store_item", "writing_back",
           "layer_writes", "entries_read"]

_REGISTRIES = ("_parameters", "_buffers", "_sub_layers")   # a Layer's attribute dicts


def load_attr(obj, name, label):
    if type(obj) is UndefinedVar:
        return UndefinedVar(label)
    reads = getattr(_writes, "reads", None)
    if reads is not None:
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict):
            reads.add((id(d), name))
            for reg in _REGISTRIES:
                held = d.get(reg)
                if isinstance(held, dict) and name in held:
                    reads.add((id(held), name))
    try:
        return getattr(obj, name)
    except AttributeError:
        return UndefinedVar(label)


def load_item(container, key, label):
    if type(container) is UndefinedVar:
        return UndefinedVar(label)
    reads = getattr(_writes, "reads", None)
    if reads is not None and isinstance(container, (list, dict)):
        if type(container) is list and isinstance(key, int) and key < 0:
            key += len(container)
        reads.add((id(container), key))
    try:
        return container[key]
    except (KeyError, IndexError):
        return UndefinedVar(label)


def entries_read(get_state):
    """{(id(container), key)} of the items and attributes a construct's
    `get_state` reads: the targets its own code writes, which its state
    carries already (loop_items looks for the others)."""
    _writes.reads = reads = set()
    try:
        get_state()
    finally:
        _writes.reads = None
    return reads


class writing_back:
    """While a tensor construct sets its `outputs` ({label: (value, value
    before the construct)}, the static values it changed) back into the
    caller's names and targets."""

    __slots__ = ("outputs", "saved")

    def __init__(self, outputs):
        self.outputs = {id(v): (label, before) for label, (v, before) in outputs.items()}

    def __enter__(self):
        self.saved = getattr(_writes, "outputs", None)
        _writes.outputs = self.outputs
        return self

    def __exit__(self, *exc):
        _writes.outputs = self.saved
        return False


class layer_writes:
    """Around the trace of one program: a Layer attribute a tensor construct
    wrote a Variable to is left undefined after it (or as it was, when the
    trace fails)."""

    __slots__ = ("written",)

    def __enter__(self):
        stack = getattr(_writes, "layers", None)
        if stack is None:
            stack = _writes.layers = []
        self.written = {}
        stack.append(self.written)
        return self

    def __exit__(self, exc_type, *exc):
        _writes.layers.pop()
        for layer, name, label, before, where in self.written.values():
            if exc_type is not None:
                if type(before) is not UndefinedVar:
                    setattr(layer, name, before)
                elif name in layer.__dict__:
                    delattr(layer, name)
            elif _is_static(layer.__dict__.get(name)):
                setattr(layer, name, UndefinedVar(label, (
                    f"the layer {type(layer).__name__} got it from a tensor `if` or loop of a "
                    f"to_static call{where}: that value exists only inside the program, while "
                    "it is built; return it from the function (and set the attribute from the "
                    "result) to read it after the call")))
        return False


def store_attr(obj, name, value):
    if type(value) is not UndefinedVar:
        outputs = getattr(_writes, "outputs", None)
        if outputs and id(value) in outputs:
            _remember_layer_write(obj, name, *outputs[id(value)])
        setattr(obj, name, value)
    elif type(obj) is not UndefinedVar and name in getattr(obj, "__dict__", ()):
        delattr(obj, name)


def store_item(container, key, value):
    if type(value) is not UndefinedVar:
        container[key] = value
    elif isinstance(container, dict) and key in container:
        del container[key]


def _remember_layer_write(obj, name, label, before):
    stack = getattr(_writes, "layers", None)
    if not stack or (id(obj), name) in stack[-1]:
        return
    if not hasattr(type(obj), "named_sublayers"):   # a Layer (d2s.nn is not imported here)
        return   # a user's object: read in the same trace, or the user's to keep
    from d2s.static.ir import user_origin
    origin = user_origin()
    where = f" ({origin[0]}, line {origin[1]})" if origin else ""
    stack[-1][(id(obj), name)] = (obj, name, label, before, where)
