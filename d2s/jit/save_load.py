"""`d2s.jit.save` / `d2s.jit.load`: deploy a converted function or Layer.

`save` writes `<path>.json` (the forward program, versioned, plus how
inputs, outputs and weights map onto it) and `<path>.npz` (weights and
constant arrays). `load` rebuilds the program with no access to the
original Python source and returns a `TranslatedLayer`: callable like the
original, with trainable parameters (gradients flow into them, so a loaded
model can be fine-tuned). Nothing is ever unpickled, and nothing read becomes
code: the files are validated as hostile input (`serialization`,
`npz_reader`), every refusal a `ProgramFormatError`.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..core.tensor import Tensor
from ..static.executor import check_feed
from ..static.input_spec import InputSpec
from ..static.ir import Variable
from ..static.pytree import Record
from .. import backends as backend_state
from .concrete_program import ConcreteProgram, EffectProgram, OutputStructure, _count_leaves
from .outliving import Effect, Effects, _Slot
from ..core.attr_schema import VALUE
from .npz_reader import max_bytes, read_arrays
from .serialization import (FORMAT_NAME, FORMAT_VERSION, MAX_TREE_DEPTH, AttrEncoder,
                            ProgramFormatError, check_reads, decode_attr, program_from_json,
                            program_to_json)
from .static_function import StaticFunction
from .train_step import StepProgram


def _static_function_of(obj, caller):
    if isinstance(obj, StaticFunction):
        return obj
    forward = getattr(obj, "forward", None)
    if isinstance(forward, StaticFunction):
        return forward
    if forward is not None and hasattr(obj, "training"):
        return StaticFunction(type(obj).forward).__get__(obj, type(obj))
    if callable(obj):
        return StaticFunction(obj)
    raise TypeError(f"{caller} expects a Layer, a function or a StaticFunction, "
                    f"got {type(obj).__name__}")


def traced_program(layer_or_fn, input_spec=None, caller="d2s.jit.save"):
    """The ConcreteProgram to deploy (`jit.save`, `d2s.onnx.export`): traced for
    `input_spec` if given, else for the `input_spec` given to `to_static` (as
    PaddlePaddle does), else the last program built. Spec entries are
    InputSpecs, Tensors or arrays (their shape and dtype), or other values,
    passed to the function as they are (a Python number stays a constant)."""
    sf = _static_function_of(layer_or_fn, caller)
    if input_spec is None:
        input_spec = sf._input_spec
    if input_spec is None:
        concrete = sf.concrete_program
        if concrete is None:
            raise ValueError(f"{caller}: no program has been built yet and there is no "
                             "input_spec; call the function once, pass "
                             "input_spec=[InputSpec(...), ...] or give one to to_static")
    else:
        concrete = sf.get_concrete_program(*[
            s if isinstance(s, InputSpec) else InputSpec.from_tensor(s)
            if hasattr(s, "shape") and hasattr(s, "dtype") else s for s in input_spec])
    if isinstance(concrete, StepProgram):
        raise TypeError(
            f"{caller}: '{sf.__qualname__}' is a training step "
            "(it calls backward(), an optimizer's step() or clear_grad(), and its program "
            "writes parameters, gradients and optimizer state): save the model, not the "
            f"step, e.g. {caller}(model, path, input_spec=[...])")
    writes = getattr(concrete, "writes", None)
    if writes is not None and _only_input_writes(writes):
        pass  # saved with the program: a loaded program writes its inputs too
    elif writes is not None and writes.effects and not _unread_state_writes(
            writes, concrete, layer_or_fn):
        # (eager tensors the trace read as Python values, `self.num_tags =
        # d2s.shape(w)[0]` used as a size, are saved as the constants they
        # hold now, as the parameters are saved with the values they hold now)
        raise TypeError(_state_writes_message(caller, sf, layer_or_fn, writes))
    concrete.captured_tensors()  # layer attributes replaced since the last run
    return concrete


def _unread_state_writes(writes, concrete, layer_or_fn):
    """Whether every write is one a saved program may leave out: a layer in
    eval mode (or a function) storing values on an object (RevIN's
    `self.mean = x.mean(...)` in its "norm" call, read back by its "denorm"
    call of the same forward) where the entry was absent or held an eager
    Tensor, and the trace read it only after writing it (never the earlier
    value, as a tensor, a shape or a Python value). Each call's outputs then
    do not depend on what an earlier call stored there, so a loaded program,
    which has no such object, computes what eager calls return."""
    owner = getattr(layer_or_fn, "__self__", layer_or_fn)
    if getattr(owner, "training", False):
        return False
    guarded = {(id(d), key) for d, key, _, _ in writes.guards}
    read_as_values = {id(g.tensor) for g in writes.value_guards}
    captured = concrete.main_program._captured_ids
    for e in writes.effects:
        if e.kind != "set" or e.route is not None:
            return False
        entry = (id(e.container), e.key)
        first = writes.first_reads.get(entry, _UNREAD)
        if first is not _UNREAD and not isinstance(first, Variable):
            return False  # it read the value an earlier call left there
        if e.key not in e.container:  # (the trace put the entry back as it was)
            continue  # absent before: nothing earlier to read
        before = e.container[e.key]
        if entry in guarded or not isinstance(before, Tensor) \
                or id(before) in read_as_values or id(before) in captured:
            return False
    return True


_UNREAD = object()


def _state_writes_message(caller, sf, layer_or_fn, writes):
    """Why a program that writes state cannot be saved, and the fix that
    applies: eval() for a layer still in training mode; for one already in
    eval mode (a decoder caching `self._index = d2s.arange(n)` in forward),
    eval() is no fix, a local value is."""
    head = (f"{caller}: '{sf.__qualname__}' writes state that outlives the call "
            f"({', '.join(writes.labels())})")
    owner = getattr(layer_or_fn, "__self__", layer_or_fn)
    if getattr(owner, "training", False):
        return (f"{head}, as a layer in training mode updating its running statistics "
                "does; a saved program only computes: call layer.eval() before saving "
                "(buffers are saved with the parameters)")
    mode = " in eval mode" if hasattr(owner, "training") else ""
    return (f"{head}{mode}; a saved program keeps no state between calls: keep "
            "that value in a local variable of forward (a cache such as "
            "`self._index = d2s.arange(n)` is computed by the program on every call "
            "anyway), or register it as a buffer and update it outside forward")


def _only_input_writes(writes):
    """The program's only writes are in-place writes of its own inputs (what a
    saved program can repeat: its caller passes those Tensors again)."""
    return bool(writes.effects) and all(e.kind == "input" for e in writes.effects)


def _input_writes(concrete):
    """[[input position, label]] of the inputs `concrete` writes in place, in
    the order of its written values (jit.outliving "input" effects)."""
    writes = getattr(concrete, "writes", None)
    if writes is None or not writes.writes_inputs:
        return []
    found = sorted((e.template.index, e.key, e.label) for e in writes.effects
                   if e.kind == "input")
    return [[key, label] for _, key, label in found]


def _encode_tree(tree):
    if tree is None:
        return None
    if tree[0] is dict or type(tree[0]) is Record:
        # (a dict subclass or a dataclass loads as a plain dict: the loading
        # process need not have the class)
        return {"t": "dict", "k": list(tree[1]), "c": [_encode_tree(c) for c in tree[2]]}
    # (a namedtuple loads as a tuple, for the same reason)
    kind = "list" if issubclass(tree[0], list) else "tuple"
    return {"t": kind, "c": [_encode_tree(c) for c in tree[1]]}


def _decode_tree(obj, where="out_tree", depth=0):
    if obj is None:
        return None
    if depth > MAX_TREE_DEPTH:
        raise ProgramFormatError(f"{where}: output structure nested deeper than "
                                 f"{MAX_TREE_DEPTH}")
    if not isinstance(obj, dict) or obj.get("t") not in ("tuple", "list", "dict") \
            or not isinstance(obj.get("c"), list) or not set(obj) <= {"t", "c", "k"}:
        raise ProgramFormatError(f"{where}: malformed output structure")
    children = tuple(_decode_tree(c, where, depth + 1) for c in obj["c"])
    if obj["t"] == "dict":
        keys = obj.get("k")
        if not isinstance(keys, list) or len(keys) != len(children) or not all(
                k is None or isinstance(k, (str, int, float, bool)) for k in keys):
            raise ProgramFormatError(f"{where}: malformed dict keys")
        return (dict, tuple(keys), children)
    return (tuple if obj["t"] == "tuple" else list, children)


def save(layer_or_fn, path, input_spec=None):
    """Trace and write `<path>.json` and `<path>.npz` (the program: see
    `traced_program`). A model loaded by `load` (fine-tuned or not) is saved
    again as it is: its program with its weights' current values."""
    if isinstance(layer_or_fn, TranslatedLayer):
        if input_spec is not None:
            raise TypeError("d2s.jit.save: a loaded program is saved with the inputs it was "
                            "saved with; pass no input_spec (to change them, save the "
                            "original Layer again)")
        concrete = layer_or_fn._concrete
    else:
        concrete = traced_program(layer_or_fn, input_spec)
    program = concrete.main_program
    outputs, structure = concrete.outputs, concrete.output_structure
    writes = getattr(concrete, "writes", None)
    if writes is not None and writes.effects and not _only_input_writes(writes):
        # state writes a loaded program leaves out (`_unread_state_writes`):
        # it returns the function's result only
        outputs, structure = _result_only(concrete)
    save_program(program, program.global_block().ops[:concrete._n_forward], concrete.inputs,
                 outputs, path, structure, _input_writes(concrete))


