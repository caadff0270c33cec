"""Effects of nested functions on their enclosing function's variables.

A nested function reads the enclosing locals it uses, and writes those it
declares `nonlocal`, whenever it runs: a call `f()` inside an `if` on a
tensor writes `y` as surely as `y = ...` there would. So that liveness and
the converters see it, every reference to such a function in the enclosing
scope is annotated with CALL_EFFECTS (the reads and writes a call may make),
which activity analysis adds to the reference's own read. Effects are
transitive: a nested function that refers to another has its effects too.

A function passed elsewhere and called later is covered where its name is
referenced, which is conservative; one reached without its name appearing
(e.g. stored in a container before the construct) is not.
"""
import ast

from ..traversal import walk
from . import annos
from .activity import (declared_nonlocals, free_reads, reads_writes, scope_locals, scope_nodes,
                       scope_statements)

__all__ = ["annotate_call_effects"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _nested_defs(fn_node):
    return [n for n in scope_statements(fn_node.body) if isinstance(n, _DEFS)]


def _own_effects(fn_def, outer_locals):
    """(reads, writes) of the outer function's locals by one call of `fn_def`."""
    writes = set(declared_nonlocals(fn_def)) & reads_writes(fn_def.body)[1]
    return free_reads(fn_def) & outer_locals, writes & outer_locals


def _referenced(fn_def):
    """Names a nested function's body loads (its calls of siblings included)."""
    return {n.id for n in walk(fn_def) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)} - {fn_def.name}


def annotate_call_effects(fn_node):
    """Annotate CALL_EFFECTS on the loads, in `fn_node`'s own scope, of nested
    functions that read or write the function's locals."""
    defs = _nested_defs(fn_node)
    if not defs:
        return
    outer_locals = scope_locals(fn_node)
    effects = {d.name: _own_effects(d, outer_locals) for d in defs}
    refs = {d.name: _referenced(d) for d in defs}
    changed = True
    while changed:  # close over nested functions calling each other
        changed = False
        for name, (reads, writes) in list(effects.items()):
            new_reads, new_writes = set(reads), set(writes)
            for other in refs[name] & effects.keys():
                new_reads |= effects[other][0]
                new_writes |= effects[other][1]
            if (new_reads, new_writes) != (reads, writes):
                effects[name] = (new_reads, new_writes)
                changed = True
    effects = {k: (frozenset(r), frozenset(w)) for k, (r, w) in effects.items() if r or w}
    if not effects:
        return
    for node in scope_nodes(fn_node.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id in effects:
            setattr(node, annos.CALL_EFFECTS, effects[node.id])
