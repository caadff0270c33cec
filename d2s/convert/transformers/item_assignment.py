"""`x[i] = v` -> `x = _jst.set_item(x, i, v)` (and `x[i] += v` likewise).

Why: a value of a program is immutable; item assignment on it is the
functional `set_item` op, whose result the name is rebound to. Written as
an assignment to `x`, the analyses that follow see `x` written, so a tensor
`if`/`while` carries `x` like any other name (also with a tensor loop
counter as the index). For anything else (lists, dicts, eager Tensors) the
helper does the plain subscript assignment and returns the same object, so
Python's aliasing holds. Only names the function may bind are rewritten: a
global or closure container keeps the statement (eager Tensors write through
the trace's state overlay; see core.inplace). An attribute root
(`self.buf[i] = v`) becomes `self.buf = _jst.set_item(self.buf, i, v, True)`:
the attribute write is what the state write-back machinery records
(jit.outliving), also inside a tensor `if`/`while`. A nested target
`x[i][j] = v` on a name becomes `x = _jst.set_nested(x, (i, j), v)`: a
tensor's `x[i]` by basic indexing is a view whose write reaches `x`
(core.views), by advanced indexing a copy whose write does not, as eagerly
and in PyTorch; a list's or dict's item is written and stored back; the
rebinding makes the analyses carry `x`. An attribute root keeps the
functional form `self.b = set_item(self.b, i, set_item(self.b[i], j, v, True), True)`.
"""
import ast
import copy

from .. import templates
from ..analysis.activity import declared_nonlocals, scope_locals
from ..traversal import StatementTransformer
from .common import finish


def _index_expr(node):
    """A subscript's index as an expression: `a:b` is `_jst.make_slice(a, b, None)`
    (the builtin, whatever the user's module binds `slice` to)."""
    if isinstance(node, ast.Slice):
        parts = [p if p is not None else ast.Constant(value=None)
                 for p in (node.lower, node.upper, node.step)]
        return templates.replace_as_expression("_jst.make_slice(a, b, c)", a=parts[0],
                                               b=parts[1], c=parts[2])
    if isinstance(node, ast.Tuple):
        return ast.Tuple(elts=[_index_expr(e) for e in node.elts], ctx=ast.Load())
    return node


_CONTAINER_NODES = (ast.List, ast.Dict, ast.ListComp, ast.DictComp, ast.Set, ast.SetComp)


def _python_containers(fn):
    """Names the function binds to a list/dict literal or `list(...)`/`dict(...)`:
    their subscript writes stay statements, which the analyses carry through
    tensor constructs as composite targets (`acc[0] += x`, analysis.targets)."""
    found = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], ast.Name):
            v = n.value
            if isinstance(v, _CONTAINER_NODES) or isinstance(v, ast.Call) and isinstance(
                    v.func, ast.Name) and v.func.id in ("list", "dict"):
                found.add(n.targets[0].id)
    return found


def _root(target):
    while isinstance(target, ast.Subscript):
        target = target.value
    return target


def _is_self_attribute(node):
    """`self.buf` (a name's attribute, one level): written back as an
    attribute (`self.buf = set_item(self.buf, i, v)`), which the analyses
    carry through tensor constructs and the state write-back records."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)


def _store(node):
    node = _load(node)
    node.ctx = ast.Store()
    return node


def _load(node):
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return node


def _rebuilt(target, value, held):
    """The expression of the new root value for `target = value`."""
    container = _load(target.value)
    new = templates.replace_as_expression("_jst.set_item(container, index, value, held)",
                                          container=container,
                                          index=_index_expr(_load(target.slice)),
                                          value=value, held=ast.Constant(value=held))
    if isinstance(target.value, ast.Subscript):
        return _rebuilt(target.value, new, held)
    return new


class _ItemAssignment(StatementTransformer):
    def __init__(self):
        self.rebindable = []

    def visit_ClassDef(self, node):
        return node

    def visit_FunctionDef(self, node):
        self.rebindable.append((scope_locals(node) | declared_nonlocals(node))
                               - _python_containers(node))
        self.generic_visit(node)
        self.rebindable.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _rewritable(self, target):
        if not isinstance(target, ast.Subscript):
            return False
        root = _root(target)
        if _is_self_attribute(root):
            return True
        return isinstance(root, ast.Name) and bool(self.rebindable) \
            and root.id in self.rebindable[-1]

    def _rewrite(self, target, value, node):
        root = _root(target)
        held = not isinstance(root, ast.Name)
        if not held and isinstance(target.value, ast.Subscript):
            # `x[i][j] = v`: a tensor's item by basic index is a view whose write
            # reaches `x` (core.views, static.rebinding), a copy's does not, as
            # eagerly; a list's or dict's item is stored back (_jst.set_nested)
            indices, t = [], target
            while isinstance(t, ast.Subscript):
                indices.insert(0, _index_expr(_load(t.slice)))
                t = t.value
            new = templates.replace_as_expression(
                "_jst.set_nested(root, indices, value)", root=_load(root),
                indices=ast.Tuple(elts=indices, ctx=ast.Load()), value=value)
            return finish([ast.Assign(targets=[_store(root)], value=new)], node)
        new = [ast.Assign(targets=[_store(root)], value=_rebuilt(target, value, held))]
        return finish(new, node)

    def visit_Assign(self, node):
        if len(node.targets) != 1 or not self._rewritable(node.targets[0]):
            return node
        return self._rewrite(node.targets[0], node.value, node)

    def visit_AugAssign(self, node):
        if not self._rewritable(node.target):
            return node
        combined = ast.BinOp(left=_load(node.target), op=node.op, right=node.value)
        return self._rewrite(node.target, combined, node)


def transform(node, ctx):
    if not any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
               for n in ctx.user_nodes):
        return node  # the usual function: no walk
    return _ItemAssignment().visit(node)
