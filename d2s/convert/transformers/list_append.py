"""`lst.append(v)` in a loop -> `lst = _jst.convert_list_append(lst, v)`, and
`lst += [v, ...]` (a list literal) -> `lst = _jst.convert_list_extend(lst, [v, ...])`.

The assignment makes `lst` a loop variable for the analyses, so a loop on a
tensor can carry it as a tensor array; with Python values the helper appends
in place and returns the same list (plain Python semantics kept).
"""
import ast

from .. import templates
from ..traversal import StatementTransformer
from .common import finish


class _ListAppend(StatementTransformer):
    """Rewrites statements only (expressions hold none)."""

    def __init__(self):
        self.loops = 0

    def visit_For(self, node):
        self.loops += 1
        self.generic_visit(node)
        self.loops -= 1
        return node

    visit_While = visit_For

    def visit_FunctionDef(self, node):
        saved, self.loops = self.loops, 0
        self.generic_visit(node)
        self.loops = saved
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Expr(self, node):
        call = node.value
        if (self.loops and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "append" and isinstance(call.func.value, ast.Name)
                and len(call.args) == 1 and not call.keywords
                and not isinstance(call.args[0], ast.Starred)):
            return finish(templates.replace(
                "lst = _jst.convert_list_append(lst, value)",
                lst=call.func.value.id, value=call.args[0]), node)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if (self.loops and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name)
                and isinstance(node.value, ast.List)):
            return finish(templates.replace(
                "lst = _jst.convert_list_extend(lst, values)",
                lst=node.target.id, values=node.value), node)
        return node


def transform(node, ctx):
    return _ListAppend().visit(node)
