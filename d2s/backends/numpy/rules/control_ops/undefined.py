"""numpy rules of `undefined`, `cast_if_defined` and `zeros_if_defined`
(`d2s/static/control_ops/undefined.py`): the generated code holds an
undefined name as the interpreter's own `_Undefined` value."""
from __future__ import annotations

from .....core.registry import register_lowering
from .....static.control_ops.undefined import (CAST_IF_DEFINED, UNDEFINED, ZEROS_IF_DEFINED,
                                               _zeros_if_defined)


def _emit(em, op, indent):
    em.emit(f"{em.ident(op.outputs[0].name)} = _Undefined({em.constant(op.attrs['name'])})",
            indent, op)


def _emit_cast(em, op, indent):
    x, out = em.ident(op.inputs[0].name), em.ident(op.outputs[0].name)
    em.emit(f"{out} = {x} if type({x}) is _Undefined else "
            f"{em.kernel('cast')}({x}, dtype={em.constant(op.attrs['dtype'])})", indent, op)


def _emit_zeros(em, op, indent):
    em.globals.setdefault("_zeros_if_defined", _zeros_if_defined)
    out = op.outputs[0]
    em.emit(f"{em.ident(out.name)} = _zeros_if_defined({em.ident(op.inputs[0].name)}, "
            f"{em.constant(out.dtype.name)})", indent, op)


register_lowering("numpy", UNDEFINED, _emit)
register_lowering("numpy", CAST_IF_DEFINED, _emit_cast)
register_lowering("numpy", ZEROS_IF_DEFINED, _emit_zeros)
