"""What a trace read from objects: the attribute and item loads of converted code.

A trace bakes every plain Python value it reads into the program
(`x / self.temperature` divides by a constant). jit.read_guards turns the
reads of state that outlives the call into guards checked before each run;
this module only records them. The converted code loads attributes and
items through `read_attr` / `read_item` (convert.transformers.plain_reads);
converted code runs only while a program is traced, so the recording costs
trace time, never a run.

A read is recorded as the container it came from (an object's `__dict__`,
a list, a dict), the key and how the loaded value is used next (`role`):

- "path": the value is the base of another attribute or item load
  (`self.cfg.t`, `self.opts["k"]`): only what it is, not its contents, was
  read (the next load records its own entry);
- "append": the receiver of `.append` / `.extend`: a list the trace only
  grows, whose length and items it never saw;
- "call": the value is called (`self.head(h)`);
- None: anything else (passed to a call, iterated, `len()`, a method
  receiver): a list's or dict's whole contents may have been read.

The converted functions a trace called are recorded too (`note_function`):
the module globals they name are guarded like attributes.
"""
import sys
import threading
from types import ModuleType

from numpy import ndarray as _ndarray

from d2s.core import array_contents
from d2s.static.ir import Variable as _Variable


__all__ = ["read_attr", "read_item", "recording", "note_function", "convert_hasattr",
           "convert_getattr"]

_local = threading.local()   # .recorder: the innermost `Reads` of this thread, or None


class Reads:
    """The reads of one trace: `entries` {(id(container), key): [container, key,
    roles, value]}, `origins` {(id(container), key): (file, line) of the
    converted code's first read (jit.read_guards maps it to the user's)} and `functions` {id(fn): fn} (converted
    functions called)."""

    __slots__ = ("entries", "origins", "functions", "fixed", "outer", "absent", "arrays")

    def __init__(self, outer):
        self.absent = set()  # (id(container), key): an attribute found missing
        self.arrays = {}     # id(numpy array read): its contents when first read
        self.entries = {}
        self.origins = {}
        self.functions = {}
        self.fixed = {}
        self.outer = outer

    def add_fixed(self, container, key, value, label, at, absent=False):
        """A read of a class's or a user module's attribute (`container`: its
        namespace), or with `absent` an instance found without its own (the
        class's was read instead). These live outside any call's reach, so
        they are guarded wherever they are (jit.read_guards)."""
        k = (id(container), key)
        if k not in self.fixed:
            self.fixed[k] = (container, key, value, label, at, absent)
        if self.outer is not None:
            self.outer.add_fixed(container, key, value, label, at, absent)

    def add(self, container, key, role, value, at=None):
        k = (id(container), key)
        entry = self.entries.get(k)
        if entry is None:
            self.entries[k] = [container, key, {role}, value]
            if type(value) is _ndarray and id(value) not in self.arrays:
                # (what it held when read: a write by the trace itself is then
                # told apart from a write by the caller, jit.read_guards)
                self.arrays[id(value)] = _snapshot(value)
            if at is None:
                frame = sys._getframe(1)  # (add <- read_attr / read_item <- converted code)
                at = (frame.f_back.f_code.co_filename, frame.f_back.f_lineno)
            self.origins[k] = at
        else:
            entry[2].add(role)
        if self.outer is not None:  # an enclosing trace reads through this one
            self.outer.add(container, key, role, value, at or self.origins[k])


def _snapshot(array):
    """The array's contents (core.array_contents), None for one too large to
    compare (not copied)."""
    return array_contents.snapshot(array) if array_contents.checked(array) else None


class recording:
    """While the block runs, record the reads of converted code in this thread
    (`as` gives the `Reads`)."""

    __slots__ = ("reads",)

    def __enter__(self):
        self.reads = Reads(getattr(_local, "recorder", None))
        _local.recorder = self.reads
        return self.reads

    def __exit__(self, *exc):
        _local.recorder = self.reads.outer
        return False


def read_attr(obj, name, role=None):
    """`obj.name`, recorded when it came from `obj`'s own `__dict__`. A
    program's value written in place since (an alias after `y.reshape_(s)`)
    is read as it is now: its shape, its methods (static.rebinding)."""
    if type(obj) is _Variable and obj._latest is not None:
        obj = obj._latest_value()
    value = getattr(obj, name)
    reads = getattr(_local, "recorder", None)
    if reads is not None:
        try:
            d = object.__getattribute__(obj, "__dict__")
        except Exception:  # (no instance dict: slots, builtins)
            d = None
        if type(d) is dict and d.get(name, _NOTHING) is value:
            if type(obj) is ModuleType:
                if _user_module(obj):
                    reads.add_fixed(d, name, value, f"{obj.__name__}.{name}", _site())
            else:
                reads.add(d, name, role, value)
        elif not name.startswith("__"):
            _fixed_reads(reads, obj, name, value, d)
    return value


