"""Programs as versioned JSON (plus an .npz of arrays); never pickle.

`program_to_json` / `program_from_json` cover the IR: blocks, typed
variables and ops whose attributes are tagged JSON values. Arrays (constant
attributes, weights) travel in the .npz by key. Loading validates as it
goes, and treats the file as hostile: every key of every record is known,
every attribute checked against its op's schema (`core.attr_schema`,
`ControlOpDef.attr_problem`), values nested at most `MAX_DEPTH` deep, block
references in range and forming a tree (no block runs itself or its
ancestors, none is run by two ops), shapes within `D2S_LOAD_MAX_ELEMENTS`;
unknown op types, dangling names and shape rules that disagree with the
stored variables are refused too. Every refusal is a `ProgramFormatError`
(a ValueError) saying what is wrong; nothing read becomes code.
"""
from __future__ import annotations

import itertools
import math
import re

import numpy as np

from ..core.attr_schema import (MAX_DEPTH, MAX_RANK, arity_problem, check_attrs,
                                is_safe_name, max_elements, op_schema)
from ..core.registry import OPS
from ..static.control_ops import block_ref_attrs, control_op
from ..static.control_ops.raise_ import RAISABLE, raisable
from ..static.ir import Program

FORMAT_VERSION = 1
FORMAT_NAME = "d2s.program"


class ProgramFormatError(ValueError):
    """A saved program or weights file that cannot be loaded as it is."""


MAX_TREE_DEPTH = 64     # nesting of the returned structure (tuples in dicts ...)
MAX_BLOCK_NESTING = 64   # blocks inside blocks (a cond in a while in ...)
MAX_NAME = 1024          # characters of a variable name
_VAR_KEYS = frozenset({"name", "shape", "dtype", "data", "persistable", "weak", "array",
                       "stop_gradient", "may_be_undefined"})
_OP_KEYS = frozenset({"type", "inputs", "outputs", "attrs", "origin"})
_BLOCK_KEYS = frozenset({"parent", "vars", "ops"})


# ---- attribute values ---------------------------------------------------------------
class AttrEncoder:
    """Tagged JSON for attribute values; arrays go to `self.arrays`."""

    def __init__(self):
        self.arrays = {}

    def encode(self, v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            v = float(v)
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, tuple):
            return {"__tuple__": [self.encode(x) for x in v]}
        if isinstance(v, list):
            return [self.encode(x) for x in v]
        if isinstance(v, dict):
            return {"__dict__": [[self.encode(k), self.encode(x)] for k, x in v.items()]}
        if isinstance(v, np.ndarray):
            key = f"const_{len(self.arrays)}"
            self.arrays[key] = v
            return {"__array__": key}
        if isinstance(v, np.dtype):
            return {"__dtype__": v.name}
        if isinstance(v, type) and issubclass(v, BaseException):
            return {"__exception__": v.__name__}
        why = getattr(v, "not_saved_because", None)  # e.g. a PyLayer: its rule is Python code
        raise TypeError(why() if why else
                        f"cannot save an attribute of type {type(v).__name__}: {v!r}")


