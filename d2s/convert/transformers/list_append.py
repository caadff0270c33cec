"""`lst.append(v)` in a loop -> `lst = _jst.convert_list_append(lst, v)`,
`lst.extend(vs)` -> `lst = _jst.convert_list_extend_call(lst, vs)`,
`lst += [v, ...]` (a list literal) -> `lst = _jst.convert_list_extend(lst, [v, ...])`
and `lst = lst + [v, ...]` -> `lst = _jst.convert_list_concat(lst, [v, ...])`;
`obj.a.append(v)` / `d["k"].extend(vs)` -> `_jst.convert_reached_list_call(...)`,
an error under a tensor `if` or loop (never an append shown on every path).

Rewritten inside loops and `if` statements. The assignment makes `lst` a
loop variable or branch output for the analyses, so a loop or `if` on a
tensor can carry it as a tensor array; with Python values the helper
appends in place and returns the same list (plain Python semantics kept).
"""
import ast

from .. import templates
from ..traversal import StatementTransformer
from .common import finish


_METHOD_HELPERS = {"append": "convert_list_append", "extend": "convert_list_extend_call"}


class _ListAppend(StatementTransformer):
    """Rewrites statements only (expressions hold none)."""

    def __init__(self):
        self.loops = 0

    def visit_For(self, node):
        self.loops += 1
        self.generic_visit(node)
        self.loops -= 1
        return node

    # In a branch too: a list a tensor `if` appends to must become a branch
    # output (runtime `lists.sharing`), never be changed in place.
    visit_While = visit_If = visit_For

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
                and call.func.attr in _METHOD_HELPERS and isinstance(call.func.value, ast.Name)
                and len(call.args) == 1 and not call.keywords
                and not isinstance(call.args[0], ast.Starred)):
            return finish(templates.replace(
                "lst = _jst.helper(lst, value)", helper=_METHOD_HELPERS[call.func.attr],
                lst=call.func.value.id, value=call.args[0]), node)
        if (self.loops and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in _METHOD_HELPERS
                and isinstance(call.func.value, (ast.Attribute, ast.Subscript))
                and len(call.args) == 1 and not call.keywords
                and not isinstance(call.args[0], ast.Starred)):
            # A list reached through an object or a dict: checked when called.
            return finish(templates.replace(
                "_jst.convert_reached_list_call(lst, method, value, label)",
                lst=call.func.value, method=ast.Constant(call.func.attr), value=call.args[0],
                label=ast.Constant(ast.unparse(call.func.value))), node)
        return node

    def visit_Assign(self, node):
        value = node.value
        if (self.loops and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
                and isinstance(value.left, ast.Name) and value.left.id == node.targets[0].id
                and isinstance(value.right, ast.List)):
            return finish(templates.replace(
                "lst = _jst.convert_list_concat(lst, values)",
                lst=value.left.id, values=value.right), node)
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