def _result_only(concrete):
    """(outputs, OutputStructure) of the function's result without the
    values an EffectProgram writes back (they come after it)."""
    outputs, positions = concrete.result_outputs()
    whole = concrete.output_structure
    tree = whole.tree[1][0]
    n = _count_leaves(tree)
    return outputs, OutputStructure(tree, whole.constants[:n], positions,
                                    [p for p in whole.lists if p < n])


def save_program(program, forward_ops, inputs, outputs, path, output_structure=None,
                 input_writes=()):
    """Write `program` restricted to `forward_ops` (block 0), reading `inputs`
    and the captured weights, returning `outputs` (as `output_structure`
    arranges them; default: a list of them)."""
    if output_structure is None:
        output_structure = OutputStructure((list, (None,) * len(outputs)),
                                           [None] * len(outputs), list(range(len(outputs))))
    encoder = AttrEncoder()
    blocks = program_to_json(program, forward_ops, encoder)
    params = []
    for k, (var_name, tensor) in enumerate(program.captured.items()):
        key = f"param_{k}"
        encoder.arrays[key] = np.asarray(tensor._value)
        params.append({"var": var_name, "key": key, "name": tensor.name,
                       "trainable": not tensor.stop_gradient})
    doc = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "blocks": blocks,
        "inputs": [v.name for v in inputs],
        "outputs": [v.name for v in outputs],
        "out_tree": _encode_tree(output_structure.tree),
        "out_consts": [encoder.encode(c) for c in output_structure.constants],
        "out_positions": output_structure.positions,
        "params": params,
    }
    if input_writes:  # (the result is then `(the function's result, written values)`)
        doc["input_writes"] = [list(w) for w in input_writes]
    if output_structure.lists:  # returned lists filled in tensor loops
        doc["out_lists"] = sorted(output_structure.lists)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path + ".json", "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
    np.savez(path + ".npz", **encoder.arrays)


