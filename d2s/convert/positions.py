"""Source positions of converted code: the user's own file lines.

Converted code is compiled from its tree, never printed first, so what a
traceback, a warning or a traced op's origin reads from a frame of it is the
line number its node was compiled with.  `place` gives every node that line
of the user's file, as pytest's assertion rewriter gives its generated nodes
the position of the assert they replace:

* the user's own nodes (parsed from the function's text, wherever the
  converters moved them) keep their positions, moved from the parsed
  text's numbering to the file's (its first line, its dedent);
* a generated node takes the line of its origin (`origin.ORIGIN`: the node
  it replaces), or where it has none its parent's line, at column 0 (the
  positions a template was parsed with mean nothing here).

So a generated line is the user's line, and `origin.lookup` reads the
user's text at that line: no line map is built, stored or kept.
"""
import ast

from .origin import ORIGIN
from .traversal import _node_fields, CHILDLESS, LEAVES, node_fields

__all__ = ["place"]

_AST = ast.AST
_positioned = {}   # node class -> whether it has (line, column) positions


def _has_positions(kind):
    found = _positioned.get(kind)
    if found is None:
        found = _positioned[kind] = "lineno" in kind._attributes
    return found


def place(tree, line, user_nodes, line_offset, col_shift):
    """Set the positions of every node of `tree` (changed in place).

    `line`: the file line of nodes with no origin above them (the def's);
    `user_nodes`: the nodes as parsed (their positions count lines of the
    parsed text, which begins at file line `line_offset + 1`, and columns
    of that text, dedented by `col_shift` from the file's).
    """
    user = set(map(id, user_nodes))
    todo = [(tree, line)]
    pop, push = todo.pop, todo.append
    fields_of = _node_fields
    positioned = _positioned
    while todo:
        node, line = pop()
        attrs = node.__dict__
        kind = node.__class__
        has = positioned.get(kind)
        if has is None:
            has = _has_positions(kind)
        key = id(node)
        if key in user:
            # once: a node the converters placed twice is not moved twice
            user.discard(key)
            if has:
                line = attrs["lineno"] = attrs["lineno"] + line_offset
                attrs["end_lineno"] += line_offset
                if col_shift:
                    attrs["col_offset"] += col_shift
                    attrs["end_col_offset"] += col_shift
        else:
            origin = attrs.get(ORIGIN)
            if origin is not None:
                line = origin.lineno
            if has:
                attrs["lineno"] = attrs["end_lineno"] = line
                attrs["col_offset"] = attrs["end_col_offset"] = -1
        if kind in CHILDLESS:
            continue
        for field in fields_of.get(kind) or node_fields(kind):
            value = attrs.get(field)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, _AST) and not isinstance(item, LEAVES):
                        push((item, line))
            elif isinstance(value, _AST) and not isinstance(value, LEAVES):
                push((value, line))
    return tree
