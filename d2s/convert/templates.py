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


_parsed = {}   # template text -> its builder (see _Builder)
_DEFS = (ast.FunctionDef, ast.ClassDef)
_SCOPE_DECLS = (ast.Global, ast.Nonlocal)


class _Recipe:
    """How to copy one parsed template node, worked out once per template.

    `plain`: the attributes copied as they are (positions, identifiers, the
    shared context/operator leaves); `nodes`: (field, recipe) of child nodes;
    `lists`: (field, entries) of list fields, an entry a recipe or a value;
    `placeholder`: the name a Name (or an expression statement of a Name)
    would be replaced by.  Copying then touches no attribute twice and asks
    no value what it is (the positions alone are most of a node's attributes).
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
            else:
                self.plain[key] = value
        self.nodes, self.lists = tuple(nodes), tuple(lists)
        self.placeholder = None
        if self.kind is ast.Name:
            self.placeholder = node.id
        elif self.kind is ast.Expr and node.value.__class__ is ast.Name:
            self.placeholder = node.value.id


def _template_builder(template):
    """The builder of `template` (see `_Builder`), made once per process: a
    construct's boilerplate is the same text each time."""
    build = _parsed.get(template)
    if build is None:
        recipes = [_Recipe(stmt) for stmt in ast.parse(textwrap.dedent(template)).body]
        build = _parsed[template] = _Builder(recipes).function()
        build.recipes = recipes    # what it unrolls (tests compare it with _instantiate)
    return build


def _name_value(value, recipe):
    """What a Name placeholder becomes for the substitution `value`."""
    if isinstance(value, str):
        name = _Name.__new__(_Name)   # ast.Name(id=value, ctx=...), without keywords
        name.__dict__.update(id=value, ctx=recipe.plain["ctx"])
        return name
    if isinstance(value, ast.expr):
        return _set_ctx(value, recipe.plain["ctx"])
    raise ValueError(f"placeholder {recipe.placeholder!r} used as an expression, got {value!r}")


def _splice(items, out):
    """Add `_instantiate`'s result to a list field: a node, statements, or nothing."""
    if out is None:
        return
    if type(out) is list:
        items.extend(out)
    else:
        items.append(out)


def _instantiate(recipe, subs):
    """A fresh copy of a template node with its placeholders substituted.

    One pass both copies (the cached template is never changed) and
    substitutes; a substituted value is inserted as is, never copied or
    descended into.  Returns a node, a list of statements (spliced by the
    caller) or None (the statement is dropped).  Every attribute is copied
    (fields and positions alike); the field-less context/operator leaves
    are shared, as `ast.parse` shares them.  `_Builder` writes these very
    steps out as straight-line code (tests compare the two).
    """
    kind = recipe.kind
    name = recipe.placeholder
    if name is not None and name in subs:
        value = subs[name]
        if kind is ast.Name:
            return _name_value(value, recipe)
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
            else:
                _splice(items, _instantiate(entry, subs))
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


def _may_vanish(recipe):
    """Whether `_instantiate` may give this list entry as several nodes or none."""
    return (recipe.kind in _SCOPE_DECLS
            or (recipe.kind is ast.Expr and recipe.placeholder is not None))


_MISSING = object()


