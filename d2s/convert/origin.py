"""Origin map: which user source line each piece of generated code came from.

Every node parsed from the user's function gets `_d2s_origin` (an `Origin`);
generated nodes inherit the origin of the node they replace.  Converted code
is compiled from the tree with each node at its origin's line of the user's
file (`positions`), so a line of generated code *is* a line of the user's
file: the line map is the user's text, read when an error or a traced op's
origin asks for a line.  Errors raised inside generated code are then
rewritten to name the user's file and line.
"""
import ast
import linecache
import re
import sys
from collections import namedtuple

from .traversal import _node_fields, CHILDLESS, node_fields, walk

_AST = ast.AST

__all__ = ["Origin", "annotate_origins", "inherit_origin", "origin_factory",
           "register_generated", "lookup",
           "rewrite_exception", "user_location"]

Origin = namedtuple("Origin", "filename lineno source_line function_name")

ORIGIN = "_d2s_origin"  # annotation key: the Origin of a node

_positioned = {}   # node class -> whether it has (line, column) positions


def has_positions(kind):
    """Whether nodes of class `kind` have (line, column) positions."""
    found = _positioned.get(kind)
    if found is None:
        found = _positioned[kind] = "lineno" in kind._attributes
    return found


# generated filename -> (line offset, line count, origin(line of the text))
_registry = {}


def origin_factory(filename, line_offset, source_lines, function_name):
    """`origin(lineno)`: the Origin of a line of the parsed text, one object per line.

    `line_offset` converts the parsed text's line numbers to the file's;
    `source_lines` are the parsed text's lines (for the source text shown).
    """
    made = {}

    def origin(lineno):
        found = made.get(lineno)
        if found is None:
            text = source_lines[lineno - 1] if 0 < lineno <= len(source_lines) else ""
            found = made[lineno] = Origin(filename, lineno + line_offset, text.strip(),
                                          function_name)
        return found
    return origin


def annotate_origins(tree, filename, line_offset, source_lines, function_name, nodes=None,
                     col_shift=0):
    """Attach an Origin to every node of the freshly parsed user tree
    (`nodes`: `walk(tree)`, when the caller has it), and move its position
    to the file's: the converted tree is compiled as it stands, at the
    user's lines (`positions`).  `col_shift`: how far left of the file's the
    parsed text's columns are (it was dedented)."""
    origin = origin_factory(filename, line_offset, source_lines, function_name)
    for node in walk(tree) if nodes is None else nodes:
        attrs = node.__dict__
        lineno = attrs.get("lineno")
        if lineno is not None:
            attrs[ORIGIN] = origin(lineno)
            attrs["lineno"] = lineno + line_offset
            end = attrs.get("end_lineno")
            attrs["end_lineno"] = lineno + line_offset if end is None else end + line_offset
            if col_shift and attrs.get("end_col_offset") is not None:
                attrs["col_offset"] += col_shift
                attrs["end_col_offset"] += col_shift


def inherit_origin(nodes, source_node):
    """Give generated `nodes` (and their generated children) `source_node`'s origin.

    Nodes that already have an origin (the user's own nodes moved into the
    generated code) keep theirs, and their subtrees are not touched.  A
    generated node without a position gets its origin's line and no column
    (the converted tree is compiled as it stands: see `positions`).
    """
    origin = getattr(source_node, ORIGIN, None)
    if origin is None:
        return nodes
    # Every generated statement of every construct comes here: the walk is
    # `child_nodes` inline, over each node's own attribute dict and only the
    # fields that may hold nodes (`node_fields`: never the contexts and
    # operators, shared leaves that must not be annotated, so no item needs
    # testing for one).
    todo = list(nodes) if isinstance(nodes, list) else [nodes]
    pop, push = todo.pop, todo.append
    fields_of = _node_fields
    positioned = _positioned
    line = origin.lineno
    while todo:
        node = pop()
        attrs = node.__dict__
        if ORIGIN in attrs:
            continue
        attrs[ORIGIN] = origin
        kind = node.__class__
        if "lineno" not in attrs and (positioned.get(kind) or has_positions(kind)):
            attrs["lineno"] = attrs["end_lineno"] = line
            attrs["col_offset"] = attrs["end_col_offset"] = -1
        if kind in CHILDLESS:     # names and constants: half the nodes
            continue
        for field in fields_of.get(kind) or node_fields(kind):
            value = attrs.get(field)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, _AST):
                        push(item)
            elif isinstance(value, _AST):
                push(value)
    return nodes