_DOC_KEYS = frozenset({"format", "version", "blocks", "inputs", "outputs", "out_tree",
                       "out_consts", "out_positions", "out_lists", "params",
                       "input_writes"})
_PARAM_KEYS = frozenset({"var", "key", "name", "trainable"})


def _read_json(json_path):
    """The program document: bounded in size, and deep nesting is an error, not
    a RecursionError."""
    size = os.path.getsize(json_path)
    if size > max_bytes():
        raise ProgramFormatError(f"{json_path}: {size} bytes, more than D2S_LOAD_MAX_BYTES="
                                 f"{max_bytes()}")
    with open(json_path, "rb") as f:
        raw = f.read(size + 1)
    try:
        return json.loads(raw)
    except RecursionError:
        raise ProgramFormatError(f"{json_path}: nested too deeply to be a d2s program") \
            from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, an int too long
        raise ProgramFormatError(f"{json_path}: not valid JSON (truncated or corrupt?): "
                                 f"{str(e)[:200]}") from None


def load(path):
    """Rebuild a saved program; returns a callable `TranslatedLayer`. A file that
    is not what `save` writes raises `ProgramFormatError` (a ValueError)."""
    json_path, npz_path = path + ".json", path + ".npz"
    doc = _read_json(json_path)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise ProgramFormatError(f"{json_path}: not a d2s program file")
    if doc.get("version") != FORMAT_VERSION:
        raise ProgramFormatError(f"{json_path}: format version {doc.get('version')!r} is not "
                                 f"supported (this d2s reads version {FORMAT_VERSION})")
    unknown = [k for k in doc if k not in _DOC_KEYS]
    if unknown:
        raise ProgramFormatError(f"{json_path}: unknown field {unknown[0][:80]!r}")
    arrays = read_arrays(npz_path)
    program = program_from_json(doc.get("blocks"), arrays)
    gb = program.global_block()

    def var(name, what):
        if not isinstance(name, str) or name not in gb.vars:
            raise ProgramFormatError(f"{json_path}: {what} {str(name)[:80]!r} is not a "
                                     "program variable")
        return gb.vars[name]

    inputs = [var(n, "input") for n in _list(doc, "inputs", json_path)]
    outputs = [var(n, "output") for n in _list(doc, "outputs", json_path)]
    params = []
    for p in _list(doc, "params", json_path):
        if not isinstance(p, dict) or not set(p) <= _PARAM_KEYS:
            raise ProgramFormatError(f"{json_path}: malformed parameter record")
        v = var(p.get("var"), "parameter")
        key, name, trainable = p.get("key"), p.get("name"), p.get("trainable", False)
        if not isinstance(key, str) or key not in arrays:
            raise ProgramFormatError(f"{npz_path}: weights {str(key)[:80]!r} for '{v.name}' "
                                     "are missing")
        if not (name is None or isinstance(name, str)) or type(trainable) is not bool:
            raise ProgramFormatError(f"{json_path}: parameter '{v.name}': malformed name or "
                                     "trainable flag")
        value = arrays[key]
        if value.dtype != v.dtype or tuple(value.shape) != v.shape:
            raise ProgramFormatError(
                f"{npz_path}: weights for '{v.name}' are {value.dtype.name}{list(value.shape)}, "
                f"the program expects {v.dtype.name}{list(v.shape)}")
        t = Tensor(value.copy(), stop_gradient=not trainable, name=name or v.name)
        program.captured[v.name] = t
        program._captured_ids[id(t)] = v
        params.append(t)
    for v in inputs:
        if not v.is_data:
            raise ProgramFormatError(f"{json_path}: input '{v.name[:80]}' is not a data variable")
    check_reads(program, [v.name for v in inputs] + list(program.captured),
                [v.name for v in outputs])
    out_tree = _decode_tree(doc.get("out_tree"))
    consts = []
    for c in _list(doc, "out_consts", json_path):
        c = decode_attr(c, arrays, "out_consts")
        problem = VALUE(c)
        if problem:
            raise ProgramFormatError(f"{json_path}: out_consts: {problem}")
        consts.append(c)
    positions = doc.get("out_positions")
    if positions is None:  # written before None could be a returned value
        positions = [i for i, c in enumerate(consts) if c is None]
    if not (isinstance(positions, list) and len(positions) == len(outputs)
            and all(type(p) is int and 0 <= p < len(consts) for p in positions)):
        raise ProgramFormatError(f"{json_path}: outputs and output structure disagree")
    lists = doc.get("out_lists", [])  # (absent: written before lists came back as lists)
    if not (isinstance(lists, list) and all(p in positions for p in lists)):
        raise ProgramFormatError(f"{json_path}: out_lists must name output positions")
    structure = OutputStructure(out_tree, consts, positions, lists)
    writes = _load_input_writes(doc, inputs, out_tree, json_path)
    if writes is None:
        concrete = ConcreteProgram(program, inputs, outputs, structure, len(gb.ops))
    else:
        concrete = EffectProgram(program, inputs, outputs, structure, len(gb.ops),
                                 writes=writes)
    return TranslatedLayer(concrete, params)


