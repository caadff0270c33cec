"""`and` / `or` / `not` and chained comparisons -> runtime calls, right side lazy.

`a and b` -> `_jst.convert_logical_and(a, lambda: b)` (likewise `or`),
`not a` -> `_jst.convert_logical_not(a)`, `a < b <= c` ->
`_jst.convert_compare_chain(a, '<', lambda: b, '<=', lambda: c)`: Python
short-circuiting and single evaluation are kept; tensors get `cond`.
A `:=` in an operand that would move into a lambda (the lambda would bind its
target) keeps Python's `and`/`or`/chain; testing a tensor there is then a
clear error naming the target. One in the leftmost operand is evaluated
outside any lambda and converts as usual.
"""
import ast

from .. import templates
from ..traversal import NodeTransformer
from .common import finish, python_test_only, walrus_targets

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
        ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
        ast.NotIn: "not in"}


class _Logical(NodeTransformer):
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        targets = walrus_targets(node.values[1:])
        if targets:
            # Python tests every operand but the last: a tensor there needs `cond`.
            node.values[:-1] = [python_test_only(v, targets, "`and`/`or`")
                                for v in node.values[:-1]]
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
        if len(node.ops) < 2 or walrus_targets(node.comparators):
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