def register_generated(filename, source, function_name):
    """Remember a generated file: its code's line numbers are those of the
    user's file (`positions`), so its line map is the user's text itself.

    `source`: the FunctionSource converted (file name, first line, lines).
    The generated name's linecache entry holds the user's lines at their
    own numbers, so a traceback frame of converted code (D2S_FULL_TRACEBACK)
    shows the user's line."""
    offset = source.start - 1
    lines = source.lines
    linecache.cache[filename] = (0, None, [""] * offset + list(lines), filename)
    _registry[filename] = (offset, len(lines), origin_factory(
        source.filename, offset, lines, function_name))


def lookup(filename, lineno):
    """The Origin of a generated line, or None when not generated by us."""
    entry = _registry.get(filename)
    if entry is None or lineno is None:
        return None
    offset, count, origin = entry
    line = lineno - offset
    return origin(line) if 0 < line <= count else None


def is_generated_filename(filename):
    return filename in _registry


def user_location(tb):
    """The Origin of the innermost traceback frame that runs generated code."""
    found = None
    while tb is not None:
        origin = lookup(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        if origin is not None:
            found = origin
        tb = tb.tb_next
    return found


def format_origin(origin):
    text = f'\n  File "{origin.filename}", line {origin.lineno}, in {origin.function_name}'
    if origin.source_line:
        text += f"\n    {origin.source_line}"
    return text


_NUMPY_CALL = re.compile(r"\b(?:np|numpy)\.(\w+)\s*\(")


def _fix_hint(exc, origin):
    """What to write instead, for errors whose fix the line shows: a numpy
    function given a traced tensor (numpy has no value to compute with) is
    the d2s op of the same name."""
    if isinstance(exc, TypeError) and "does not support ufuncs" in str(exc):
        names = _NUMPY_CALL.findall(origin.source_line or "")
        d2s = sys.modules.get("d2s")  # (imported: converted code is running)
        ours = [n for n in names if callable(getattr(d2s, n, None))]
        if ours:
            return (f"; numpy functions cannot compute with a tensor of a converted function: "
                    f"use d2s.{ours[0]}(...) instead of np.{ours[0]}(...)")
        return ("; numpy functions cannot compute with a tensor of a converted function: use "
                "the d2s op of the same math (d2s.tanh, d2s.exp, ...) or the tensor's method")
    if isinstance(exc, ValueError) and "is ambiguous; only one-element tensors" in str(exc):
        return ("; a condition on a tensor needs one element: reduce it, e.g. (x > 0).all(), "
                "(x > 0).any() or x.sum() > 0")
    if isinstance(exc, TypeError) and "does not support item assignment" in str(exc) \
            and ("'Variable'" in str(exc) or "'Tensor'" in str(exc)):
        return ("; a tensor is not changed in place: build the new value instead, e.g. "
                "y = d2s.where(mask, value, y) or y = d2s.concat([new_rows, y[k:]])")
    return ""


def rewrite_exception(exc, tb=None):
    """Return an exception of the same type whose message names the user's line.

    The location is that of the innermost generated frame in `tb` (default:
    `exc.__traceback__`).  If the same type cannot be rebuilt with a longer
    message, the location is added as a note to `exc` itself.  Exceptions
    not raised from generated code, or already rewritten, are returned as is.
    """
    tb = tb if tb is not None else exc.__traceback__
    if getattr(exc, "_d2s_rewritten", False):
        return exc
    origin = user_location(tb)
    if origin is None:
        return exc
    location = _fix_hint(exc, origin) + format_origin(origin)
    new_exc = None
    if len(exc.args) <= 1 and not isinstance(exc, (KeyError, SyntaxError, OSError)):
        message = str(exc.args[0]) if exc.args else ""
        try:
            new_exc = type(exc)(message + location)
        except Exception:
            new_exc = None
        if new_exc is not None and str(new_exc) != message + location:
            new_exc = None
    if new_exc is None:
        if hasattr(exc, "add_note"):
            exc.add_note(location.lstrip("\n"))
        else:  # pragma: no cover - Python < 3.11
            exc.args = tuple(exc.args) + (location,)
        exc._d2s_rewritten = True
        return exc
    new_exc.__dict__.update({k: v for k, v in exc.__dict__.items()
                             if k != "__notes__"})
    for note in getattr(exc, "__notes__", ()):
        new_exc.add_note(note)
    new_exc.__cause__ = exc.__cause__
    new_exc.__context__ = exc.__context__
    new_exc.__suppress_context__ = exc.__suppress_context__
    new_exc._d2s_rewritten = True
    return new_exc.with_traceback(tb)