def _load_input_writes(doc, inputs, out_tree, where):
    """The in-place writes of its inputs a saved program performs after each
    run (jit.outliving "input" effects), or None."""
    found = doc.get("input_writes")
    if found is None:
        return None
    if not (isinstance(found, list) and found and all(
            isinstance(w, list) and len(w) == 2 and type(w[0]) is int
            and 0 <= w[0] < len(inputs) and isinstance(w[1], str) for w in found)):
        raise ProgramFormatError(f"{where}: input_writes must list [input position, label]")
    if not (isinstance(out_tree, tuple) and out_tree[0] is tuple and len(out_tree[1]) == 2
            and isinstance(out_tree[1][1], tuple) and len(out_tree[1][1][1]) == len(found)):
        raise ProgramFormatError(f"{where}: input_writes and the output structure disagree")
    effects = [Effect("input", None, position, _Slot(k), None, label[:200])
               for k, (position, label) in enumerate(found)]
    writes = Effects(effects, [])
    writes.writes_inputs = True
    return writes


def _list(doc, key, where):
    v = doc.get(key)
    if not isinstance(v, list):
        raise ProgramFormatError(f"{where}: missing or invalid {key!r}")
    return v


def _leaves(args):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_leaves(a))
        else:
            out.append(a)
    return out


