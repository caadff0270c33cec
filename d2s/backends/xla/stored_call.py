"""Calling a stored StableHLO module from a JAX trace.

One primitive, `call(module, *args)`, whose lowering merges the stored
module into the module being lowered and calls its `main`: what
`jax.export`'s `Exported.call` does, less what d2s's cache never needs
(shape polymorphism, shardings, several platforms, effects) and less its
one costly step: in JAX 0.10 every lowering of an exported call first
initializes JAX's LAPACK kernels, which imports SciPy (about 400 ms, once
per process), whether the module uses LAPACK or not. (A module that
calls LAPACK is never stored, see `lowered_cache`: those kernels are set
up by the lowering rule that emits the call, which a stored module skips.)

Public JAX extension points only: `jax.extend.core.Primitive`,
`jax.interpreters.mlir` (`register_lowering`, `merge_mlir_modules`) and the
MLIR bindings jaxlib ships.
"""
from __future__ import annotations

from jax.extend.core import Primitive
from jax.interpreters import mlir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

__all__ = ["StoredModule", "call"]


class StoredModule:
    """A lowered module (MLIR bytecode) and the avals of its flat results.

    A primitive parameter: compared and hashed by identity, so that each
    module is its own call (JAX caches lowerings per parameters)."""
    __slots__ = ("bytecode", "out_avals")

    def __init__(self, bytecode, out_avals):
        self.bytecode = bytecode
        self.out_avals = tuple(out_avals)


_call_p = Primitive("d2s_stored_module")
_call_p.multiple_results = True


@_call_p.def_abstract_eval
def _abstract_eval(*avals, module):
    return module.out_avals


def _lowering(ctx, *args, module):
    with ctx.module_context.context:
        stored = ir.Module.parse(module.bytecode)
    name = mlir.merge_mlir_modules(ctx.module_context.module, "d2s_program", stored,
                                   dst_symtab=ctx.module_context.symbol_table)
    callee = ctx.module_context.symbol_table[name]
    return func.CallOp(callee.type.results, ir.FlatSymbolRefAttr.get(name), list(args)).results


mlir.register_lowering(_call_p, _lowering)


def call(module, *args):
    """The flat results of `module`'s main on `args` (inside a JAX trace)."""
    return _call_p.bind(*args, module=module)
