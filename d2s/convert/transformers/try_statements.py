"""`except E as e:` -> `except E as e: _jst.check_caught(e)` first (the name is made
up when absent; a bare `except:` is `except BaseException`, which may be named).

Converted code traces both branches of an `if` on a tensor (and a loop body
once): an error raised while tracing one is not an error of the run, where
that path may never be taken. A Python `except` around the construct would
catch it at build time and take the handler for every input, a silent wrong
answer; the check turns that into a clear error naming the construct.
"""
from .. import templates
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
        if node.name is None:
            node.name = self.namer.new("caught")
        node.body = finish(templates.replace("_jst.check_caught(exc)", exc=node.name),
                           node) + node.body
        return node


def transform(node, ctx):
    handlers = _Handlers(ctx.namer)
    for stmt in node.body:
        handlers.visit(stmt)
    return node
