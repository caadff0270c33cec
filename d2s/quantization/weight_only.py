"""The weight-only pass (see the package docstring).

Which weights: a captured parameter Variable of a program's global block
that is 2-D and floating, that no op writes, and whose every use is either
the second operand of a `matmul` or a pass-through input of a control op
(a `while` / `cond` whose body reads it). A weight read any other way stays
as it is: quantizing it would change more than the matmul.

Embedding tables (`embeddings=True`): a trained parameter (not a buffer:
rotary tables are exact functions of the position and stay float) read by
row `gather`s, and otherwise only by matmuls / transposes (the tied output
projection) or control ops, is stored as int8 rows with one scale per row.
Each lookup becomes a `gather_dequantize` (the int8 rows of the ids, then
rebuilt), where it was, so a decode step rebuilds only the rows it reads.
A tied table also feeds the output projection: that reads the whole table
rebuilt once per call at the head of the program (`cast` * scale). Tables
are int8 whatever `bits` is: the 4-bit packing pairs the rows a matmul
reduces over, which a lookup of whole rows does not have.

Where the dequantization of a Linear weight goes: one `weight_dequantize`
op per weight at the head of the global block, so that a decode loop (a
`while` op) reads the float weight rebuilt once per call, not once per
token; the program then captures only the int8/uint8 values and the scales.

The quantized values are a snapshot: made once per weight Tensor (shared by
every program the pass rewrites) from its value at that time. Train on,
then quantize again.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.ops.quant import weight_dequantize  # noqa: F401  (registers the ops)
from ..core.tensor import Tensor
from ..static.control_ops import sub_block_ids
from ..static.ir import Operator, Program

__all__ = ["weight_only", "quantize_weight", "quantize_table", "captured_bytes",
           "WeightOnlyPass"]


def _check_options(bits, group_size):
    if bits not in (4, 8) or isinstance(bits, bool):
        raise ValueError(f"weight_only: bits must be 8 or 4, got {bits!r}")
    if group_size is None or group_size == -1:
        return
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size <= 0:
        raise ValueError(f"weight_only: group_size must be a positive int or -1 (one scale per "
                         f"output channel), got {group_size!r}")
    if bits == 4 and group_size % 2:
        raise ValueError(f"weight_only: group_size must be even for bits=4 (two 4-bit values "
                         f"share a byte), got {group_size}")


def quantize_weight(w, bits=8, group_size=-1):
    """(q, scale) for the float matrix `w` [K, N] (see `core/ops/quant.py` for
    the layout): symmetric, round to nearest, one scale per output column and
    group of `group_size` rows (-1: all K rows, per channel)."""
    _check_options(bits, group_size)
    w = np.asarray(w)
    if w.ndim != 2 or w.dtype.kind != "f":
        raise ValueError(f"weight_only: a weight must be a 2-D float matrix, got "
                         f"{w.dtype.name}{list(w.shape)}")
    k, n = w.shape
    g = k if group_size in (None, -1) else group_size
    if bits == 4 and g % 2:
        g += 1                                     # per channel with an odd K: one zero row
    padded = math.ceil(k / g) * g
    wp = np.zeros((padded, n), w.dtype)
    wp[:k] = w
    blocks = wp.reshape(padded // g, g, n)
    qmax = 127 if bits == 8 else 7
    scale = np.abs(blocks).max(axis=1) / qmax       # [G, N]
    scale = np.where(scale == 0, np.ones_like(scale), scale).astype(w.dtype)
    q = np.clip(np.rint(blocks / scale[:, None, :]), -qmax - (bits == 4), qmax)
    q = q.reshape(padded, n)
    if bits == 8:
        return q.astype(np.int8), scale
    u = (q + 8).astype(np.uint8)
    return (u[0::2] | (u[1::2] << 4)).astype(np.uint8), scale


def quantize_table(w):
    """(q, scale) for the embedding table `w` [V, H]: int8 rows, symmetric,
    round to nearest, one scale per row ([V, 1]), so `q * scale` ~ `w`."""
    w = np.asarray(w)
    if w.ndim != 2 or w.dtype.kind != "f":
        raise ValueError(f"weight_only: an embedding table must be a 2-D float matrix, got "
                         f"{w.dtype.name}{list(w.shape)}")
    scale = np.abs(w).max(axis=1, keepdims=True) / 127
    scale = np.where(scale == 0, np.ones_like(scale), scale).astype(w.dtype)
    return np.clip(np.rint(w / scale), -127, 127).astype(np.int8), scale


def captured_bytes(program):
    """Bytes of the tensors `program` reads besides its inputs (its weights),
    by dtype name and in all: {"float32": ..., "int8": ..., "total": ...}."""
    out = {}
    for t in program.captured.values():
        arr = np.asarray(t._value)
        out[arr.dtype.name] = out.get(arr.dtype.name, 0) + arr.nbytes
    out["total"] = sum(out.values())
    return out


def _uses(program):
    """{id(var): [(op, input position)]} over every block."""
    uses = {}
    for block in program.blocks:
        for op in block.ops:
            for i, v in enumerate(op.inputs):
                uses.setdefault(id(v), []).append((op, i))
    return uses


class WeightOnlyPass:
    """The pass itself: `pass_(program)` rewrites `program` in place and
    returns the names of the weights it quantized. One instance keeps the
    quantized form of each weight Tensor it met, so that every program of
    one function shares them."""

    def __init__(self, bits=8, group_size=-1, embeddings=True):
        _check_options(bits, group_size)
        self.bits, self.group_size, self.embeddings = bits, group_size, bool(embeddings)
        self._done = {}   # (id(weight Tensor), kind) -> (weight, q Tensor, scale Tensor)

    def _quantized(self, weight, table=False):
        key = (id(weight), table)
        hit = self._done.get(key)
        if hit is None or hit[0] is not weight:
            value = np.asarray(weight._value)
            q, scale = (quantize_table(value) if table
                        else quantize_weight(value, self.bits, self.group_size))
            qt, st = Tensor._from_array(q), Tensor._from_array(scale)
            base = weight.name or "weight"
            qt.name, st.name = f"{base}.quant{8 if table else self.bits}", f"{base}.scale"
            hit = self._done[key] = (weight, qt, st)
        return hit[1], hit[2]

    def _candidates(self, program):
        gb, uses = program.global_block(), _uses(program)
        written = {id(v) for b in program.blocks for op in b.ops for v in op.outputs}
        found = []
        for name, tensor in program.captured.items():
            var = gb.vars.get(name)
            if var is None or len(var.shape) != 2 or np.dtype(var.dtype).kind != "f" \
                    or id(var) in written:
                continue
            sites = uses.get(id(var), [])
            matmuls = [(op, i) for op, i in sites if op.type == "matmul" and i == 1]
            others = [(op, i) for op, i in sites if op.type != "matmul" or i != 1]
            if matmuls and all(sub_block_ids(op) for op, _ in others):
                found.append((name, var, tensor, sites, False))
            elif self.embeddings and not tensor.stop_gradient and _is_table(sites):
                found.append((name, var, tensor, sites, True))
        # tables last: their rewrite changes the length of control ops' input
        # lists, whose positions the Linear rewrites hold
        return sorted(found, key=lambda c: c[4])

    def __call__(self, program):
        if not isinstance(program, Program):
            raise TypeError(f"weight_only: expected a d2s.static.Program, got "
                            f"{type(program).__name__}")
        gb = program.global_block()
        head, done = [], []
        for name, var, tensor, sites, table in self._candidates(program):
            q, scale = self._quantized(tensor, table)
            qv = program._builder.capture(q)
            sv = program._builder.capture(scale)
            qv.stop_gradient = sv.stop_gradient = True
            if table:
                _rewrite_table(gb, head, var, qv, sv, sites)
            else:
                out = gb.create_var(var.shape, var.dtype, prefix="dequant", stop_gradient=True)
                head.append(Operator(gb, "weight_dequantize", [qv, sv], [out],
                                     {"bits": self.bits, "k": int(var.shape[0]),
                                      "transpose": False}, origin=()))
                for op, i in sites:
                    op.inputs[i] = out
            del program.captured[name]
            program._captured_ids.pop(id(tensor), None)
            del gb.vars[name]
            done.append(name)
        gb.ops[:0] = head
        program._pruned_for = None
        return done


def _is_table(sites):
    """An embedding table's uses: row gathers, and besides them only the
    tied output projection (matmul's weight, or a transpose of it) and
    control ops passing it to their bodies."""
    def row_gather(op, i):
        return op.type == "gather" and i == 0 and op.attrs.get("axis") == 0
    return any(row_gather(op, i) for op, i in sites) and all(
        row_gather(op, i) or (op.type == "matmul" and i == 1)
        or (op.type == "transpose" and i == 0) or sub_block_ids(op) for op, i in sites)


def _rewrite_table(gb, head, var, qv, sv, sites):
    """Each gather of `var` becomes a gather_dequantize of (qv, sv); its other
    readers get the table rebuilt at the head of the program; control ops
    pass the int8 rows and scales (and the rebuilt table) to their bodies."""
    full = None
    if any(not sub_block_ids(op) and op.type != "gather" for op, _ in sites):
        cast = gb.create_var(var.shape, var.dtype, prefix="dequant", stop_gradient=True)
        full = gb.create_var(var.shape, var.dtype, prefix="dequant", stop_gradient=True)
        head.append(Operator(gb, "cast", [qv], [cast], {"dtype": np.dtype(var.dtype).name},
                             origin=()))
        head.append(Operator(gb, "multiply", [cast, sv], [full], {}, origin=()))
    for op, i in sites:
        if sub_block_ids(op):
            continue
        if op.type == "gather":
            op.type, op.inputs, op.attrs = "gather_dequantize", [qv, sv, op.inputs[1]], {}
        else:
            op.inputs[i] = full
    passed = [qv, sv] + ([full] if full is not None else [])
    for op in {id(op): op for op, _ in sites if sub_block_ids(op)}.values():
        i = next(j for j, v in enumerate(op.inputs) if v is var)
        op.inputs[i:i + 1] = [v for v in passed if all(v is not w for w in op.inputs)]


def weight_only(target, bits=8, group_size=-1, embeddings=True):
    """Quantize the Linear weights of `target`'s inference programs:

    * a `d2s.static.Program`: a rewritten copy is returned (the original is
      left as it is);
    * a `StaticFunction` (`d2s.jit.to_static(fn)`): every program it builds
      from now on is rewritten; returns it;
    * a `Layer`: its `forward` is converted (if it was not) and quantized
      the same way; returns the layer.

    `bits` 8 (int8) or 4 (two values per byte); `group_size` rows share a
    scale (-1: one scale per output channel). `embeddings`: also store the
    embedding tables as int8 rows (one scale per row; see the module
    docstring)."""
    from ..jit.static_function import StaticFunction
    pass_ = WeightOnlyPass(bits, group_size, embeddings)
    if isinstance(target, Program):
        new = target.clone()
        pass_(new)
        return new
    if isinstance(target, StaticFunction):
        return target.add_program_pass(pass_)
    from ..nn.layer import Layer
    if isinstance(target, Layer):
        if not isinstance(target.forward, StaticFunction):
            from ..jit.api import to_static
            to_static(target)
        target.forward.add_program_pass(pass_)
        return target
    raise TypeError(f"weight_only: expected a Program, a to_static function or a Layer, got "
                    f"{type(target).__name__}")
