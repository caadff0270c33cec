"""`raise E` inside `if`/loops -> `_jst.convert_raise(E)` (a run-time check under a tensor `if`).

Only raises nested in an `if`, `while` or `for` of the function (where a
tensor condition may guard them) are rewritten; bare `raise`, raises at the
top of the function and raises inside `try`/`with` blocks stay Python.
"""
import ast

from .. import templates
from ..traversal import StatementTransformer
from .common import finish


class _Raises(StatementTransformer):
    def __init__(self):
        self.depth = 0      # enclosing if/while/for statements in this function
        self.blocked = 0    # enclosing try/with statements

    def _nested(self, node, counter):
        setattr(self, counter, getattr(self, counter) + 1)
        self.generic_visit(node)
        setattr(self, counter, getattr(self, counter) - 1)
        return node

    def visit_If(self, node):
        return self._nested(node, "depth")

    visit_While = visit_For = visit_If

    def visit_Try(self, node):
        return self._nested(node, "blocked")

    visit_With = visit_TryStar = visit_Try

    def visit_FunctionDef(self, node):
        saved = (self.depth, self.blocked)
        self.depth = self.blocked = 0
        self.generic_visit(node)
        self.depth, self.blocked = saved
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Raise(self, node):
        if node.exc is None or node.cause is not None or not self.depth or self.blocked:
            return node
        exc = node.exc
        if isinstance(exc, ast.Call) and len(exc.args) == 1 and not exc.keywords:
            # `raise ValueError(f"length {x.shape[1]} ...")`: a message of tensor
            # values is formatted when the raise runs (static.side_effects)
            from .builtin_calls import _text_call
            exc.args[0] = _text_call(exc.args[0])
        return finish(templates.replace("_jst.convert_raise(exc)", exc=exc), node)


def transform(node, ctx):
    return _Raises().visit(node)
