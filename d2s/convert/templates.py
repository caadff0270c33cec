"""Build AST from readable Python templates with named placeholders.

Converters write the code they generate as Python text with placeholder
names, e.g. ``"def fn():\\n    nonlocal names\\n    body"``, and substitute
them here.  This keeps generated code readable in the converter source, and
avoids both hand-built node trees and re-parsing formatted strings (which
would lose the user's nodes, their annotations and their line origins).
Each template text is parsed once per process; every use copies it and
substitutes in the same pass (parsing per construct was a third of
converting `if`/`while`).

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

from .traversal import LEAVES

_AST = ast.AST
_Name = ast.Name

__all__ = ["replace", "replace_as_expression", "name_tuple", "str_tuple"]


_WITH_CTX = (ast.Name, ast.Attribute, ast.Subscript, ast.Starred, ast.Tuple, ast.List)


def _set_ctx(node, ctx):
    """Give a target-like expression (and its elements) the context `ctx`, an
    instance of Load/Store/Del, shared as `ast.parse` shares them."""
    kind = node.__class__
    if kind is ast.Name or kind is ast.Attribute or kind is ast.Subscript:
        node.ctx = ctx
        return node
    if isinstance(node, _WITH_CTX):
        node.ctx = ctx
    if isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            _set_ctx(elt, ctx)
    elif isinstance(node, ast.Starred):
        _set_ctx(node.value, ctx)
    return node


_parsed = {}   # template text -> the recipes of its statements (see _Recipe)
# Where a template's node was in the template's text means nothing in the
# user's code: generated nodes get their origin's line instead (`positions`).
_POSITIONS = frozenset({"lineno", "col_offset", "end_lineno", "end_col_offset"})
_DEFS = (ast.FunctionDef, ast.ClassDef)
_SCOPE_DECLS = (ast.Global, ast.Nonlocal)


class _Recipe:
    """How to copy one parsed template node, worked out once per template.

    `plain`: the attributes copied as they are (identifiers, the shared
    context/operator leaves; not the positions); `nodes`: (field, recipe) of child nodes;
    `lists`: (field, entries) of list fields, an entry a recipe or a value;
    `placeholder`: the name a Name (or an expression statement of a Name)
    would be replaced by.  Copying then touches no attribute twice and asks
    no value what it is (the positions, left out, were most of a node's attributes).
    """
    __slots__ = ("kind", "plain", "nodes", "lists", "placeholder")

    def __init__(self, node):
        self.kind = node.__class__
        self.plain, nodes, lists = {}, [], []
        for key, value in node.__dict__.items():
            if type(value) is list:
                lists.append((key, tuple(
                    _Recipe(item) if isinstance(item, _AST) and not isinstance(item, LEAVES)
                    else item for item in value)))
            elif isinstance(value, _AST) and not isinstance(value, LEAVES):
                nodes.append((key, _Recipe(value)))
            elif key not in _POSITIONS:
                self.plain[key] = value
        self.nodes, self.lists = tuple(nodes), tuple(lists)
        self.placeholder = None
        if self.kind is ast.Name:
            self.placeholder = node.id
        elif self.kind is ast.Expr and node.value.__class__ is ast.Name:
            self.placeholder = node.value.id


def _template_statements(template):
    """The recipes of `template`'s statements, parsed once per process: a
    construct's boilerplate is the same text each time."""
    body = _parsed.get(template)
    if body is None:
        body = _parsed[template] = [
            _Recipe(stmt) for stmt in ast.parse(textwrap.dedent(template)).body]
    return body


def _instantiate(recipe, subs):
    """A fresh copy of a template node with its placeholders substituted.

    One pass both copies (the cached template is never changed) and
    substitutes; a substituted value is inserted as is, never copied or
    descended into.  Returns a node, a list of statements (spliced by the
    caller) or None (the statement is dropped).  Every field is copied;
    the field-less context/operator leaves are shared, as `ast.parse`
    shares them.
    """
    kind = recipe.kind
    name = recipe.placeholder
    if name is not None and name in subs:
        value = subs[name]
        if kind is ast.Name:
            if isinstance(value, str):
                new = _Name.__new__(_Name)   # ast.Name(id=value, ctx=...) without keywords
                new.__dict__.update(id=value, ctx=recipe.plain["ctx"])
                return new
            if isinstance(value, ast.expr):
                return _set_ctx(value, recipe.plain["ctx"])
            raise ValueError(f"placeholder {name!r} used as an expression, got {value!r}")
        if isinstance(value, list):
            return list(value)
        if isinstance(value, ast.stmt):
            return value
    new = kind.__new__(kind)
    attrs = new.__dict__
    attrs.update(recipe.plain)
    for key, child in recipe.nodes:
        value = _instantiate(child, subs)
        if value is not None:
            attrs[key] = value
    for key, entries in recipe.lists:
        items = []
        for entry in entries:
            if entry.__class__ is not _Recipe:
                items.append(entry)
                continue
            out = _instantiate(entry, subs)
            if out is None:
                continue
            if type(out) is list:
                items.extend(out)
            else:
                items.append(out)
        attrs[key] = items
    if kind is ast.Attribute:
        if isinstance(subs.get(new.attr), str):
            new.attr = subs[new.attr]
    elif kind is ast.arg:
        if isinstance(subs.get(new.arg), str):
            new.arg = subs[new.arg]
    elif kind in _SCOPE_DECLS:
        names = []
        for n in new.names:
            value = subs.get(n, n)
            names.extend([value] if isinstance(value, str) else list(value))
        if not names:
            return None
        new.names = names
    elif kind in _DEFS and new.name in subs:
        new.name = subs[new.name]
    if attrs.get("body") == []:
        # A def/if whose body was spliced empty gets `pass`, so the code stays valid.
        new.body.append(ast.Pass())
    return new


def replace(template, **subs):
    """Parse `template` and substitute placeholders; returns a list of statements."""
    stmts = []
    for stmt in _template_statements(template):
        out = _instantiate(stmt, subs)
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
