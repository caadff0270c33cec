"""Source positions of converted code: the user's own file lines.

Converted code is compiled from its tree, never printed first, so what a
traceback, a warning or a traced op's origin reads from a frame of it is the
line number its node was compiled with.  Every node is at a line of the
user's file, as pytest's assertion rewriter puts its generated nodes at the
assert they replace:

* the user's own nodes (wherever the converters move them, copies
  included) keep their positions, moved from the parsed text's numbering
  to the file's when their origins are attached
  (`origin.annotate_origins`);
* a generated node gets the line of its origin (the node it replaces) and
  no column (Python then marks no part of the line in a traceback) when
  it gets that origin (`origin.inherit_origin`); templates are
  instantiated without the positions they were parsed with, which mean
  nothing here.

So a generated line is the user's line, and `origin.lookup` reads the
user's text at that line: no line map is built, stored or kept.  No pass
over the converted tree is needed for this; a node some converter left
without a position makes `compile` refuse the tree, and then `place` gives
every such node its origin's line (`loader.compile_function`).
"""
import ast

from .origin import ORIGIN, has_positions
from .traversal import _node_fields, CHILDLESS, LEAVES, node_fields

__all__ = ["place", "missing"]

_AST = ast.AST


def place(tree, line):
    """Give every node of `tree` without a position its origin's line (or
    `line`, the def's, where it has no origin); changed in place."""
    for node in missing(tree):
        origin = node.__dict__.get(ORIGIN)
        at = origin.lineno if origin is not None else line
        node.lineno = node.end_lineno = at
        node.col_offset = node.end_col_offset = -1
    return tree


def missing(tree):
    """The nodes of `tree` that should have a position and have none."""
    found = []
    todo = [tree]
    pop, push = todo.pop, todo.append
    fields_of = _node_fields
    while todo:
        node = pop()
        attrs = node.__dict__
        kind = node.__class__
        if "lineno" not in attrs and has_positions(kind):
            found.append(node)
        if kind in CHILDLESS:
            continue
        for field in fields_of.get(kind) or node_fields(kind):
            value = attrs.get(field)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, _AST) and not isinstance(item, LEAVES):
                        push(item)
            elif isinstance(value, _AST) and not isinstance(value, LEAVES):
                push(value)
    return found
