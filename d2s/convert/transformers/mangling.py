"""Apply private-name mangling (`self.__x` -> `self._Cls__x`) for methods.

The original method was compiled inside its class, so Python mangled its
`__private` names; the converted copy is compiled outside any class and
must spell them mangled already.
"""
import ast

from ..traversal import NodeTransformer


def _mangle(name, prefix):
    if name.startswith("__") and not name.endswith("__") and "." not in name:
        return prefix + name
    return name


class _Mangler(NodeTransformer):
    def __init__(self, prefix):
        self.prefix = prefix

    def visit_Name(self, node):
        node.id = _mangle(node.id, self.prefix)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = _mangle(node.attr, self.prefix)
        return node

    def visit_arg(self, node):
        node.arg = _mangle(node.arg, self.prefix)
        return node

    def visit_ClassDef(self, node):
        return node  # a nested class mangles with its own name


def transform(node, ctx):
    """Mangle when the function was defined directly in a class body."""
    parts = ctx.function_name.split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        return node
    class_name = parts[-2].lstrip("_")
    if not class_name:
        return node
    for stmt in node.body:
        _Mangler("_" + class_name).visit(stmt)
    return node
