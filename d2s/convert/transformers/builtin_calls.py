"""Route the builtins whose meaning depends on tensors through the runtime.

`print(...)` -> `_jst.convert_print(...)`, `assert t, m` ->
`_jst.convert_assert(t, lambda: m)`, `len(x)` -> `_jst.convert_len(x)`,
`x.shape` / `x.size` -> `_jst.convert_shape/size(x)` (unknown dims), `range/enumerate/zip(...)` ->
`_jst.convert_range/enumerate/zip(...)` (so `for` can see tensor bounds
before Python's `range` would reject them), `isinstance(...)` ->
`_jst.convert_isinstance(...)` (a static Variable is a `d2s.Tensor` to user
code), `max/min/any/all(...)` -> `_jst.convert_max/min/any/all(...)` (they
would ask `bool()` of a Variable), `sum(...)` / `reversed(...)` ->
`_jst.convert_sum/reversed(...)` (a list appended in a tensor loop is one
Variable: its rows are added, or walked last first), `bool/int/float(...)` ->
`_jst.convert_bool/int/float(...)` (casts of a static Variable, which has
no Python value while the program is built), `t.numpy()` / `t.item(...)` ->
`_jst.convert_numpy(t)` / `_jst.convert_item(t, ...)` (the same: the value
stands for the array or number, as PaddlePaddle's converter lets
`if x.numpy()[0] > 0` and `x * s.item()` run), `xs[i]` with a computed index
-> `_jst.convert_subscript(xs, i)` (a Python list picked by a tensor, a
loop counter: a list has no item at a Variable), and zero-argument `super()` ->
`super(__class__, self)` (the recompiled function has no implicit class
cell).  A builtin name the user rebinds anywhere in the function is left
alone.
"""
import ast

from .. import templates
from ..traversal import NodeTransformer
from .common import finish

_RENAMED = {
    "print": "convert_print",
    "len": "convert_len",
    "range": "convert_range",
    "enumerate": "convert_enumerate",
    "zip": "convert_zip",
    "isinstance": "convert_isinstance",
    "hasattr": "convert_hasattr",
    "getattr": "convert_getattr",
    "max": "convert_max",
    "min": "convert_min",
    "sum": "convert_sum",
    "reversed": "convert_reversed",
    "any": "convert_any",
    "all": "convert_all",
    "bool": "convert_bool",
    "int": "convert_int",
    "float": "convert_float",
}


# Attributes whose value may be known only when the program runs.
_ATTRIBUTES = {"shape": "convert_shape", "size": "convert_size"}

# Methods asking a tensor for its value: a static Variable's stands for it.
_VALUE_METHODS = {"numpy": "convert_numpy", "item": "convert_item"}


_CONVERSIONS = {-1: "", ord("s"): "s", ord("r"): "r", ord("a"): "a"}


def _fstring_call(node):
    """`f"loss {x.item():.4f}"` printed -> `_jst.convert_fstring(("loss ",
    ("", ".4f")), x.item())`: the runtime formats it now when no tensor of a
    program is in it (the same text), else the print op formats it when the
    program runs, as eager code prints each call. A spec with fields of its
    own (`{x:{width}}`) stays Python's f-string."""
    spec, values = [], []
    for part in node.values:
        if isinstance(part, ast.Constant):
            spec.append(ast.Constant(value=part.value))
            continue
        fmt = ""
        if part.format_spec is not None:
            if not all(isinstance(p, ast.Constant) for p in part.format_spec.values):
                return node
            fmt = "".join(p.value for p in part.format_spec.values)
        spec.append(ast.Tuple(elts=[ast.Constant(value=_CONVERSIONS[part.conversion]),
                                    ast.Constant(value=fmt)], ctx=ast.Load()))
        values.append(part.value)
    call = templates.replace_as_expression("_jst.convert_fstring(spec)",
                                           spec=ast.Tuple(elts=spec, ctx=ast.Load()))
    call.args.extend(values)
    return finish(call, node)


def _is_jst(node, name):
    return (isinstance(node, ast.Attribute) and node.attr == name
            and isinstance(node.value, ast.Name) and node.value.id == "_jst")


def _format_receiver(node):
    """The constant string of `"...".format(...)` (also as call_trees wraps
    it: `_jst.convert_call("...".format)(...)`), or None."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Call) and _is_jst(func.func, "convert_call") and len(func.args) == 1:
        func = func.args[0]   # `_jst.convert_call("...".format)(...)`
    if (isinstance(func, ast.Call) and _is_jst(func.func, "read_attr")
            and len(func.args) >= 2):
        recv, attr = func.args[:2]
        if isinstance(attr, ast.Constant) and attr.value == "format":
            func = ast.Attribute(value=recv, attr="format", ctx=ast.Load())
    if (isinstance(func, ast.Attribute) and func.attr == "format"
            and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)):
        return func.value
    return None


def _text_call(node):
    """A `print` argument formatting text: an f-string, `"..." % v`, or
    `"...".format(...)` of a constant string, routed through the runtime."""
    if isinstance(node, ast.JoinedStr):
        return _fstring_call(node)
    if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        call = templates.replace_as_expression("_jst.convert_percent(fmt, right)",
                                               fmt=node.left, right=node.right)
        return finish(call, node)
    fmt = _format_receiver(node)
    if fmt is not None and not node.keywords and not any(
            isinstance(a, ast.Starred) for a in node.args):
        call = templates.replace_as_expression("_jst.convert_str_format(fmt)", fmt=fmt)
        call.args.extend(node.args)
        return finish(call, node)
    return node


_BINDING = frozenset((ast.arg, ast.FunctionDef, ast.ClassDef, ast.alias))


def _bound_names(user_nodes):
    """Names the user's code binds (generated names, all `__`-prefixed, are
    never builtins' names)."""
    names = set()
    for node in user_nodes:
        kind = node.__class__
        if kind is ast.Name:
            if not isinstance(node.ctx, ast.Load):
                names.add(node.id)
        elif kind not in _BINDING:
            continue
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


