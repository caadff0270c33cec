"""Reject syntax conversion cannot express, naming the construct, file and line.

Rejected: generators (`yield`, `yield from`), `async` functions and their
`await` / `async for` / `async with`, and writes to names declared `global`
inside an `if` / loop that will be converted (the generated closures could
only share them through the module, which static control flow cannot
capture).  `nonlocal` is supported: generated closures re-declare it.
"""
import ast

from ..analysis.activity import declared_globals, reads_writes
from ..errors import UnsupportedSyntaxError
from .common import user_functions, walk_scope

_REJECTED = {
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.Await: "await",
    ast.AsyncFunctionDef: "async def",
    ast.AsyncFor: "async for",
    ast.AsyncWith: "async with",
}


def _error(ctx, node, construct, reason=""):
    origin = getattr(node, "_d2s_origin", None)
    if origin is None:
        return UnsupportedSyntaxError(construct, ctx.filename, getattr(node, "lineno", 0),
                                      "", reason)
    return UnsupportedSyntaxError(construct, origin.filename, origin.lineno,
                                  origin.source_line, reason)


def transform(node, ctx):
    """Raise UnsupportedSyntaxError for the first unsupported construct found."""
    for sub in ctx.user_nodes:   # the pipeline's first step: the tree is still those nodes
        kind = _REJECTED.get(type(sub))
        if kind is not None:
            raise _error(ctx, sub, kind)
    for fn in user_functions(node):
        globals_ = declared_globals(fn)
        if not globals_:
            continue
        for sub in walk_scope(fn.body):
            if isinstance(sub, (ast.If, ast.While, ast.For)):
                written = reads_writes(sub.body + sub.orelse)[1] & globals_
                if isinstance(sub, ast.For):
                    written |= reads_writes(sub.target)[1] & globals_
                if written:
                    raise _error(ctx, sub, "assignment to global " + ", ".join(sorted(written)),
                                 "inside a converted if/loop; pass it as a value instead")
    return node
