"""Ternary `a if c else b` -> `_jst.convert_ifelse_expr(c, lambda: a, lambda: b)`."""
import ast

from .. import templates
from ..traversal import NodeTransformer
from .common import finish


class _Ternary(NodeTransformer):
    def visit_IfExp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, ast.NamedExpr) for n in ast.walk(node)):
            return node
        return finish(templates.replace_as_expression(
            "_jst.convert_ifelse_expr(test, lambda: body, lambda: orelse)",
            test=node.test, body=node.body, orelse=node.orelse), node)


def transform(node, ctx):
    return _Ternary().visit(node)
