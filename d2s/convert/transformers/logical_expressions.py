"""`and` / `or` / `not` and chained comparisons -> runtime calls, right side lazy.

`a and b` -> `_jst.convert_logical_and(a, lambda: b)` (likewise `or`),
`not a` -> `_jst.convert_logical_not(a)`, `a < b <= c` ->
`_jst.convert_compare_chain(a, '<', lambda: b, '<=', lambda: c)`: Python
short-circuiting and single evaluation are kept; tensors get `cond`.
A `:=` in an operand that would move into a lambda (the lambda would bind its
target) keeps Python's `and`/`or`/chain; testing a tensor there is then a
clear error naming the target. One in the leftmost operand is evaluated
outside any lambda and converts as usual.

A right side whose source has no calls (names, constants, attributes,
subscripts, operators: `norm > eps and i < n`) is marked `simple`
(`_jst.convert_logical_and(a, lambda: b, True)`): facing a tensor it may be
traced inline and combined elementwise when its ops are pure and cheap, and
traced once more inside a `cond` when they are not (see
`d2s.static.inline_operand`); with no calls there is no user code whose
effects a second trace would repeat.
"""
import ast

from .. import templates
from ..traversal import NodeTransformer
from .common import finish, python_test_only, walrus_targets

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
        ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
        ast.NotIn: "not in"}


# What a `simple` right side may hold (no calls, lambdas, `:=`, comprehensions).
_SIMPLE = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple,
           ast.Compare, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.expr_context, ast.operator,
           ast.unaryop, ast.cmpop, ast.boolop)


def _is_simple(node):
    return all(isinstance(n, _SIMPLE) for n in ast.walk(node))


class _Logical(NodeTransformer):
    def visit_BoolOp(self, node):
        simple = [_is_simple(v) for v in node.values]  # (the source, before conversion)
        self.generic_visit(node)
        targets = walrus_targets(node.values[1:])
        if targets:
            # Python tests every operand but the last: a tensor there needs `cond`.
            node.values[:-1] = [python_test_only(v, targets, "`and`/`or`")
                                for v in node.values[:-1]]
            return node
        helper = "convert_logical_and" if isinstance(node.op, ast.And) else "convert_logical_or"
        result = node.values[-1]
        for k in range(len(node.values) - 2, -1, -1):
            # the right side of operand k: every operand after it
            template = ("_jst.helper(left, lambda: right, True)" if all(simple[k + 1:])
                        else "_jst.helper(left, lambda: right)")
            result = templates.replace_as_expression(
                template, helper=helper, left=node.values[k], right=result)
        return finish(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return finish(templates.replace_as_expression(
            "_jst.convert_logical_not(operand)", operand=node.operand), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            # `key in d`: Python's test, checked for an entry a tensor construct
            # may leave unset (runtime.logical.convert_contains)
            call = templates.replace_as_expression("_jst.convert_contains(key, container)",
                                                   key=node.left,
                                                   container=node.comparators[0])
            if isinstance(node.ops[0], ast.NotIn):
                call = ast.UnaryOp(op=ast.Not(), operand=call)
            return finish(call, node)
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
