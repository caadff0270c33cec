"""A training step's per-call path as one generated function.

A cache hit of a `StepProgram` (jit.train_step) does, on every call, the
same few dozen things for the same objects: check the guard (grad mode, the
executor mode, numpy's error state, the captured tensors, every watched
Tensor's `stop_gradient` / `.grad`, the `training` flags read), read the arrays, copy an array written
in place that someone else holds, run the compute function, then commit the
results to the eager objects. Written as loops over per-program lists,
spread over a few methods, that costs about as much as a small layer's
kernels. Here the path is printed once per program as straight-line Python
for that program (one line per Tensor it reads or writes) and compiled,
like the compute function itself (d2s.backends.numpy.codegen): torch.fx's
`.code` idea applied to the wrapper around it. The backend's part of the
text (its extra guard terms, the array reads and the run) comes from its
executable (`step_call_hooks`): this module names no backend.

The generated function takes only the common case. Whenever anything
differs from what it was made for (gradients disabled, another executor
mode, numpy told to raise, a layer attribute replaced, a guard value that
is not exactly the traced one) it calls the general path
(`StepProgram.__call__`), which checks everything again in its own order
and raises its own errors: the fast path never decides differently, it
only decides sooner. The source is kept (`StepCall.source`) and registered
with linecache, so a traceback through it shows its lines.
"""
from __future__ import annotations

import inspect
import itertools
import linecache
import re

import numpy as np

from ..bytecode_cache import compile_module
from ..core import state
from ..core.tensor import _DEVICE_TYPES, Tensor, new_device_tensor, rebind_value

_counter = itertools.count()

# The guard of a step program, one entry per kind of term: how `StepProgram.matches`
# checks a term, and the condition the generated function writes for it
# (true when the call must take the general path), side by side, so that the
# two can never disagree on what a program assumes. Terms are checked in
# order: a `held_dtype` term comes after the terms saying its gradient exists.
def _watched(tensors, tensor, frozen, no_grad):
    return tensor.stop_gradient == frozen and (tensor._grad is None) is no_grad


def _emit_watched(w, tensor, frozen, no_grad):
    t = w.global_name("t", tensor)
    return [f"{t}.stop_gradient is not {bool(frozen)}",
            f"{t}._grad is {'not ' if no_grad else ''}None"]


def _argument(tensors, index, no_grad):
    return (tensors[index]._grad is None) is no_grad


def _emit_argument(w, index, no_grad):
    return [f"x{index}._grad is {'not ' if no_grad else ''}None"]


def _held_dtype(tensors, tensor, index, dtype):
    return (tensors[index] if tensor is None else tensor)._grad._value.dtype == dtype


def _emit_held_dtype(w, tensor, index, dtype):
    owner = f"x{index}" if tensor is None else w.global_name("t", tensor)
    return [f"{owner}._grad._value.dtype != {w.global_name('d', dtype)}"]


def _mode(tensors, layer, flag):
    return layer.training == flag


def _emit_mode(w, layer, flag):
    # (a Layer's own flag read from its slot in the instance dict, as its
    # property's getter reads it: no call per Layer per step)
    attr = "_training" if _plain_layer_flag(layer) else "training"
    return [f"{w.global_name('m', layer)}.{attr} != {w.global_name('f', flag)}"]


def _plain_layer_flag(layer):
    """Whether `layer.training` is `nn.Layer`'s property over `_training` in
    the instance dict (so `layer._training` reads the same value, outside a
    trace: the getter's only other work notes the read while tracing)."""
    prop = inspect.getattr_static(type(layer), "training", None)
    return (isinstance(prop, property)
            and getattr(prop.fget, "__qualname__", "") == "Layer.training"
            and inspect.getattr_static(type(layer), "_training", None) is None
            and "_training" in getattr(layer, "__dict__", {}))


def _reads(tensors, holds):
    return holds()


def _emit_reads(w, holds):
    return [f"not {w.global_name('read_guards', holds)}()"]


GUARD = {
    "watched": (_watched, _emit_watched),          # a tracked Tensor: frozen? has a grad?
    "reads": (_reads, _emit_reads),                # plain values read (jit.read_guards)
    "argument": (_argument, _emit_argument),       # a differentiated argument: has a grad?
    "held_dtype": (_held_dtype, _emit_held_dtype),  # a gradient read: its dtype
    "mode": (_mode, _emit_mode),                   # a Layer's flag the trace read: train()?
}


class StepCall:
    """`fn(tensors)`: one step's call, generated for a program (see module
    doc); `source` is its text."""

    def __init__(self, source, namespace, name):
        self.source = source
        self.filename = f"<d2s step call {name} #{next(_counter)}>"
        exec(compile_module(source, self.filename), namespace)
        linecache.cache[self.filename] = (len(source), None, source.splitlines(True),
                                          self.filename)
        self.fn = namespace[name]


class _Writer:
    """Source lines and the globals they name."""

    def __init__(self):
        self.lines = []
        self.globals = {}
        self._ids = {}  # id(object) -> its global name
        self._counts = {}  # prefix -> how many globals it names

    def emit(self, text, indent=1):
        self.lines.append("    " * indent + text)

    def global_name(self, prefix, value):
        """The global naming `value` (one name per object)."""
        name = self._ids.get(id(value))
        if name is None:
            k = self._counts[prefix] = self._counts.get(prefix, -1) + 1
            name = self._ids[id(value)] = f"{prefix}{k}"
            self.globals[name] = value
        return name