class _BuiltinCalls(NodeTransformer):
    def __init__(self, rebound):
        self.rebound = rebound
        self.self_names = []  # first parameter of each enclosing def

    def visit_FunctionDef(self, node):
        args = node.args.posonlyargs + node.args.args
        self.self_names.append(args[0].arg if args else None)
        self.visit_def_parts(node)
        self.self_names.pop()
        return node

    def visit_def_parts(self, node):
        """Convert a def's parts (its decorators, defaults, annotations, body)."""
        self.generic_visit(node)

    def visit_Call(self, node):
        self.generic_visit(node)
        return self.rewrite_call(node)

    def rewrite_call(self, node):
        """The call (its parts converted) with a builtin routed through the runtime."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _VALUE_METHODS:
            return self.rewrite_value_method(node, func)
        if not isinstance(func, ast.Name) or func.id in self.rebound:
            return node
        if func.id in _RENAMED:
            node.func = finish(templates.replace_as_expression(
                "_jst.helper", helper=_RENAMED[func.id]), func)
            if func.id == "print":
                node.args = [_text_call(a) for a in node.args]
        elif (func.id == "super" and not node.args and not node.keywords
              and self.self_names and self.self_names[-1]):
            node.args = finish([ast.Name(id="__class__", ctx=ast.Load()),
                                ast.Name(id=self.self_names[-1], ctx=ast.Load())], func)
        return node

    def rewrite_value_method(self, node, func):
        """`obj.numpy()` / `obj.item(*index)` -> `_jst.convert_numpy(obj)` /
        `_jst.convert_item(obj, *index)`: the runtime calls the method itself
        unless `obj` is a static Variable (whose value does not exist yet)."""
        helper = _VALUE_METHODS[func.attr]
        if helper == "convert_numpy" and (node.args or node.keywords):
            return node
        call = ast.Call(func=templates.replace_as_expression("_jst.helper", helper=helper),
                        args=[func.value] + node.args, keywords=node.keywords)
        return finish(call, node)

    def visit_Attribute(self, node):
        if not isinstance(node.ctx, ast.Load):
            _mark_target_parts(node.value)
        self.generic_visit(node)
        if node.attr in _ATTRIBUTES and isinstance(node.ctx, ast.Load):
            return finish(templates.replace_as_expression(
                f"_jst.{_ATTRIBUTES[node.attr]}(value)", value=node.value), node)
        return node

    def visit_Subscript(self, node):
        if not isinstance(node.ctx, ast.Load):
            _mark_target_parts(node.value)
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and _computed_index(node.slice) \
                and getattr(self, "wrap_calls", True) and not getattr(node, _TARGET_PART, False):
            return finish(templates.replace_as_expression(
                "_jst.convert_subscript(value, index, label)", value=node.value,
                index=node.slice, label=ast.Constant(value=ast.unparse(node.value))), node)
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        if node.msg is None:
            new = templates.replace("_jst.convert_assert(test)", test=node.test)
        else:
            # an f-string message of tensor values is formatted when the assert
            # fails, with that run's values (side_effects.append_assert)
            new = templates.replace("_jst.convert_assert(test, lambda: msg)",
                                    test=node.test, msg=_text_call(node.msg))
        return finish(new, node)


_TARGET_PART = "_d2s_target_part"


def _mark_target_parts(node):
    """The containers of a written target (`caches[i]` of `caches[i]["k"] =
    v`) stay subscripts: the analyses carry such a target through tensor
    constructs by its name-rooted chain (analysis.targets)."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        setattr(node, _TARGET_PART, True)
        node = node.value


def _computed_index(index):
    """An index that may be a tensor (`xs[t]`, `ws[i - 1]`): not a literal, a
    slice or a tuple of them (those index tensors, never pick list items)."""
    if isinstance(index, ast.UnaryOp):
        index = index.operand
    return not isinstance(index, (ast.Constant, ast.Slice, ast.Tuple))


def rebound_names(ctx):
    """The builtin names this function may not route (the user binds them)."""
    return _bound_names(ctx.user_nodes)


def transform(node, ctx):
    return _BuiltinCalls(rebound_names(ctx)).visit(node)
