"""Ternary `a if c else b` -> `_jst.convert_ifelse_expr(c, lambda: a, lambda: b)`.

A `:=` in `a` or `b` (the lambdas would bind its target) keeps the Python
ternary; a tensor `c` is then a clear error naming the target.
"""
import ast

from .. import templates
from ..traversal import NodeTransformer
from .common import finish, python_test_only, walrus_targets


class _Ternary(NodeTransformer):
    def visit_IfExp(self, node):
        self.generic_visit(node)
        targets = walrus_targets([node.body, node.orelse])
        if targets:
            node.test = python_test_only(node.test, targets, "a conditional expression")
            return node
        return finish(templates.replace_as_expression(
            "_jst.convert_ifelse_expr(test, lambda: body, lambda: orelse)",
            test=node.test, body=node.body, orelse=node.orelse), node)


def transform(node, ctx):
    return _Ternary().visit(node)
