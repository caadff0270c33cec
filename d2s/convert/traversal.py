"""Drop-in `ast.NodeTransformer` / `ast.NodeVisitor` that walk faster.

Conversion walks the whole function a dozen times, and the standard walkers
spend most of that time finding visitor methods (a `getattr` per node) and
descending into leaves that never change: the `Load`/`Store` context of
every name, the operator of every operation, and the nodes without child
nodes (names, constants: about half of a tree).  These classes look the
visitor up once per (walker class, node class), and skip those leaves when
the walker has no visitor for them (nor, for names and constants, a
`generic_visit` of its own, which expects to see every node).  Everything else is the standard
library's contract: the same visiting order, `generic_visit` replacing
fields and splicing lists the same way.

Converters of statements (`if`, loops, `raise`) use `StatementTransformer`,
which walks statement lists only: the expressions, most of a tree, hold no
statements.
"""
import ast

__all__ = ["NodeTransformer", "NodeVisitor", "StatementTransformer", "child_nodes", "walk",
           "LEAVES", "CHILDLESS", "STATEMENT_FIELDS", "statement_fields", "node_fields"]

# Node kinds without fields, shared by every tree Python parses.
LEAVES = _LEAVES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
_AST = ast.AST
# Node kinds whose fields never hold a node (names, constants, keywords like
# `pass`), about half of a tree: a walker with neither a visitor for them
# nor its own generic_visit has nothing to do there.
_NO_CHILD_NODES = _LEAVES + (ast.Name, ast.Constant, ast.Pass, ast.Break, ast.Continue,
                             ast.Global, ast.Nonlocal, ast.alias)
# The same node kinds, for an exact-class test (`in`) before looking at fields.
CHILDLESS = frozenset(kind for kind in _NO_CHILD_NODES[len(_LEAVES):])
# The fields that hold statements (directly, or in handlers and match cases,
# which hold statements).  A statement appears nowhere else: no expression
# contains one (a lambda's body is an expression).
STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
_statement_fields = {}   # node class -> its STATEMENT_FIELDS, in `_fields` order
# Fields that never hold a node other than a leaf: identifiers and flags, the
# contexts and operators (shared leaves, never visited by any walker here).
_NEVER_NODES = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "asname", "module",
                          "level", "type_comment", "kind", "conversion", "is_async",
                          "simple"})
_node_fields = {}   # node class -> its fields that may hold nodes, in `_fields` order


def node_fields(node_class):
    """The fields of `node_class` that may hold nodes other than leaves: what a
    walk looks at (an attribute's name and context, an operator, are most of
    the fields of the expressions converted code is made of)."""
    fields = _node_fields.get(node_class)
    if fields is None:
        fields = _node_fields[node_class] = tuple(
            f for f in node_class._fields if f not in _NEVER_NODES)
    return fields
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
        method = None    # the shim would only call generic_visit
    if method is not None:
        return method
    if issubclass(node_class, _LEAVES):
        return None      # no fields, nothing to do
    if (issubclass(node_class, _NO_CHILD_NODES)
            and walker_class.generic_visit in _PLAIN_GENERIC_VISITS):
        return None      # no child nodes, and nobody asked to see the node itself
    if (walker_class.generic_visit is StatementTransformer.generic_visit
            and not statement_fields(node_class)):
        return None      # a simple statement: no statements inside
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


def walk(tree):
    """The nodes of `ast.walk(tree)`, in its (breadth-first) order, without the
    operator/context leaves, as a list: no generator per node (the full-tree
    searches of conversion walk thousands of nodes each)."""
    nodes = [tree]
    append = nodes.append
    i = 0
    while i < len(nodes):
        node = nodes[i]
        i += 1
        kind = node.__class__
        if kind in CHILDLESS:
            continue
        fields = _node_fields.get(kind) or node_fields(kind)
        for field in fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST) and not isinstance(item, _LEAVES):
                        append(item)
            elif isinstance(value, _AST) and not isinstance(value, _LEAVES):
                append(value)
    return nodes


def child_nodes(node):
    """`ast.iter_child_nodes(node)` as a list, without the operator/context leaves."""
    children = []
    for field in node_fields(node.__class__):
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
        for field in node_fields(node.__class__):
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        self.visit(item)
            elif isinstance(value, _AST):
                self.visit(value)


def statement_fields(node_class):
    """The fields of `node_class` that hold statements (see STATEMENT_FIELDS)."""
    fields = _statement_fields.get(node_class)
    if fields is None:
        fields = _statement_fields[node_class] = tuple(
            f for f in node_class._fields if f in STATEMENT_FIELDS)
    return fields


class NodeTransformer(ast.NodeTransformer):
    """`ast.NodeTransformer`, walking faster (see the module docstring)."""

    visit = _visit

    def generic_visit(self, node, fields=None):
        for field in node_fields(node.__class__) if fields is None else fields:
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


class StatementTransformer(NodeTransformer):
    """A NodeTransformer for converters that rewrite statements only (`if`,
    loops, `raise`, defs): `generic_visit` descends into the statement lists
    alone, never into expressions, which hold no statements and are most
    of a tree.  Visitors of expression kinds are never called."""

    def generic_visit(self, node):
        return NodeTransformer.generic_visit(self, node, statement_fields(type(node)))


_PLAIN_GENERIC_VISITS = (NodeVisitor.generic_visit, NodeTransformer.generic_visit,
                         StatementTransformer.generic_visit)