class TranslatedLayer:
    """A loaded program, callable like the Layer or function that was saved.

    Duck-types a d2s Layer (`parameters()`, `named_parameters()`,
    `state_dict()`, `train()` / `eval()`), so an optimizer can fine-tune it.
    """

    def __init__(self, concrete, params):
        self._concrete = concrete
        self._params = params
        self.training = False

    @property
    def program(self):
        return self._concrete.main_program

    def __call__(self, *args):
        inputs = self._concrete.inputs
        if len(args) != len(inputs):
            # saved with a nested InputSpec (an LSTM's `(h, c)` state): the program
            # takes the leaves in order, and the caller passes the same nesting
            flat = _leaves(args)
            if len(flat) == len(inputs):
                args = flat
        if len(args) != len(inputs):
            raise TypeError(f"the loaded program takes {len(inputs)} inputs "
                            f"({', '.join(v.name for v in inputs)}), got {len(args)}")
        if any(isinstance(a, Variable) for a in args):
            raise TypeError(
                "a model loaded with d2s.jit.load was called with a static Variable (inside "
                "code being converted by to_static, or in static mode): a loaded program "
                "runs on eager Tensors only; call it outside the converted function (it is "
                "already a compiled program: calling, differentiating and fine-tuning it "
                "eagerly run that program)")
        tensors = []
        for var, a in zip(inputs, args):
            arr = check_feed(var, a)  # ValueError naming the input on a mismatch
            tensors.append(a if isinstance(a, Tensor) and a._value is arr
                           else Tensor._from_array(arr))
        return self._concrete(tensors, backend_state.get_backend())

    forward = __call__

    def parameters(self):
        return [p for p in self._params if not p.stop_gradient]

    def named_parameters(self):
        return [(p.name, p) for p in self._params if not p.stop_gradient]

    def state_dict(self):
        return {p.name: p for p in self._params}

    def train(self):
        self.training = True
        return self

    def eval(self):
        self.training = False
        return self

    def __repr__(self):
        return f"<TranslatedLayer: {len(self._concrete.inputs)} inputs, {len(self._params)} weights>"
