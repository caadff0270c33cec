"""Programs as versioned JSON (plus an .npz of arrays); never pickle.

`program_to_json` / `program_from_json` cover the IR: blocks, typed
variables and ops whose attributes are tagged JSON values. Arrays (constant
attributes, weights) travel in the .npz by key. Loading validates as it
goes: unknown op types, dangling names, attributes of the wrong shape and
shape rules that disagree with the stored variables all raise
`ProgramFormatError` (a ValueError) saying what is wrong.
"""
from __future__ import annotations

import builtins
import itertools
import math

import numpy as np

from ..core.registry import OPS
from ..static.control_ops import block_ref_attrs, control_op
from ..static.ir import Program

FORMAT_VERSION = 1
FORMAT_NAME = "d2s.program"


class ProgramFormatError(ValueError):
    """A saved program or weights file that cannot be loaded as it is."""


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
        raise TypeError(f"cannot save an attribute of type {type(v).__name__}: {v!r}")


def decode_attr(v, arrays, where):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [decode_attr(x, arrays, where) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise ProgramFormatError(f"{where}: malformed attribute value {v!r}")
    (tag, body), = v.items()
    if tag == "__tuple__" and isinstance(body, list):
        return tuple(decode_attr(x, arrays, where) for x in body)
    if tag == "__dict__" and isinstance(body, list):
        return {decode_attr(k, arrays, where): decode_attr(x, arrays, where) for k, x in body}
    if tag == "__float__" and body in ("inf", "-inf", "nan"):
        return float(body)
    if tag == "__array__":
        if body not in arrays:
            raise ProgramFormatError(f"{where}: constant array {body!r} is missing from the weights file")
        return arrays[body]
    if tag == "__dtype__":
        return _dtype(body, where)
    if tag == "__exception__":
        exc = getattr(builtins, str(body), None)
        if not (isinstance(exc, type) and issubclass(exc, BaseException)):
            # Only builtin exception types are rebuilt; others raise as RuntimeError.
            return RuntimeError
        return exc
    raise ProgramFormatError(f"{where}: unknown attribute tag {tag!r}")


def _dtype(name, where):
    try:
        dt = np.dtype(str(name))
    except TypeError:
        raise ProgramFormatError(f"{where}: unknown dtype {name!r}") from None
    if dt.hasobject:
        raise ProgramFormatError(f"{where}: object dtypes are not allowed")
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
    program = Program()
    for i, bj in enumerate(blocks_json[1:], start=1):
        parent = bj.get("parent") if isinstance(bj, dict) else None
        if not isinstance(parent, int) or not 0 <= parent < i:
            raise ProgramFormatError(f"block {i}: invalid parent {parent!r}")
        block = program._create_block(program.blocks[parent])
        assert block.idx == i
    for i, bj in enumerate(blocks_json):
        block = program.blocks[i]
        for vj in _field(bj, "vars", list, f"block {i}"):
            where = f"block {i}, variable {vj.get('name') if isinstance(vj, dict) else vj!r}"
            name = _field(vj, "name", str, where)
            shape = _field(vj, "shape", list, where)
            if not all(d is None or isinstance(d, int) and d >= 0 for d in shape):
                raise ProgramFormatError(f"{where}: invalid shape {shape!r}")
            var = block.create_var(shape, _dtype(_field(vj, "dtype", str, where), where),
                                   name=name, stop_gradient=bool(vj.get("stop_gradient", True)),
                                   persistable=bool(vj.get("persistable", False)),
                                   is_data=bool(vj.get("data", False)))
            var.weak = bool(vj.get("weak", False))
            var.is_array = bool(vj.get("array", False))
            var.may_be_undefined = bool(vj.get("may_be_undefined", False))
            if var.is_data:
                program.feed_vars[name] = var
    for i, bj in enumerate(blocks_json):
        block = program.blocks[i]
        for k, oj in enumerate(_field(bj, "ops", list, f"block {i}")):
            _op_from_json(program, block, oj, arrays, f"block {i}, op #{k}")
    program._names = itertools.count(_first_free_number(program))
    return program


def _first_free_number(program):
    """Past every `<prefix>_<n>` name the saved program holds: the ops added
    to it after loading (its backward, for a call that needs gradients) take
    fresh names from the program's counter, which must not give one of them."""
    top = -1
    for block in program.blocks:
        for name in block.vars:
            tail = name.rpartition("_")[2]
            if tail.isdigit():
                top = max(top, int(tail))
    return top + 1


def _field(obj, key, kind, where):
    if not isinstance(obj, dict) or not isinstance(obj.get(key), kind):
        raise ProgramFormatError(f"{where}: missing or invalid field {key!r}")
    return obj[key]


def _resolve(program, block, name, where):
    var = block.lookup(name)
    if var is None:
        raise ProgramFormatError(f"{where}: unknown variable {name!r}")
    return var


def _op_from_json(program, block, oj, arrays, where):
    op_type = _field(oj, "type", str, where)
    decl = control_op(op_type)
    if op_type not in OPS and decl is None:
        raise ProgramFormatError(f"{where}: unknown op type {op_type!r}")
    ins = [_resolve(program, block, _check_name(n, where), where)
           for n in _field(oj, "inputs", list, where)]
    outs = [_resolve(program, block, _check_name(n, where), where)
            for n in _field(oj, "outputs", list, where)]
    attrs = {k: decode_attr(v, arrays, f"{where} ({op_type}.{k})")
             for k, v in _field(oj, "attrs", dict, where).items()}
    if op_type in OPS:
        _check_shape_rule(OPS[op_type], ins, outs, attrs, where)
    else:
        _check_control_attrs(decl, program, attrs, where)
    origin = oj.get("origin")
    if not (isinstance(origin, list) and 2 <= len(origin) <= 3 and isinstance(origin[0], str)
            and isinstance(origin[1], int) and all(isinstance(t, str) for t in origin[2:])):
        origin = ()
    op = block.append_op(op_type, ins, outs, attrs, origin=tuple(origin))
    if decl is not None and decl.check is not None:
        problem = decl.check(op)  # its shape rule: outputs against its blocks
        if problem:
            raise ProgramFormatError(f"{where}: {problem}")


def _check_control_attrs(decl, program, attrs, where):
    """The attributes a control-flow op declares are there and well formed:
    block indices name a later block, name lists hold names."""
    for k in decl.blocks + decl.scope_blocks:
        v = attrs.get(k)
        if not (type(v) is int and 0 < v < len(program.blocks)):
            raise ProgramFormatError(f"{where}: {decl.name}.{k} names no block ({v!r})")
    for k in decl.results + decl.binds:
        v = attrs.get(k)
        names = [v] if isinstance(v, str) and k in decl.results else v  # a single result
        if not (isinstance(names, list)
                and all(n is None or isinstance(n, str) for n in names)):
            raise ProgramFormatError(f"{where}: {decl.name}.{k} must list variable names, "
                                     f"got {v!r}")


def _check_name(n, where):
    if not isinstance(n, str):
        raise ProgramFormatError(f"{where}: variable names must be strings, got {n!r}")
    return n


def _check_shape_rule(opdef, ins, outs, attrs, where):
    try:
        avals = opdef.infer(*ins, **attrs)
    except Exception as e:
        raise ProgramFormatError(f"{where}: {opdef.name} does not accept its stored inputs "
                                 f"and attributes: {e}") from None
    avals = (avals,) if opdef.num_outputs == 1 else tuple(avals)
    if len(avals) != len(outs):
        raise ProgramFormatError(f"{where}: {opdef.name} has {len(outs)} outputs, expected "
                                 f"{len(avals)}")
    for a, v in zip(avals, outs):
        if np.dtype(a.dtype) != v.dtype or len(a.shape) != len(v.shape) or any(
                x is not None and y is not None and x != y for x, y in zip(a.shape, v.shape)):
            raise ProgramFormatError(
                f"{where}: {opdef.name} output '{v.name}' is stored as "
                f"{v.dtype.name}{list(v.shape)} but its inputs give "
                f"{np.dtype(a.dtype).name}{list(a.shape)}")
