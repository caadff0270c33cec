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
"""
import ast

from .. import templates
from ..analysis import annos
from ..traversal import StatementTransformer
from .common import finish


class _Handlers(StatementTransformer):
    def __init__(self, namer):
        self.namer = namer

    def visit_ClassDef(self, node):
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
