"""Writes to names declared `global`, inside converted `if`s and loops.

The control-flow converters move a construct's body into closures, where an
assignment to a name the user declared `global` would bind a local of the
closure instead. Each generated closure that assigns such a name declares it
`global` itself, so a construct whose test is a Python value (`if FLAG:`,
`for i in range(3)`) writes the module global exactly as the original code.
A construct on a tensor cannot: both branches are traced, a loop body once,
and the global would receive a build-time value. Its runtime call lists the
globals as `uncarried`, which the runtime turns into a clear error naming
the global and the line when the test is a tensor.
"""
import ast

from ..analysis import annos
from ..analysis.activity import declared_globals
from ..traversal import statement_fields
from .common import SCOPE_NODES, _line_of, user_functions, walk_scope

_CONSTRUCTS = frozenset(("convert_ifelse", "convert_while_loop", "convert_for"))


def transform(node, ctx):
    for fn in user_functions(node):
        globals_ = declared_globals(fn)
        if globals_:
            _scan(fn.body, frozenset(globals_))
    return node


def _scan(stmts, globals_):
    """Globals assigned under `stmts` (generated closures included), in order:
    declares them in each generated closure that assigns them, and lists them
    in the runtime call of each construct whose closures do (a construct's
    closures are defined just before its call; a later construct may reuse
    their names)."""
    written, closures = set(), {}
    for stmt in stmts:
        if isinstance(stmt, ast.FunctionDef) and getattr(stmt, annos.GENERATED, False):
            inner = _scan(stmt.body, globals_)
            own = {n.id for n in walk_scope(stmt.body, stop=SCOPE_NODES)
                   if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                   and n.id in globals_}
            if own:
                stmt.body.insert(0, ast.Global(names=sorted(own)))
            closures[stmt.name] = inner
            written |= inner
            continue
        if isinstance(stmt, SCOPE_NODES):
            continue  # a user's nested def or class: its own scope
        fields = [getattr(stmt, f, None) for f in statement_fields(stmt.__class__)]
        lists = [f for f in fields if isinstance(f, list) and f]
        if lists:  # a compound statement left as Python (with, try, match)
            for part in lists:
                if isinstance(part[0], ast.stmt):
                    written |= _scan(part, globals_)
                else:  # except handlers, match cases
                    for holder in part:
                        written |= _scan(getattr(holder, "body", []), globals_)
        for node in walk_scope(_header(stmt, lists), stop=SCOPE_NODES + (ast.stmt,)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) \
                    and node.id in globals_:
                written.add(node.id)
            elif isinstance(node, ast.Call) and _is_construct_call(node):
                names = set()
                for arg in node.args:
                    if isinstance(arg, ast.Name):
                        names |= closures.get(arg.id, set())
                if names:
                    _add_uncarried(node, sorted(names))
    return written


def _header(stmt, lists):
    """The parts of `stmt` outside its statement lists (all of a simple one)."""
    if not lists:
        return list(ast.iter_child_nodes(stmt))
    inside = {id(x) for part in lists for x in part}
    return [c for c in ast.iter_child_nodes(stmt) if id(c) not in inside]


def _is_construct_call(call):
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in _CONSTRUCTS
            and isinstance(func.value, ast.Name) and func.value.id == "_jst")


def _add_uncarried(call, names):
    line = _line_of(call) if hasattr(call, "lineno") or hasattr(call, "_d2s_origin") else 0
    entries = [ast.Tuple(elts=[ast.Constant(value=f"global {n}"), ast.Constant(value=line)],
                         ctx=ast.Load()) for n in names]
    for kw in call.keywords:
        if kw.arg == "uncarried":
            kw.value.elts.extend(entries)
            return
    call.keywords.append(ast.keyword(arg="uncarried",
                                     value=ast.Tuple(elts=entries, ctx=ast.Load())))
