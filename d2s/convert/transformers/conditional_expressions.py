"""Ternary `a if c else b` -> `_jst.convert_ifelse_expr(c, lambda: a, lambda: b)`.

A `:=` in `a` or `b` (the lambdas would bind its target) keeps the Python
ternary; a tensor `c` is then a clear error naming the target.

A comprehension's `if c` -> `if _jst.comprehension_test(c)`: which items it
keeps decides the length of what it builds, known only at run time for a
tensor `c`: a clear error there (it was Variable.__bool__'s advice to convert
the function, which already was).
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


    def visit_comprehension(self, node):
        self.generic_visit(node)
        node.ifs = [finish(templates.replace_as_expression(
            "_jst.comprehension_test(test)", test=test), test) for test in node.ifs]
        return node


def transform(node, ctx):
    return _Ternary().visit(node)
