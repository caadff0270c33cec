"""`x.add_(y)` -> `x = _jst.inplace_call(x.add_, y)`; `d2s.reshape_(x, s)` and
`d2s.assign(x, out)` (`output=out`) likewise rebind `x` / `out` (`out` not a
parameter: a write into the caller's tensor stays the runtime's clear error).

Why: on a program's value an in-place method is functional (core.inplace),
so converted code rebinds the receiver's name to its result, as for item
assignment (transformers.item_assignment); on an eager Tensor the method
returns the Tensor itself, so the rebinding changes nothing. `y = x.add_(1)`
rebinds both. Only names the function may bind are rewritten. The helper
marks the call as rebound: an in-place method on a program's value anywhere
else raises (nothing would rebind it).
"""
import ast

from .. import templates
from ..analysis.activity import declared_nonlocals, scope_locals
from ..traversal import StatementTransformer
from .common import finish

# Paddle's in-place names d2s has (core.inplace.INPLACE_NAMES; the conversion
# side does not import the core, a test checks that both lists agree).
INPLACE_NAMES = ("reshape_", "unsqueeze_", "squeeze_", "flatten_", "scale_", "clip_", "add_",
                 "subtract_", "multiply_", "divide_", "zero_", "fill_", "exp_", "sqrt_",
                 "tanh_")
_NAMES = frozenset(INPLACE_NAMES)


def _marked(call):
    """`f(args)` -> `_jst.inplace_call(f, args)`."""
    new = templates.replace_as_expression("_jst.inplace_call(fn)", fn=call.func)
    new.args.extend(call.args)
    new.keywords.extend(call.keywords)
    return new


class _InplaceMethods(StatementTransformer):
    def __init__(self):
        self.rebindable = []
        self.params = []

    def visit_ClassDef(self, node):
        return node

    def visit_FunctionDef(self, node):
        self.rebindable.append(scope_locals(node) | declared_nonlocals(node))
        args = node.args
        self.params.append({a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
                           | {a.arg for a in (args.vararg, args.kwarg) if a is not None})
        self.generic_visit(node)
        self.rebindable.pop()
        self.params.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _receiver(self, call):
        """The local name an in-place call writes, or None."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and self.rebindable):
            return None
        local = self.rebindable[-1]
        if call.func.attr == "assign":   # `paddle.assign(x, out)` / `assign(x, output=out)`
            out = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "output"), None)
            # Not a parameter: the caller's tensor would not see the write (the
            # runtime's clear error instead of a silent difference).
            return (out.id if isinstance(out, ast.Name) and out.id in local
                    and out.id not in self.params[-1] else None)
        if call.func.attr not in _NAMES:
            return None
        owner = call.func.value
        if isinstance(owner, ast.Name) and owner.id in local:
            return owner.id  # x.add_(y)
        if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in local:
            return call.args[0].id  # d2s.reshape_(x, shape)
        return None

    def visit_Expr(self, node):
        name = self._receiver(node.value)
        if name is None:
            return node
        return finish(templates.replace("name = call", name=name, call=_marked(node.value)),
                      node)

    def visit_Assign(self, node):
        name = self._receiver(node.value)
        if name is None or len(node.targets) != 1:
            return node
        new = templates.replace("name = call", name=name, call=_marked(node.value))
        new += [ast.Assign(targets=node.targets, value=ast.Name(id=name, ctx=ast.Load()))]
        return finish(new, node)


def transform(node, ctx):
    if not any(isinstance(n, ast.Attribute) and (n.attr in _NAMES or n.attr == "assign")
               for n in ctx.user_nodes):
        return node  # the usual function: no walk
    return _InplaceMethods().visit(node)
