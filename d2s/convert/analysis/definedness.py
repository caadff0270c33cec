"""Definedness (reaching definitions, simplified): which locals are surely bound.

A forward pass over structured statements; annotates DEFINED_IN on each
statement, and on the function: SCOPE_LOCALS, SCOPE_GLOBALS and
MAYBE_UNDEFINED (locals that a converted If/While/For writes but that may be
unbound when it starts; they get an `UndefinedVar` placeholder so the
generated closures can `nonlocal` them and reads can raise a clear NameError).
"""
import ast

from . import annos
from .activity import reads_writes, scope_locals, declared_globals

__all__ = ["annotate_definedness"]

_ALL = None  # the "unreachable" defined set: every name is (vacuously) defined


def _meet(a, b):
    if a is _ALL:
        return b
    if b is _ALL:
        return a
    return a & b


class _Definedness:
    def __init__(self, local_names):
        self.locals = local_names
        self.maybe_undefined = set()

    def block(self, stmts, defined):
        for stmt in stmts:
            if defined is _ALL:
                setattr(stmt, annos.DEFINED_IN, frozenset(self.locals))
                self.stmt(stmt, frozenset(self.locals))
                continue
            setattr(stmt, annos.DEFINED_IN, frozenset(defined))
            defined = self.stmt(stmt, defined)
        return defined

    def _note_construct(self, stmt, defined):
        modified = getattr(stmt, annos.MODIFIED, frozenset()) & self.locals
        self.maybe_undefined |= modified - defined

    def stmt(self, stmt, defined):
        if isinstance(stmt, ast.If):
            self._note_construct(stmt, defined)
            d = defined | (reads_writes(stmt.test)[1] & self.locals)
            return _meet(self.block(stmt.body, d), self.block(stmt.orelse, d))
        if isinstance(stmt, ast.While):
            self._note_construct(stmt, defined)
            d = defined | (reads_writes(stmt.test)[1] & self.locals)
            self.block(stmt.body, d)
            return self.block(stmt.orelse, d)
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._note_construct(stmt, defined)
            d = defined | (reads_writes(stmt.iter)[1] & self.locals)
            self.block(stmt.body, d | (reads_writes(stmt.target)[1] & self.locals))
            return self.block(stmt.orelse, d)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            return self.block(stmt.body, defined | self._with_vars(stmt))
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            body = self.block(stmt.body, defined)
            after = self.block(stmt.orelse, body)
            for handler in stmt.handlers:
                h = self.block(handler.body, defined | ({handler.name} if handler.name else set()))
                if h is not _ALL and handler.name:
                    h = h - {handler.name}
                after = _meet(after, h)
            final = self.block(stmt.finalbody, defined)
            if after is _ALL:
                return _ALL if stmt.handlers or not stmt.finalbody else final
            return after | (final if final is not _ALL else set())
        if isinstance(stmt, ast.Match):
            for case in stmt.cases:
                self.block(case.body, defined | (reads_writes(case.pattern)[1] & self.locals))
            return defined
        if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            return _ALL
        if isinstance(stmt, ast.Delete):
            return defined - reads_writes(stmt)[1]
        return defined | (reads_writes(stmt)[1] & self.locals)

    def _with_vars(self, stmt):
        items = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
        return reads_writes(items)[1] & self.locals if items else set()


def annotate_definedness(fn_node):
    """Annotate DEFINED_IN on statements and the scope facts on `fn_node`."""
    local_names = frozenset(scope_locals(fn_node))
    a = fn_node.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    analysis = _Definedness(local_names)
    analysis.block(fn_node.body, frozenset(params))
    setattr(fn_node, annos.SCOPE_LOCALS, local_names)
    setattr(fn_node, annos.SCOPE_GLOBALS, frozenset(declared_globals(fn_node)))
    setattr(fn_node, annos.MAYBE_UNDEFINED, frozenset(analysis.maybe_undefined))
    return fn_node