def build_step_call(step, backend, hooks):
    """The per-call function of StepProgram `step` on `backend` (a name): the
    guard and the commit written here, the backend's part by `hooks` (its
    executable's `step_call_hooks`: `first_checks(w)` and `guard(w,
    general)` add to the guard's start, `conditions(w)` to its terms, and
    `run(w, step, arrays)` reads the arrays and runs, leaving `r`). `step`
    must not check finiteness (that path stays general)."""
    w = _Writer()
    g = w.globals
    g.update(_tls=state._tls, _general=step.__call__, _ndarray=np.ndarray,
             _asarray=np.asarray, _new=Tensor._from_array, _as_array=step._as_array,
             _as_tensor=step._as_tensor, _rebind=rebind_value, _new_device=new_device_tensor,
             _device_types=_DEVICE_TYPES)
    general = f"return _general(tensors, {backend!r})"
    n_inputs = len(step.inputs)
    args = [f"x{i}" for i in range(n_inputs)]

    # ---- the guard, in the general path's order ------------------------------------
    checks = ["not _tls.grad_enabled"] + hooks.first_checks(w)
    w.emit(f"if {' or '.join(checks)}:")
    w.emit(general, 2)
    hooks.guard(w, general)
    captured = step._captured
    traced = step._traced_tensors
    if captured.paths:  # layer attributes read at each run: one may have been replaced
        g.update(_captured=captured, _traced=traced,
                 _attrs_version=state.tensor_attributes_version)
        w.emit("if _attrs_version[0] != _captured.version or _captured.tensors is not _traced:")
        w.emit(general, 2)
    if args:
        w.emit(f"{', '.join(args)}{',' if len(args) == 1 else ''} = tensors")
    conds = []
    for kind, *term in step.guard:
        conds += GUARD[kind][1](w, *term)
    conds += hooks.conditions(w)
    if conds:
        w.emit("if (" + "\n            or ".join(conds) + "):")
        w.emit(general, 2)

    # ---- the arrays and the run (the backend's) -------------------------------------
    # (a backend taking device arrays reads a device-resident input as it is held)
    read = "_raw" if getattr(hooks, "takes_device_arrays", False) else "_value"
    arrays = [f"x{i}.{read}" for i in range(n_inputs)]
    for tensor, index in step._held:
        owner = f"x{index}" if tensor is None else w.global_name("t", tensor)
        arrays.append(f"{owner}._grad._value")
    hooks.run(w, step, arrays)

    # ---- the commit (outputs first: an undefined one raises before any write) -------
    _emit_commit(w, step)
    name = "train_step_call_" + re.sub(r"\W", "_", backend)
    source = f"def {name}(tensors):\n" + "\n".join(w.lines) + "\n"
    return StepCall(source, g, name)


def _emit_commit(w, step):
    n = len(step.outputs)
    results = [f"r{i}" for i in range(len(step._run_outputs))]
    w.emit(f"{', '.join(results)}{',' if len(results) == 1 else ''} = r")

    def array(i):
        return f"{results[i]} if type({results[i]}) is _ndarray else _asarray({results[i]})"

    def wrapped(i):
        r = results[i]  # (a backend's device array: a device-resident Tensor, made directly)
        return (f"_new({r}) if type({r}) is _ndarray else _new_device({r}) "
                f"if type({r}) in _device_types else _as_tensor({i}, {r})")
    structure = step.output_structure
    if structure.single:  # one Tensor returned, as most steps (the loss)
        w.emit(f"out = {wrapped(0)}")
    else:
        w.globals["_restructure"] = structure.restructure
        w.emit(f"out = _restructure([{', '.join(f'({wrapped(i)})' for i in range(n))}])")
    at = n
    for tensor, _ in step.effects.value_writes:
        r = results[at]  # (a device array, a backend's write-back, stays on the device)
        t = w.global_name('t', tensor)
        w.emit(f"if type({r}) is _ndarray: {t}._value = {r}")
        # (a backend that wrote the value back already hands out the array the
        # Tensor holds: nothing to rebind)
        w.emit(f"elif {r} is not {t}._raw: _rebind({t}, {r})")
        at += 1
    for slot, name in step.effects.grad_writes:
        if name is None and slot.tensor is not None:
            w.emit(f"{w.global_name('t', slot.tensor)}._grad = None")
    for slot, name in step.effects.grad_writes:
        owner = f"x{slot.input_index}" if slot.tensor is None else w.global_name("t", slot.tensor)
        if name is not None:
            w.emit(f"{owner}._grad = _new({array(at)})")
            at += 1
        elif slot.tensor is None:
            w.emit(f"{owner}._grad = None")
    for slot, _ in step.effects.grad_present:   # cleared on the path the run took
        owner = f"x{slot.input_index}" if slot.tensor is None else w.global_name("t", slot.tensor)
        w.emit(f"if not bool({array(at)}): {owner}._grad = None")
        at += 1
    w.emit("return out")