def convert_hasattr(obj, name):
    """`hasattr(obj, name)`; a Python value found in obj's own `__dict__` is
    a recorded read, and an attribute found missing is noted too (lazy state:
    `if not hasattr(self, "count")`), so jit.save knows the trace read it."""
    found = hasattr(obj, name)
    _note_lookup(obj, name)
    return found


def convert_getattr(obj, name, *default):
    """`getattr(obj, name[, default])`, its read noted as `convert_hasattr`'s."""
    if default:
        _note_lookup(obj, name)
        return getattr(obj, name, *default)
    return read_attr(obj, name) if type(name) is str else getattr(obj, name)


def _note_lookup(obj, name):
    reads = getattr(_local, "recorder", None)
    if reads is None or type(name) is not str:
        return
    try:
        d = object.__getattribute__(obj, "__dict__")
    except Exception:
        return
    if type(d) is not dict:
        return
    if name in d:
        reads.add(d, name, None, d[name])
    else:
        while reads is not None:  # (an enclosing trace reads through this one)
            reads.absent.add((id(d), name))
            reads = reads.outer


def _site():
    """(file, line) of the converted code that called `read_attr`."""
    frame = sys._getframe(2)  # (_site <- read_attr <- converted code)
    return frame.f_code.co_filename, frame.f_lineno


_NOTHING = object()


def _fixed_reads(reads, obj, name, value, instance_dict):
    """Record `obj.name` when a user class holds `value` itself (`CFG.k` of a
    class used as a config, `self.scale` found on the Layer's class): the
    class's entry, and for an instance also its own entry's absence (an
    instance attribute set later would shadow the class's)."""
    klass_of = obj if isinstance(obj, type) else type(obj)
    for klass in klass_of.__mro__:
        namespace = klass.__dict__
        if name in namespace:
            if namespace[name] is not value or not _user_module(
                    sys.modules.get(klass.__module__)):
                return  # a descriptor's product (a method, a property), or a library's
            frame = sys._getframe(2)  # (_fixed_reads <- read_attr <- converted code)
            at = frame.f_code.co_filename, frame.f_lineno
            reads.add_fixed(namespace, name, value, f"{klass.__qualname__}.{name}", at)
            if klass_of is not obj and type(instance_dict) is dict:
                reads.add_fixed(instance_dict, name, None,
                                f"{type(obj).__qualname__}.{name} (an instance attribute)", at,
                                absent=True)
            return


def _user_module(module):
    """A module of the user's code (not d2s, the standard library or an
    installed package): its attributes may change while the program runs."""
    name = getattr(module, "__name__", "")
    if name.split(".")[0] in ("d2s", "builtins") or name in sys.stdlib_module_names:
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return name == "__main__"
    return not path.startswith(_LIBRARY_PATHS)


def _library_paths():
    import sysconfig
    paths = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted(p for p in paths if p))


_LIBRARY_PATHS = _library_paths()


def read_item(container, key, role=None):
    """`container[key]`, recorded for a list or dict (a Tensor's items are
    values of the program)."""
    value = container[key]
    reads = getattr(_local, "recorder", None)
    if reads is not None and type(key) is int and isinstance(
            getattr(container, "_sub_layers", None), dict):
        # a LayerList's item: the sublayer registered as "i" (in its __dict__)
        d = getattr(container, "__dict__", None)
        name = str(key if key >= 0 else key + len(container))
        if type(d) is dict and d.get(name) is value:
            reads.add(d, name, role, value)
    elif reads is not None and isinstance(container, (list, dict)):
        if isinstance(container, list):
            if type(key) is int:
                reads.add(container, key if key >= 0 else key + len(container), role, value)
                if key < 0:
                    reads.add(container, None, None, container)  # counted from the end
            else:  # (a tensor index: any item)
                reads.add(container, None, None, container)
        else:
            try:
                reads.add(container, key, role, value)
            except TypeError:  # (an unhashable key cannot be found in a dict anyway)
                pass
    return value


def note_function(fn):
    """`fn` (a user function whose converted code runs now) was called by a trace."""
    reads = getattr(_local, "recorder", None)
    while reads is not None:
        reads.functions[id(fn)] = fn
        reads = reads.outer
