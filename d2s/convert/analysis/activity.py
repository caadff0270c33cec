"""Activity analysis: which names a statement or expression reads and writes.

Nested function and lambda bodies are opaque except for their free reads
(what they read from the enclosing scope); comprehension variables are
local to the comprehension.  This is what liveness and the converters need:
the names a construct may change in *this* scope.
"""
import ast
import contextlib
import threading

from ..traversal import STATEMENT_FIELDS, NodeVisitor, statement_fields
from . import annos

__all__ = ["reads_writes", "memoized", "scope_locals", "free_reads", "modified_names",
           "header_nodes", "scope_nodes", "scope_statements", "child_statements"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _Activity(NodeVisitor):
    def __init__(self):
        self.reads = set()
        self.writes = set()

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.reads.add(node.id)
            effects = getattr(node, annos.CALL_EFFECTS, None)
            if effects is not None:  # a nested function: what calling it reads and writes
                self.reads |= effects[0]
                self.writes |= effects[1]
        else:
            self.writes.add(node.id)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.reads.add(node.target.id)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        # `x: int` without a value binds nothing at run time.
        if node.value is not None:
            self.visit(node.target)
            self.visit(node.value)
        elif not isinstance(node.target, ast.Name):
            self.visit(node.target)

    def _visit_def(self, node):
        self.writes.add(node.name)
        for dec in node.decorator_list:
            self.visit(dec)
        if not isinstance(node, ast.ClassDef):
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
                self.visit(default)
        else:
            for base in node.bases + [k.value for k in node.keywords]:
                self.visit(base)
        self.reads |= free_reads(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_def

    def visit_Lambda(self, node):
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(default)
        self.reads |= free_reads(node)

    def _visit_comp(self, node):
        inner = _Activity()
        for gen in node.generators:
            inner.visit(gen.iter)
            for cond in gen.ifs:
                inner.visit(cond)
        for field in ("elt", "key", "value"):
            if getattr(node, field, None) is not None:
                inner.visit(getattr(node, field))
        targets = set()
        for gen in node.generators:
            t = _Activity()
            t.visit(gen.target)
            targets |= t.writes
        self.reads |= inner.reads - targets
        # The first iterable is evaluated in the enclosing scope.
        self.visit(node.generators[0].iter)
        self.writes |= inner.writes - targets  # walrus in a comprehension

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comp

    def visit_Import(self, node):
        for alias in node.names:
            self.writes.add((alias.asname or alias.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        if node.type is not None:
            self.visit(node.type)
        if node.name and not getattr(node, annos.HANDLER_LOCAL, False):
            self.writes.add(node.name)
        for stmt in node.body:
            self.visit(stmt)

    def visit_MatchAs(self, node):
        if node.name:
            self.writes.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        if node.name:
            self.writes.add(node.name)

    def visit_MatchMapping(self, node):
        if node.rest:
            self.writes.add(node.rest)
        self.generic_visit(node)

    def visit_Global(self, node):
        pass

    visit_Nonlocal = visit_Global


def scope_nodes(nodes):
    """Every node under `nodes` (a list), without entering nested function,
    lambda or class bodies (their defining nodes themselves are included)."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))


_STMT_LISTS = ("body", "orelse", "finalbody")


def child_statements(stmt):
    """The statements directly inside a compound statement (not in nested defs)."""
    if not statement_fields(stmt.__class__) or isinstance(stmt, _SCOPES):
        return []
    children = [s for field in _STMT_LISTS for s in getattr(stmt, field, ())]
    for handler in getattr(stmt, "handlers", ()):
        children += handler.body
    for case in getattr(stmt, "cases", ()):
        children += case.body
    return children


def scope_statements(stmts):
    """Every statement under `stmts`, nested ones included, without entering
    nested function or class bodies (their def statements are included)."""
    todo = list(stmts)
    while todo:
        stmt = todo.pop()
        yield stmt
        todo.extend(child_statements(stmt))


def reads_writes(node_or_nodes):
    """(reads, writes) of a node or list of nodes, at this scope."""
    nodes = node_or_nodes if isinstance(node_or_nodes, list) else [node_or_nodes]
    known = getattr(_memo, "known", None)
    if known is None:
        act = _Activity()
        for node in nodes:
            act.visit(node)
        return act.reads, act.writes
    reads, writes = set(), set()
    for node in nodes:
        node_reads, node_writes = _known_activity(node, known)
        reads |= node_reads
        writes |= node_writes
    return reads, writes


_memo = threading.local()   # .known: {id(node): (node, reads, writes)} while memoized
# Statements holding statements, which _Activity walks with its generic_visit
# (no visitor of their own): their activity is the union of their parts'.
_COMPOUND = tuple(kind for kind in (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With,
                                    ast.AsyncWith, ast.Try, getattr(ast, "TryStar", None),
                                    ast.Match) if kind is not None)
assert not any(hasattr(_Activity, "visit_" + kind.__name__) for kind in _COMPOUND)


@contextlib.contextmanager
def memoized():
    """Within: `reads_writes` finds each node's activity once.

    The analyses ask again for the same nodes (liveness for each loop body
    until its fixpoint, then each enclosing construct for its whole body;
    definedness; the function's locals): memoized, each statement is
    walked once and a compound statement's activity is the union of its
    parts'.  Only while the tree does not change (annotating it is fine,
    except CALL_EFFECTS, which activity reads: annotate those first).
    """
    outer = getattr(_memo, "known", None)
    if outer is None:
        _memo.known = {}
    try:
        yield
    finally:
        if outer is None:
            _memo.known = None


def _known_activity(node, known):
    entry = known.get(id(node))
    if entry is not None and entry[0] is node:
        return entry[1], entry[2]
    act = _Activity()
    reads, writes = act.reads, act.writes
    if isinstance(node, _COMPOUND):
        # As _Activity's generic_visit, with the statement lists' parts memoized.
        for field in node._fields:
            value = getattr(node, field, None)
            if field not in STATEMENT_FIELDS:
                if isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST):
                            act.visit(item)
                elif isinstance(value, ast.AST):
                    act.visit(value)
                continue
            for part in value or ():
                if isinstance(part, ast.ExceptHandler):   # as visit_ExceptHandler
                    if part.type is not None:
                        act.visit(part.type)
                    if part.name and not getattr(part, annos.HANDLER_LOCAL, False):
                        writes.add(part.name)
                    body = part.body
                elif isinstance(part, ast.stmt):
                    body = [part]
                else:                                     # a match case
                    act.visit(part.pattern)
                    if part.guard is not None:
                        act.visit(part.guard)
                    body = part.body
                for stmt in body:
                    stmt_reads, stmt_writes = _known_activity(stmt, known)
                    reads |= stmt_reads
                    writes |= stmt_writes
    else:
        act.visit(node)
    known[id(node)] = (node, frozenset(reads), frozenset(writes))
    return reads, writes


def _declarations(fn_node):
    """{ast.Global: names, ast.Nonlocal: names} declared in the scope, in one walk."""
    found = {ast.Global: set(), ast.Nonlocal: set()}
    if isinstance(fn_node, ast.Lambda):
        return found
    for stmt in scope_statements(fn_node.body):  # declarations are statements
        names = found.get(stmt.__class__)
        if names is not None:
            names.update(stmt.names)
    return found


def declared_globals(fn_node):
    return _declarations(fn_node)[ast.Global]


def declared_nonlocals(fn_node):
    return _declarations(fn_node)[ast.Nonlocal]


def _params(fn_node):
    a = fn_node.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return set(names)


def scope_locals(fn_node):
    """Names local to a function or lambda: params and anything it binds."""
    if isinstance(fn_node, ast.Lambda):
        _, writes = reads_writes(fn_node.body)
        return _params(fn_node) | writes
    if isinstance(fn_node, ast.ClassDef):
        _, writes = reads_writes(fn_node.body)
        return writes
    _, writes = reads_writes(fn_node.body)
    declared = _declarations(fn_node)
    return (_params(fn_node) | writes) - declared[ast.Global] - declared[ast.Nonlocal]


def free_reads(fn_node):
    """Names a function/lambda/class body reads from enclosing scopes."""
    body = fn_node.body
    reads, _ = reads_writes(body if isinstance(body, list) else [body])
    return reads - scope_locals(fn_node)


def modified_names(stmts):
    """Names the statements may assign in this scope."""
    return reads_writes(stmts)[1]


def header_nodes(stmt):
    """The expression parts of a compound statement evaluated at its start."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    return []
