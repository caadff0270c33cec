"""`except E as e:` -> `except E as __caught: _jst.check_caught(__caught); e = __caught`.

Converted code traces both branches of an `if` on a tensor (and a loop body
once): an error raised while tracing one is not an error of the run, where
that path may never be taken, and neither is the error of a static Variable
asked for a Python value. A Python `except` would catch either at build time
and take the handler for every input, a silent wrong answer; the check turns
that into a clear error.

The handler binds a generated name (a bare `except:` becomes `except
BaseException`, which may be named) that is local to it (annos.HANDLER_LOCAL):
Python unbinds an `as` name when the handler ends, and a branch or loop
closure that read it back as state failed ("cannot access free variable").
The user's name is assigned from it and stays bound, as it does until the
handler ends in Python.

The body of a `try` with handlers runs inside `with _jst.try_body(lambda:
(E, ...), "file, line N"):`, so that a raise a tensor construct turns into a
run-time op (in a helper the body calls: `if x.sum() < 0: raise
ValueError`) is refused while the program is built when the handlers would
take it (runtime `try_bodies`); the handlers' types are evaluated only then,
as Python does.
"""
import ast

from .. import templates
from ..analysis import annos
from ..origin import ORIGIN
from ..traversal import StatementTransformer
from .common import finish


class _Handlers(StatementTransformer):
    def __init__(self, namer):
        self.namer = namer

    def visit_ClassDef(self, node):
        return node

    def visit_Try(self, node):
        self.generic_visit(node)
        if node.handlers:
            origin = getattr(node, ORIGIN, None)
            where = f"{origin.filename}, line {origin.lineno}" if origin else "line ?"
            types = ast.Tuple(elts=[h.type for h in node.handlers], ctx=ast.Load())
            node.body = finish(templates.replace(
                "with _jst.try_body(lambda: types, where):\n    body",
                types=types, where=ast.Constant(where), body=node.body), node)
        return node

    def visit_ExceptHandler(self, node):
        self.generic_visit(node)
        if node.type is None:
            node.type = finish(templates.replace_as_expression("BaseException"), node)
        caught = self.namer.new("caught")
        prologue = templates.replace("_jst.check_caught(caught)", caught=caught)
        if node.name is not None:
            prologue += templates.replace("name = caught", name=node.name, caught=caught)
        node.name = caught
        setattr(node, annos.HANDLER_LOCAL, True)
        node.body = finish(prologue, node) + node.body
        return node


def transform(node, ctx):
    handlers = _Handlers(ctx.namer)
    for stmt in node.body:
        handlers.visit(stmt)
    return node
