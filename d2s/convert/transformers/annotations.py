"""`x: T = v` -> `x = v` in function bodies (a local's annotation is never evaluated).

Converted control flow moves a branch or loop body into a closure that
declares the names it assigns `nonlocal`, and Python rejects an annotated
`nonlocal` name (SyntaxError in the generated code). PEP 526: inside a
function a local variable's annotation is not evaluated, so dropping it
changes nothing at run time. A bare `x: T` becomes `pass`. Class bodies,
whose annotations are evaluated and stored, are left alone; annotated
attribute and subscript targets are too (they never become `nonlocal`).
"""
import ast

from ..traversal import StatementTransformer
from .common import finish


class _Annotations(StatementTransformer):
    def visit_ClassDef(self, node):
        return node

    def visit_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            return node
        if node.value is None:
            new = ast.Pass()
        else:
            new = ast.Assign(targets=[node.target], value=node.value)
        return finish(ast.copy_location(new, node), node)


def transform(node, ctx):
    for stmt in node.body:
        _Annotations().visit(stmt)
    return node
