"""Drop-in `ast.NodeTransformer` / `ast.NodeVisitor` that walk faster.

Conversion walks the whole function a dozen times, and the standard walkers
spend most of that time finding visitor methods (a `getattr` per node) and
descending into leaves that never change: the `Load`/`Store` context of
every name and the operator of every operation.  These classes look the
visitor up once per (walker class, node class), and skip those leaves when
the walker has no visitor for them.  Everything else is the standard
library's contract: the same visiting order, `generic_visit` replacing
fields and splicing lists the same way.
"""
import ast

__all__ = ["NodeTransformer", "NodeVisitor", "child_nodes", "LEAVES"]

# Node kinds without fields, shared by every tree Python parses.
LEAVES = _LEAVES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
_AST = ast.AST
_tables = {}     # walker class -> {node class: visitor function, or None to skip}


# The standard library's `visit_Constant` only looks for the deprecated
# `visit_Num`/`visit_Str`/... (a failed getattr per constant) before
# `generic_visit`: a walker that defines none of them goes there directly.
_CONSTANT_SHIM = getattr(ast.NodeVisitor, "visit_Constant", None)
_DEPRECATED_CONSTANT_VISITORS = ("visit_Num", "visit_Str", "visit_Bytes", "visit_NameConstant",
                                 "visit_Ellipsis")


def _visitor(walker_class, node_class):
    method = getattr(walker_class, "visit_" + node_class.__name__, None)
    if method is not None and method is _CONSTANT_SHIM and not any(
            hasattr(walker_class, name) for name in _DEPRECATED_CONSTANT_VISITORS):
        return walker_class.generic_visit
    if method is not None:
        return method
    if issubclass(node_class, _LEAVES):
        return None      # no fields, nothing to do
    return walker_class.generic_visit


def _visit(self, node):
    cls = type(self)
    table = _tables.get(cls)
    if table is None:
        table = _tables[cls] = {}
    kind = type(node)
    try:
        method = table[kind]
    except KeyError:
        method = table[kind] = _visitor(cls, kind)
    return node if method is None else method(self, node)


def child_nodes(node):
    """`ast.iter_child_nodes(node)` as a list, without the operator/context leaves."""
    children = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, list):
            children.extend(item for item in value
                            if isinstance(item, _AST) and not isinstance(item, _LEAVES))
        elif isinstance(value, _AST) and not isinstance(value, _LEAVES):
            children.append(value)
    return children


class NodeVisitor(ast.NodeVisitor):
    """`ast.NodeVisitor`, walking faster (see the module docstring)."""

    visit = _visit

    def generic_visit(self, node):
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        self.visit(item)
            elif isinstance(value, _AST):
                self.visit(value)


class NodeTransformer(ast.NodeTransformer):
    """`ast.NodeTransformer`, walking faster (see the module docstring)."""

    visit = _visit

    def generic_visit(self, node):
        for field in node._fields:
            try:
                old = getattr(node, field)
            except AttributeError:
                continue
            if isinstance(old, list):
                new_values = None       # a copy, made once something changes
                for index, value in enumerate(old):
                    if not isinstance(value, _AST):
                        if new_values is not None:
                            new_values.append(value)
                        continue
                    new = self.visit(value)
                    if new is value:
                        if new_values is not None:
                            new_values.append(value)
                        continue
                    if new_values is None:
                        new_values = old[:index]
                    if new is None:
                        continue
                    if isinstance(new, _AST):
                        new_values.append(new)
                    else:
                        new_values.extend(new)
                if new_values is not None:
                    old[:] = new_values
            elif isinstance(old, _AST):
                new = self.visit(old)
                if new is None:
                    delattr(node, field)
                elif new is not old:
                    setattr(node, field, new)
        return node
