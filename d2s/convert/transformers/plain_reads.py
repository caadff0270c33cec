"""Attribute and item loads -> `_jst.read_attr` / `_jst.read_item` (recorded reads).

`self.temperature` -> `_jst.read_attr(self, 'temperature')`,
`self.opts["k"]` -> `_jst.read_item(_jst.read_attr(self, 'opts', 'path'), 'k')`:
the runtime (convert.runtime.reads) records where each value a trace read
came from, so that jit.read_guards can check before each run that the plain
Python values baked into the program are still what the caller holds.

Last in the pipeline: every other converter matches the user's attribute
and subscript nodes (targets carried by tensor constructs, `lst.append`),
and this only wraps loads, whose value it leaves unchanged. A called
attribute (`x.m(...)`) is read with the role "call" (recorded only where it
is `x`'s own attribute: a sublayer, a stored function, never a method), its
receiver `x` as "append" for `.append` / `.extend` (a list the trace only
grows), as a whole value otherwise. A subscript with a slice stays as it
is, its base read as a whole value. The runtime's own calls (`_jst.*`),
the generated names (`__...`) and the definition-time parts of nested
defs (decorators, defaults, annotations) are never wrapped.
"""
import ast

from ..origin import inherit_origin

_GROWS = ("append", "extend")
_CALLEE_ARG = ("convert_call",)  # runtime calls whose first argument is a callee


def transform(node, ctx):
    reads = _Reads()
    node.body = [reads.visit(stmt) for stmt in node.body]
    return node


def _generated(node):
    """A load the converters generated (`_jst.x`, `__vals_0.x`)."""
    return isinstance(node, ast.Name) and (node.id == "_jst" or node.id.startswith("__"))


def _runtime_call(node, names=None):
    func = node.func
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "_jst" and (names is None or func.attr in names))


def _simple_index(index):
    if isinstance(index, ast.Slice):
        return False
    if isinstance(index, ast.Tuple):
        return not any(isinstance(e, (ast.Slice, ast.Starred)) for e in index.elts)
    return True


def _call(helper, node, args):
    new = ast.Call(func=ast.Attribute(value=ast.Name(id="_jst", ctx=ast.Load()), attr=helper,
                                      ctx=ast.Load()), args=args, keywords=[])
    inherit_origin(new, node)
    for part in (new, new.func, new.func.value, *args):
        if "lineno" not in part.__dict__:  # (generated: the load's position)
            ast.copy_location(part, node)
    return new


class _Reads(ast.NodeTransformer):

    def visit_FunctionDef(self, node):
        # the body only: decorators, defaults and annotations run at definition
        # time and are left as written (as call_trees leaves them)
        node.body = [self.visit(stmt) for stmt in node.body]
        return node

    def load(self, node, role):
        """`node` (an expression) with its own load recorded under `role`."""
        kind = node.__class__
        if kind is ast.Attribute and isinstance(node.ctx, ast.Load) \
                and not _generated(node.value):
            base = self.load(node.value, "path")
            args = [base, ast.Constant(node.attr)]
            if role is not None:
                args.append(ast.Constant(role))
            return _call("read_attr", node, args)
        if kind is ast.Subscript and isinstance(node.ctx, ast.Load) \
                and not _generated(node.value):
            if not _simple_index(node.slice):
                node.value = self.load(node.value, None)
                node.slice = self.visit(node.slice)
                return node
            base = self.load(node.value, "path")
            args = [base, self.visit(node.slice)]
            if role is not None:
                args.append(ast.Constant(role))
            return _call("read_item", node, args)
        if kind is ast.Attribute or kind is ast.Subscript:
            return self.generic_visit(node)
        return self.visit(node)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            return self.load(node, None)
        if not _generated(node.value):  # a store's base is read: `self.cfg.t = v`
            node.value = self.load(node.value, "path")
        return node

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load):
            return self.load(node, None)
        if not _generated(node.value):
            node.value = self.load(node.value, "path")
        node.slice = self.visit(node.slice)
        return node

    def visit_Call(self, node):
        func = node.func
        if _runtime_call(node):
            if node.args and func.attr in _CALLEE_ARG:
                node.args[0] = self.callee(node.args[0])
                node.args[1:] = [self.visit(a) for a in node.args[1:]]
            elif node.args and func.attr == "convert_reached_list_call":
                method = node.args[1] if len(node.args) > 1 else None
                grows = isinstance(method, ast.Constant) and method.value in _GROWS
                node.args[0] = self.load(node.args[0], "append" if grows else None)
                node.args[1:] = [self.visit(a) for a in node.args[1:]]
            else:
                node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        node.func = self.callee(func)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node

    def callee(self, node):
        """A called expression: in `x.m(...)`, `x` is read as the receiver of
        `m` ("append" for `.append` / `.extend`), and `x.m` is recorded only
        where it is `x`'s own attribute (a sublayer, a stored function: a
        method is not)."""
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                and not _generated(node.value):
            base = self.load(node.value, "append" if node.attr in _GROWS else None)
            return _call("read_attr", node, [base, ast.Constant(node.attr),
                                             ast.Constant("call")])
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            return self.load(node, "call")
        return self.visit(node)
