"""Reject syntax conversion cannot express, naming the construct, file and line.

Rejected: generators (`yield`, `yield from`), `async` functions and their
`await` / `async for` / `async with`.  `nonlocal` is supported: generated
closures re-declare it; so are writes to `global` names inside an `if` or
loop on Python values (global_writes; on a tensor they are a clear error).
"""
import ast

from ..errors import UnsupportedSyntaxError

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
    return node
