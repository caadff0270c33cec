"""`and` / `or` / `not` and chained comparisons -> runtime calls, right side lazy.

`a and b` -> `_jst.convert_logical_and(a, lambda: b)` (likewise `or`),
`not a` -> `_jst.convert_logical_not(a)`, `a < b <= c` ->
`_jst.convert_compare_chain(a, '<', lambda: b, '<=', lambda: c)`: Python
short-circuiting and single evaluation are kept; tensors get `cond`.
Expressions containing `:=` are left alone (a lambda would capture the
binding).
"""
import ast

from .. import templates
from ..traversal import NodeTransformer
from .common import finish

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
        ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
        ast.NotIn: "not in"}


def _has_walrus(node):
    return any(isinstance(n, ast.NamedExpr) for n in ast.walk(node))


class _Logical(NodeTransformer):
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if _has_walrus(node):
            return node
        helper = "convert_logical_and" if isinstance(node.op, ast.And) else "convert_logical_or"
        result = node.values[-1]
        for left in reversed(node.values[:-1]):
            result = templates.replace_as_expression(
                "_jst.helper(left, lambda: right)", helper=helper, left=left, right=result)
        return finish(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return finish(templates.replace_as_expression(
            "_jst.convert_logical_not(operand)", operand=node.operand), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) < 2 or _has_walrus(node):
            return node
        call = templates.replace_as_expression("_jst.convert_compare_chain(left)",
                                               left=node.left)
        for op, right in zip(node.ops, node.comparators):
            call.args.append(ast.Constant(value=_OPS[type(op)]))
            call.args.append(ast.Lambda(args=_no_args(), body=right))
        return finish(call, node)


def _no_args():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


def transform(node, ctx):
    return _Logical().visit(node)