def decode_attr(v, arrays, where, depth=0):
    """An attribute value from tagged JSON (the inverse of `AttrEncoder.encode`);
    structure only: its op's schema judges it next."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if depth >= MAX_DEPTH:
        raise ProgramFormatError(f"{where}: attribute value nested deeper than {MAX_DEPTH}")
    if isinstance(v, list):
        return [decode_attr(x, arrays, where, depth + 1) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise ProgramFormatError(f"{where}: malformed attribute value {_short(v)}")
    (tag, body), = v.items()
    if tag == "__tuple__" and isinstance(body, list):
        return tuple(decode_attr(x, arrays, where, depth + 1) for x in body)
    if tag == "__dict__" and isinstance(body, list):
        out = {}
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ProgramFormatError(f"{where}: malformed dict item {_short(pair)}")
            key = decode_attr(pair[0], arrays, where, depth + 1)
            try:
                out[key] = decode_attr(pair[1], arrays, where, depth + 1)
            except TypeError:  # an unhashable key
                raise ProgramFormatError(f"{where}: invalid dict key {_short(key)}") from None
        return out
    if tag == "__float__" and body in ("inf", "-inf", "nan"):
        return float(body)
    if tag == "__array__" and isinstance(body, str):
        if body not in arrays:
            raise ProgramFormatError(f"{where}: constant array {body!r} is missing from the weights file")
        return arrays[body]
    if tag == "__dtype__":
        return _dtype(body, where)
    if tag == "__exception__" and is_safe_name(body):
        exc = raisable(body)
        if exc is None:
            raise ProgramFormatError(
                f"{where}: exception type {body} is not allowed; a loaded program may raise "
                f"only {', '.join(sorted(t.__name__ for t in RAISABLE))}")
        return exc
    raise ProgramFormatError(f"{where}: unknown attribute tag {_short(tag)} "
                             f"or malformed body {_short(body)}")


def _short(v):
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _dtype(name, where):
    """A numeric dtype (bool, ints, floats, complex) by name: objects, strings
    and records are refused."""
    if not isinstance(name, str) or len(name) > 32:
        raise ProgramFormatError(f"{where}: invalid dtype {_short(name)}")
    try:
        dt = np.dtype(name)
    except (TypeError, ValueError, SyntaxError):
        raise ProgramFormatError(f"{where}: unknown dtype {name!r}") from None
    if dt.hasobject:
        raise ProgramFormatError(f"{where}: object dtypes are not allowed")
    if dt.kind not in "biufc":
        raise ProgramFormatError(f"{where}: dtype {name!r} is not numeric")
    return dt


# ---- programs -----------------------------------------------------------------------------
def reachable_blocks(program, ops):
    """Indices of block 0 and every block the given ops use, recursively."""
    seen, todo = [0], [op for op in ops]
    while todo:
        op = todo.pop()
        for key in block_ref_attrs(op):
            idx = op.attrs.get(key)
            if idx is not None and idx not in seen:
                seen.append(idx)
                todo.extend(program.blocks[idx].ops)
    return sorted(seen)


def program_to_json(program, global_ops, encoder):
    """The program restricted to `global_ops` (in block 0) and the blocks they use."""
    keep = reachable_blocks(program, global_ops)
    remap = {old: new for new, old in enumerate(keep)}
    blocks = []
    for old in keep:
        block = program.blocks[old]
        ops = global_ops if old == 0 else block.ops
        blocks.append({
            "parent": remap.get(block.parent_idx, -1),
            "vars": [_var_to_json(v) for v in block.vars.values()
                     if v.dtype != np.dtype(object)],
            "ops": [_op_to_json(op, remap, encoder) for op in ops],
        })
    return blocks


def _var_to_json(v):
    out = {"name": v.name, "shape": list(v.shape), "dtype": v.dtype.name,
           "data": v.is_data, "persistable": v.persistable, "weak": v.weak,
           "array": v.is_array, "stop_gradient": v.stop_gradient}
    if v.may_be_undefined:  # its reads are kept (passes.dce); absent from older files
        out["may_be_undefined"] = True
    return out


def _op_to_json(op, remap, encoder):
    """Attributes as tagged JSON; a control-flow op's declaration (`control_ops`)
    says which hold block indices (renumbered) and which exist only at run time."""
    decl = control_op(op.type)
    blocks = block_ref_attrs(op)
    runtime_only = decl.runtime_attrs if decl is not None else ()
    attrs = {}
    for k, v in op.attrs.items():
        if k in runtime_only:
            continue
        if k in blocks:
            v = remap[v]
        attrs[k] = encoder.encode(v)
    out = {"type": op.type, "inputs": [v.name for v in op.inputs],
           "outputs": [v.name for v in op.outputs], "attrs": attrs}
    if op.origin:  # the user's file, line and text: errors in deployment name them
        out["origin"] = [str(x) for x in op.origin[:1]] + [int(op.origin[1])] + \
            [str(x) for x in op.origin[2:3]]
    return out


def program_from_json(blocks_json, arrays):
    if not isinstance(blocks_json, list) or not blocks_json:
        raise ProgramFormatError("the program has no blocks")
    for i, bj in enumerate(blocks_json):
        if not isinstance(bj, dict):
            raise ProgramFormatError(f"block {i}: not a record")
        _known_keys(bj, _BLOCK_KEYS, f"block {i}")
    program = Program()
    for i, bj in enumerate(blocks_json[1:], start=1):
        parent = bj.get("parent")
        if type(parent) is not int or not 0 <= parent < i:
            raise ProgramFormatError(f"block {i}: invalid parent {_short(parent)}")
        block = program._create_block(program.blocks[parent])
        assert block.idx == i
    for i, bj in enumerate(blocks_json):
        block = program.blocks[i]
        for vj in _field(bj, "vars", list, f"block {i}"):
            _var_from_json(program, block, vj, f"block {i}")
    _continue_names(program)
    _check_block_refs(blocks_json)
    for i, bj in enumerate(blocks_json):
        block = program.blocks[i]
        for k, oj in enumerate(_field(bj, "ops", list, f"block {i}")):
            _op_from_json(program, block, oj, arrays, f"block {i}, op #{k}")
    return program


def _continue_names(program):
    """New variables (a gradient built on the loaded program) are named
    `prefix_N` with N past every number ending a stored name: none collides."""
    last = -1
    for block in program.blocks:
        for name in block.vars:
            found = _NUMBERED.search(name)
            if found:
                last = max(last, int(found.group(1)))
    program._names = itertools.count(last + 1)


_NUMBERED = re.compile(r"_([0-9]{1,30})\Z")


def _check_block_refs(blocks_json):
    """Before any op is built: the blocks control-flow ops run form a tree
    (`_BlockRefs`). Indices out of range are reported with their op."""
    refs = _BlockRefs(len(blocks_json))
    for i, bj in enumerate(blocks_json):
        for k, oj in enumerate(_field(bj, "ops", list, f"block {i}")):
            decl = control_op(oj.get("type")) if isinstance(oj, dict) and \
                isinstance(oj.get("type"), str) else None
            attrs = oj.get("attrs") if decl is not None else None
            if not isinstance(attrs, dict):
                continue
            for key in decl.blocks + decl.scope_blocks:
                v = attrs.get(key)
                if type(v) is int and 0 < v < len(blocks_json):
                    refs.add(i, v, f"block {i}, op #{k} ({decl.name}.{key})")


def _known_keys(obj, known, where):
    unknown = [k for k in obj if k not in known]
    if unknown:
        raise ProgramFormatError(f"{where}: unknown field {_short(unknown[0])}")


def _var_from_json(program, block, vj, where):
    name = vj.get("name") if isinstance(vj, dict) else None
    where = f"{where}, variable {_short(name)}"
    name = _field(vj, "name", str, where)
    _known_keys(vj, _VAR_KEYS, where)
    if not name or len(name) > MAX_NAME:
        raise ProgramFormatError(f"{where}: a variable name has 1 to {MAX_NAME} characters")
    if name in block.vars:
        raise ProgramFormatError(f"{where}: declared twice")
    shape = _field(vj, "shape", list, where)
    if len(shape) > MAX_RANK or not all(d is None or type(d) is int and d >= 0 for d in shape):
        raise ProgramFormatError(f"{where}: invalid shape {_short(shape)}")
    _check_size(shape, where)
    flags = {}
    for key in ("stop_gradient", "persistable", "data", "weak", "array", "may_be_undefined"):
        value = vj.get(key, key == "stop_gradient")
        if type(value) is not bool:
            raise ProgramFormatError(f"{where}: {key} must be true or false")
        flags[key] = value
    var = block.create_var(shape, _dtype(_field(vj, "dtype", str, where), where),
                           name=name, stop_gradient=flags["stop_gradient"],
                           persistable=flags["persistable"], is_data=flags["data"])
    var.weak = flags["weak"]
    var.is_array = flags["array"]
    var.may_be_undefined = flags["may_be_undefined"]
    if var.is_data:
        program.feed_vars[name] = var


def _check_size(shape, where):
    size = 1
    for d in shape:
        size *= 1 if d is None else d
    if size > max_elements():
        raise ProgramFormatError(f"{where}: shape {list(shape)} has {size} elements, more than "
                                 f"D2S_LOAD_MAX_ELEMENTS={max_elements()}")


class _BlockRefs:
    """The blocks ops run, as they are read: each block other than 0 is run by
    at most one op, never by an op inside itself or inside a block it runs
    (so the references form a tree: no recursion, no block emitted twice),
    nested at most `MAX_BLOCK_NESTING` deep."""

    def __init__(self, n_blocks):
        self.n_blocks = n_blocks
        self.runner = {}  # block index -> the index of the block holding the op that runs it

    def add(self, holder, target, where):
        depth, b = 1, holder
        while b is not None:
            if b == target:
                raise ProgramFormatError(f"{where}: block {target} would run itself "
                                         f"(the op is inside it)")
            b = self.runner.get(b)
            depth += 1
            if depth > MAX_BLOCK_NESTING:
                raise ProgramFormatError(f"{where}: blocks nested deeper than "
                                         f"{MAX_BLOCK_NESTING}")
        if target in self.runner:
            raise ProgramFormatError(f"{where}: block {target} is already used by an op of "
                                     f"block {self.runner[target]}")
        self.runner[target] = holder


def _field(obj, key, kind, where):
    if not isinstance(obj, dict) or not isinstance(obj.get(key), kind):
        raise ProgramFormatError(f"{where}: missing or invalid field {key!r}")
    return obj[key]


def _resolve(program, block, name, where):
    var = block.lookup(name)
    if var is None:
        raise ProgramFormatError(f"{where}: unknown variable {_short(name)}")
    return var


def _op_from_json(program, block, oj, arrays, where):
    op_type = _field(oj, "type", str, where)
    _known_keys(oj, _OP_KEYS, where)
    decl = control_op(op_type)
    if op_type not in OPS and decl is None:
        raise ProgramFormatError(f"{where}: unknown op type {_short(op_type)}")
    ins = [_resolve(program, block, _check_name(n, where), where)
           for n in _field(oj, "inputs", list, where)]
    outs = [_resolve(program, block, _check_name(n, where), where)
            for n in _field(oj, "outputs", list, where)]
    attrs = {}
    for k, v in _field(oj, "attrs", dict, where).items():
        if not is_safe_name(k):
            raise ProgramFormatError(f"{where}: {op_type} attribute name {_short(k)} is not an "
                                     f"identifier")
        attrs[k] = decode_attr(v, arrays, f"{where} ({op_type}.{k})")
    if op_type in OPS:
        problem = check_attrs(op_schema(OPS[op_type]), attrs) or \
            arity_problem(OPS[op_type], len(ins), attrs)
        if problem:
            raise ProgramFormatError(f"{where}: {op_type}: {problem}")
        _check_shape_rule(OPS[op_type], ins, outs, attrs, where)
    else:
        problem = decl.attr_problem(attrs, len(program.blocks))
        if problem:
            raise ProgramFormatError(f"{where}: {problem}")
    origin = oj.get("origin")
    if not (isinstance(origin, list) and 2 <= len(origin) <= 3 and isinstance(origin[0], str)
            and type(origin[1]) is int and all(isinstance(t, str) for t in origin[2:])
            and all(len(t) <= 4096 for t in origin[:1] + origin[2:])):
        origin = ()
    op = block.append_op(op_type, ins, outs, attrs, origin=tuple(origin))
    if decl is not None and decl.check is not None:
        try:
            problem = decl.check(op)  # its shape rule: outputs against its blocks
        except Exception as e:  # a layout its rule cannot read
            problem = f"{op_type}: malformed ({type(e).__name__}: {e})"
        if problem:
            raise ProgramFormatError(f"{where}: {problem}")


def check_reads(program, available, outputs=()):
    """Every value an op reads is written before it, in program order: by an
    earlier op of its block or of an enclosing one before the op that runs
    that block, by that op's bound names (a loop's variables), or it is in
    `available` (inputs and weights). A file whose op reads a value written
    only later (or never) is refused: run, it would fail in a way that
    depends on the executor. `outputs` must be written too."""
    defined = set()
    _reads_in(program, 0, frozenset(available), defined)
    for name in outputs:
        if name not in defined and name not in available:
            raise ProgramFormatError(f"output {_short(name)} is written by no op")


def _reads_in(program, idx, outer, defined):
    """Walk block `idx` with `outer` names visible; adds what it defines to `defined`."""
    block = program.blocks[idx]
    for k, op in enumerate(block.ops):
        for v in op.inputs:
            if v.name not in outer and v.name not in defined:
                raise ProgramFormatError(f"block {idx}, op #{k}: {op.type} reads "
                                         f"{_short(v.name)} before any op writes it")
        decl = control_op(op.type)
        if decl is not None and not decl.restores:  # (a gradient reads a saved scope)
            bound = set()
            for key in decl.binds:
                bound.update(n for n in op.attrs.get(key) or () if n is not None)
            inner = outer | defined | bound
            made = set()
            for key in decl.blocks:
                if decl.shared_scope:  # each block sees what the ones before it wrote
                    _reads_in(program, op.attrs[key], inner | made, made)
                else:  # alternatives (branches): each sees only what is outside
                    _reads_in(program, op.attrs[key], inner, made)
            for key in decl.results:
                value = op.attrs.get(key)
                for n in [value] if isinstance(value, str) else value or ():
                    if n is not None and n not in inner and n not in made:
                        raise ProgramFormatError(
                            f"block {idx}, op #{k}: {op.type}.{key} names {_short(n)}, which "
                            f"none of its blocks writes")
        defined.update(v.name for v in op.outputs)


def _check_name(n, where):
    if not isinstance(n, str):
        raise ProgramFormatError(f"{where}: variable names must be strings, got {_short(n)}")
    return n


def _check_shape_rule(opdef, ins, outs, attrs, where):
    try:
        avals = opdef.infer(*ins, **attrs)
        avals = (avals,) if opdef.num_outputs == 1 else tuple(avals)
        for a in avals:
            _check_size(a.shape, where)
        dtypes = [np.dtype(a.dtype) for a in avals]
    except ProgramFormatError:
        raise
    except Exception as e:
        raise ProgramFormatError(f"{where}: {opdef.name} does not accept its stored inputs "
                                 f"and attributes: {type(e).__name__}: {str(e)[:200]}") from None
    if len(avals) != len(outs):
        raise ProgramFormatError(f"{where}: {opdef.name} has {len(outs)} outputs, expected "
                                 f"{len(avals)}")
    for a, dt, v in zip(avals, dtypes, outs):
        if dt != v.dtype or len(a.shape) != len(v.shape) or any(
                x is not None and y is not None and x != y for x, y in zip(a.shape, v.shape)):
            raise ProgramFormatError(
                f"{where}: {opdef.name} output '{v.name}' is stored as "
                f"{v.dtype.name}{list(v.shape)} but its inputs give "
                f"{dt.name}{list(a.shape)}")
