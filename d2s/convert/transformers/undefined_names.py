"""Bind possibly-unassigned locals to `UndefinedVar`; guard their reads with `ld`.

Converted constructs need every name they write bound beforehand (their
closures declare it `nonlocal`), so each local that some construct writes
while it may still be unassigned starts as `_jst.UndefinedVar('x')` at the
top of the function (once: a later re-initialization would clobber a value
assigned by an earlier iteration or branch).  Reads that analysis cannot
prove bound become `_jst.ld(x)`, which keeps Python's behaviour: reading a
name no path assigned raises UnboundLocalError (a NameError) naming it.
"""
import ast

from .. import templates
from ..origin import inherit_origin
from ..analysis import annos
from ..traversal import NodeTransformer
from .common import finish, undefined_inits, user_functions


class _LdWrapper(NodeTransformer):
    def __init__(self, names):
        self.names = set(names)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            call = ast.copy_location(templates.replace_as_expression(
                "_jst.ld(name)", name=node.id), node)
            return inherit_origin(call, node)
        return node

    def _shadowed(self, node, bound):
        saved = self.names
        self.names = saved - bound
        self.generic_visit(node)
        self.names = saved
        return node

    def visit_Lambda(self, node):
        a = node.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        params |= {x.arg for x in (a.vararg, a.kwarg) if x}
        return self._shadowed(node, params)

    def _visit_comp(self, node):
        targets = {n.id for g in node.generators for n in ast.walk(g.target)
                   if isinstance(n, ast.Name)}
        return self._shadowed(node, targets)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comp

    def visit_FunctionDef(self, node):
        return node  # its own scope, converted separately

    visit_ClassDef = visit_AsyncFunctionDef = visit_FunctionDef


_HEADERS = {ast.If: ("test",), ast.While: ("test",), ast.For: ("iter",),
            ast.Match: ("subject",)}
_BODIES = ("body", "orelse", "finalbody")


def _wrap_block(stmts, maybe_undefined):
    for stmt in stmts:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            continue
        unsure = maybe_undefined - getattr(stmt, annos.DEFINED_IN, frozenset())
        wrapper = _LdWrapper(unsure)
        compound = False
        for kind, fields in _HEADERS.items():
            if isinstance(stmt, kind):
                compound = True
                for field in fields:
                    setattr(stmt, field, wrapper.visit(getattr(stmt, field)))
        if isinstance(stmt, ast.With):
            compound = True
            for item in stmt.items:
                item.context_expr = wrapper.visit(item.context_expr)
        if isinstance(stmt, ast.Try):
            compound = True
            for handler in stmt.handlers:
                _wrap_block(handler.body, maybe_undefined)
        if isinstance(stmt, ast.Match):
            for case in stmt.cases:
                _wrap_block(case.body, maybe_undefined)
        if compound:
            for field in _BODIES:
                _wrap_block(getattr(stmt, field, []) or [], maybe_undefined)
        elif unsure:
            wrapper.visit(stmt)


def transform(node, ctx):
    for fn in user_functions(node):
        maybe = getattr(fn, annos.MAYBE_UNDEFINED, frozenset())
        if maybe:
            _wrap_block(fn.body, set(maybe))
            fn.body = finish(undefined_inits(maybe), fn) + fn.body
    return node
