"""Origin map: which user source line each piece of generated code came from.

Every node parsed from the user's function gets `_d2s_origin` (an `Origin`);
generated nodes inherit the origin of the node they replace.  The printer
reports which statement starts on each printed line, so the map from
generated line to Origin is read off that report (no second parse), and every
line in between (a wrapped statement's continuation, an `else:`) takes the
origin of the statement above it.  Errors raised inside generated code are
then rewritten to name the user's file and line.
"""
import ast
import linecache
import re
import sys
import threading
from collections import namedtuple

from .traversal import _node_fields, CHILDLESS, node_fields, walk

_AST = ast.AST

__all__ = ["Origin", "annotate_origins", "inherit_origin", "origin_factory",
           "statement_origins", "dense_line_map", "register_generated", "lookup",
           "rewrite_exception", "user_location"]

Origin = namedtuple("Origin", "filename lineno source_line function_name")

ORIGIN = "_d2s_origin"  # annotation key: the Origin of a node

_registry = {}  # generated filename -> {generated lineno: Origin}
_registry_lock = threading.Lock()


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


def annotate_origins(tree, filename, line_offset, source_lines, function_name, nodes=None):
    """Attach an Origin to every node of the freshly parsed user tree
    (`nodes`: `walk(tree)`, when the caller has it)."""
    origin = origin_factory(filename, line_offset, source_lines, function_name)
    for node in walk(tree) if nodes is None else nodes:
        lineno = getattr(node, "lineno", None)
        if lineno is not None:
            setattr(node, ORIGIN, origin(lineno))


def inherit_origin(nodes, source_node):
    """Give generated `nodes` (and their generated children) `source_node`'s origin.

    Nodes that already have an origin (the user's own nodes moved into the
    generated code) keep theirs, and their subtrees are not touched.
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
    while todo:
        node = pop()
        attrs = node.__dict__
        if ORIGIN in attrs:
            continue
        attrs[ORIGIN] = origin
        kind = node.__class__
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


def statement_origins(statements, shift=0):
    """{printed line + shift: Origin} for the printer's {line: statement node}.

    Statements without an origin (none in converted code today) are left
    out; `dense_line_map` then gives their lines the origin above them.
    """
    found = {}
    for line, node in statements.items():
        origin = getattr(node, ORIGIN, None)
        if origin is not None:
            found[line + shift] = origin
    return found


def dense_line_map(origins, last_line):
    """Every line from the first mapped one to `last_line` -> the Origin at or above it."""
    line_map = {}
    current = None
    for line in range(min(origins, default=last_line + 1), last_line + 1):
        current = origins.get(line, current)
        line_map[line] = current
    return line_map


def register_generated(filename, printed_source, line_map):
    """Remember a generated file: its text (for tracebacks) and its line map,
    or a function making the map, called on the first `lookup` (only errors
    and the origins of traced ops that someone reads ask for it: a function
    loaded from the conversion cache does not build it otherwise)."""
    lines = printed_source.splitlines(True)
    linecache.cache[filename] = (len(printed_source), None, lines, filename)
    with _registry_lock:
        _registry[filename] = line_map


def lookup(filename, lineno):
    """The Origin of a generated line, or None when not generated by us."""
    line_map = _registry.get(filename)
    if line_map is None:
        return None
    if callable(line_map):
        with _registry_lock:
            line_map = _registry[filename]
            if callable(line_map):
                line_map = _registry[filename] = line_map()
    return line_map.get(lineno)


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
