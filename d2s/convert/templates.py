"""Build AST from readable Python templates with named placeholders.

Converters write the code they generate as Python text with placeholder
names, e.g. ``"def fn():\\n    nonlocal names\\n    body"``, and substitute
them here.  This keeps generated code readable in the converter source, and
avoids both hand-built node trees and re-parsing formatted strings (which
would lose the user's nodes, their annotations and their line origins).

Substitution values:
  * ``str``            -> an identifier (a Name, a def name, an argument
                         name, or an attribute name as in ``_jst.helper``)
  * ``ast.expr``       -> inserted as is, its ``ctx`` adapted to the use site
  * list of ``ast.stmt`` (for a placeholder used as a statement) -> spliced in
  * list of ``str``    -> for ``nonlocal``/``global`` placeholders: the names;
                         an empty list removes the statement
"""
import ast
import textwrap

from .traversal import LEAVES, NodeTransformer

_AST = ast.AST

__all__ = ["replace", "replace_as_expression", "name_tuple", "str_tuple"]


def _set_ctx(node, ctx):
    """Give a target-like expression (and its elements) the given context."""
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred,
                         ast.Tuple, ast.List)):
        node.ctx = ctx()
    if isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            _set_ctx(elt, ctx)
    elif isinstance(node, ast.Starred):
        _set_ctx(node.value, ctx)
    return node


class _Replacer(NodeTransformer):
    """Substitutes placeholders; it walks the template's own nodes only (a
    substituted value is returned as is, never descended into)."""

    def __init__(self, subs):
        self.subs = subs

    def generic_visit(self, node):
        super().generic_visit(node)
        if getattr(node, "body", None) == []:
            # A def/if whose body was spliced empty gets `pass`, so the code stays valid.
            node.body.append(ast.Pass())
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(self.subs.get(node.attr), str):
            node.attr = self.subs[node.attr]
        return node

    def visit_Name(self, node):
        if node.id not in self.subs:
            return node
        value = self.subs[node.id]
        if isinstance(value, str):
            return ast.Name(id=value, ctx=node.ctx)
        if isinstance(value, ast.expr):
            return _set_ctx(value, type(node.ctx))
        raise ValueError(f"placeholder {node.id!r} used as an expression, got {value!r}")

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.subs:
            value = self.subs[node.value.id]
            if isinstance(value, list):
                return [s for s in value]
            if isinstance(value, ast.stmt):
                return value
        self.generic_visit(node)
        return node

    def _visit_def(self, node):
        if node.name in self.subs:
            node.name = self.subs[node.name]
        self.generic_visit(node)
        return node

    visit_FunctionDef = _visit_def
    visit_ClassDef = _visit_def

    def visit_arg(self, node):
        if node.arg in self.subs and isinstance(self.subs[node.arg], str):
            node.arg = self.subs[node.arg]
        return node

    def _visit_scope_decl(self, node):
        names = []
        for n in node.names:
            value = self.subs.get(n, n)
            names.extend([value] if isinstance(value, str) else list(value))
        if not names:
            return None
        node.names = names
        return node

    visit_Nonlocal = _visit_scope_decl
    visit_Global = _visit_scope_decl


_parsed = {}   # template text -> its parsed statements (never handed out: cloned per use)


def _clone(node):
    """A deep copy of a template node, far cheaper than `copy.deepcopy`.

    Copies every attribute (fields and positions alike); the field-less
    context/operator leaves are shared, as `ast.parse` shares them.
    """
    new = node.__class__.__new__(node.__class__)
    attrs = new.__dict__
    for key, value in node.__dict__.items():
        if type(value) is list:
            value = [_clone(item) if isinstance(item, _AST) else item for item in value]
        elif isinstance(value, _AST) and not isinstance(value, LEAVES):
            value = _clone(value)
        attrs[key] = value
    return new


def _statements(template):
    """Fresh statements of `template`: parsed once per process, then cloned
    (a construct's boilerplate is parsed once, not once per construct)."""
    body = _parsed.get(template)
    if body is None:
        body = _parsed[template] = ast.parse(textwrap.dedent(template)).body
    return [_clone(stmt) for stmt in body]


def replace(template, **subs):
    """Parse `template` and substitute placeholders; returns a list of statements."""
    stmts = []
    replacer = _Replacer(subs)
    for stmt in _statements(template):
        out = replacer.visit(stmt)
        if out is None:
            continue
        stmts.extend(out if isinstance(out, list) else [out])
    return stmts


def replace_as_expression(template, **subs):
    """Like `replace` for a single-expression template; returns the expression."""
    stmts = replace(template, **subs)
    if len(stmts) != 1 or not isinstance(stmts[0], ast.Expr):
        raise ValueError(f"template is not a single expression: {template!r}")
    return stmts[0].value


def name_tuple(names, ctx=ast.Load):
    """`(a, b)` as an expression (or target with ctx=ast.Store)."""
    return ast.Tuple(elts=[ast.Name(id=n, ctx=ctx()) for n in names], ctx=ctx())


def str_tuple(names):
    """`('a', 'b')`: the names as string constants, for the runtime's messages."""
    return ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load())