class _Builder:
    """Python source for a function doing `_instantiate` of a template's
    statements, unrolled: one straight-line step per template node.

    Instantiating is most of generating a construct's code (tens of nodes
    per if/while), and the generic walk pays a call, a placeholder test and
    a loop over each node's fields per node.  Written out, a node is a
    `__new__`, a dict update and its fields' assignments; the steps that
    depend on the substitutions (a Name placeholder, an attribute or
    parameter name, a def name) test them where the template has them, and
    the entries that may vanish or splice (`_may_vanish`) where they are.
    """

    def __init__(self, recipes):
        self.recipes = recipes
        self.lines = []
        self.constants = {"Pass": ast.Pass, "MISSING": _MISSING, "Statement": ast.stmt,
                          "name_value": _name_value}
        self.count = 0

    def function(self):
        out = self._list(self.recipes)
        source = ("def build(subs):\n    get = subs.get\n"
                  + "".join("    " + line + "\n" for line in self.lines)
                  + f"    return {out}\n")
        namespace = dict(self.constants)
        exec(compile(source, "<d2s template builder>", "exec"), namespace)
        return namespace["build"]

    def _constant(self, value):
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name

    def _var(self):
        self.count += 1
        return f"n{self.count}"

    def _list(self, entries):
        """A variable holding the list field of these entries."""
        var = self._var()
        if not any(entry.__class__ is _Recipe and _may_vanish(entry) for entry in entries):
            parts = [self._node(entry) if entry.__class__ is _Recipe else self._constant(entry)
                     for entry in entries]
            self.lines.append(f"{var} = [{', '.join(parts)}]")
            return var
        self.lines.append(f"{var} = []")
        for entry in entries:
            if entry.__class__ is not _Recipe:
                self.lines.append(f"{var}.append({self._constant(entry)})")
            elif entry.kind in _SCOPE_DECLS:
                self._scope_declaration(entry, var)
            elif _may_vanish(entry):
                self._statement_placeholder(entry, var)
            else:
                self.lines.append(f"{var}.append({self._node(entry)})")
        return var

    def _scope_declaration(self, recipe, items):
        """`nonlocal`/`global` of the substituted names, left out when none."""
        names = self._var()
        (_, declared), = recipe.lists
        kind = self._constant(recipe.kind)
        self.lines += [f"{names} = []",
                       f"for n in {self._constant(declared)}:",
                       "    v = get(n, n)",
                       f"    {names}.append(v) if isinstance(v, str) else {names}.extend(v)",
                       f"if {names}:",
                       f"    v = {kind}.__new__({kind})",
                       f"    v.__dict__.update({self._constant(recipe.plain)})",
                       f"    v.names = {names}",
                       f"    {items}.append(v)"]

    def _statement_placeholder(self, recipe, items):
        """A statement placeholder: statements spliced in, one inserted, or
        (for an expression) the expression statement."""
        value = self._var()
        outer, self.lines = self.lines, []
        node = self._node(recipe)
        copy, self.lines = self.lines, outer
        self.lines += [f"{value} = get({recipe.placeholder!r}, MISSING)",
                       f"if isinstance({value}, list):",
                       f"    {items}.extend({value})",
                       f"elif isinstance({value}, Statement):",
                       f"    {items}.append({value})",
                       "else:"]
        self.lines += ["    " + line for line in copy]
        self.lines.append(f"    {items}.append({node})")

    def _node(self, recipe):
        """A variable holding the copy of `recipe`'s node (never vanishes)."""
        lines = self.lines
        var = self._var()
        kind = self._constant(recipe.kind)
        plain = self._constant(recipe.plain)
        if recipe.kind is ast.Name:
            lines += [f"{var} = get({recipe.placeholder!r}, MISSING)",
                      f"if {var} is MISSING:",
                      f"    {var} = {kind}.__new__({kind})",
                      f"    {var}.__dict__.update({plain})",
                      "else:",
                      f"    {var} = name_value({var}, {self._constant(recipe)})"]
            return var
        fields = [(key, self._node(child)) for key, child in recipe.nodes]
        fields += [(key, self._list(entries)) for key, entries in recipe.lists]
        lines += [f"{var} = {kind}.__new__({kind})", "d = " + var + ".__dict__", f"d.update({plain})"]
        lines += [f"d[{key!r}] = {value}" for key, value in fields]
        for key in ("attr", "arg"):
            if recipe.kind is (ast.Attribute if key == "attr" else ast.arg):
                lines += [f"s = get({recipe.plain[key]!r})",
                          f"if isinstance(s, str): d[{key!r}] = s"]
        if recipe.kind in _DEFS:
            name = recipe.plain["name"]
            lines.append(f"if {name!r} in subs: d['name'] = subs[{name!r}]")
        body = dict(recipe.lists).get("body")
        if body is not None and (not body or any(
                entry.__class__ is _Recipe and _may_vanish(entry) for entry in body)):
            lines.append("if d['body'] == []: d['body'].append(Pass())")
        return var


def replace(template, **subs):
    """Parse `template` and substitute placeholders; returns a list of statements."""
    return _template_builder(template)(subs)


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
