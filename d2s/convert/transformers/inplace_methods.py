"""`x.add_(y)` -> `x = _jst.inplace_call(x.add_, y)`; `d2s.reshape_(x, s)` and
`d2s.assign(x, out)` (`output=out`) likewise rebind `x` / `out` (a parameter
too: a write into the function's input reaches the caller's Tensor after
the run, jit.outliving).

Why: on a program's value an in-place method is functional (core.inplace),
so converted code rebinds the receiver's name to its result, as for item
assignment (transformers.item_assignment); on an eager Tensor the method
returns the Tensor itself, so the rebinding changes nothing. `y = x.add_(1)`
rebinds both; `return x.add_(y)` writes, then returns `x`; a chain
`x.add_(a).multiply_(b)` is one rebinding statement per call; one inside
an expression (`z = x.add_(y) * 2`) is written first when the statement
reads `x` nowhere but in that call (the order Python evaluates it in); `o.t.add_(y)`
rebinds the attribute (`o.t = ...`), which the program records as any
attribute write; `xs[i].add_(y)` rebinds the item of the function's own
list (`_jst.inplace_on_item` otherwise). Only names the function may bind are rewritten. The helper
marks the call as rebound: an in-place method on a program's value anywhere
else raises (nothing would rebind it).
"""
import ast
import copy

from .. import templates
from ..analysis.activity import declared_nonlocals, scope_locals
from ..traversal import StatementTransformer
from .common import finish, replace_node
from .item_assignment import _index_expr, _python_containers

# Paddle's in-place names d2s has (core.inplace.INPLACE_NAMES; the conversion
# side does not import the core, a test checks that both lists agree).
INPLACE_NAMES = ("reshape_", "unsqueeze_", "squeeze_", "flatten_", "scale_", "clip_", "add_",
                 "subtract_", "multiply_", "divide_", "zero_", "fill_", "exp_", "sqrt_",
                 "tanh_", "copy_", "masked_fill_")
# The in-place forms d2s.tensor_methods builds (`x.ceil_()`, `d2s.ceil_(x)`):
# likewise (a test checks this list against d2s.tensor_methods.INPLACE_FORMS).
MORE_INPLACE_NAMES = tuple(name + "_" for name in (
    "ceil", "floor", "round", "trunc", "frac", "reciprocal", "rsqrt", "log", "log2",
    "log10", "log1p", "sigmoid", "abs", "neg", "sin", "cos", "tan", "pow", "remainder",
    "mod", "floor_divide", "floor_mod", "lerp", "erfinv", "logit", "lgamma", "digamma",
    "square", "nan_to_num", "masked_fill", "where", "clip", "cast", "transpose",
    "put_along_axis", "index_add", "index_put", "cumsum", "cumprod", "gcd", "lcm",
    "equal", "not_equal", "greater_than", "greater_equal", "less_than", "less_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not"))
# Paddle's diagonal fills (d2s.tensor_methods.DIAGONAL_FILLS): methods only.
DIAGONAL_FILL_NAMES = ("fill_diagonal_", "fill_diagonal_tensor_")
# Paddle's in-place random fills (d2s.tensor_methods.RANDOM_FILLS).
RANDOM_FILL_NAMES = ("uniform_", "normal_", "exponential_")
# Paddle's in-place activations of `nn.functional` (d2s.nn.activation_inplace,
# a test checks the list): functions only, never methods, so a call through
# any module path (`paddle.nn.functional.relu_(x)`) writes its first argument.
ACTIVATION_INPLACE_NAMES = ("relu_", "elu_", "leaky_relu_", "hardtanh_", "softmax_",
                            "tanh_", "thresholded_relu_")
_NAMES = frozenset(INPLACE_NAMES + MORE_INPLACE_NAMES + RANDOM_FILL_NAMES
                   + ACTIVATION_INPLACE_NAMES + DIAGONAL_FILL_NAMES)
_FUNCTION_ONLY = frozenset(ACTIVATION_INPLACE_NAMES) - frozenset(INPLACE_NAMES)


def _marked(call, helper="inplace_call"):
    """`f(args)` -> `_jst.inplace_call(f, args)`."""
    new = templates.replace_as_expression("_jst.helper(fn)", helper=helper, fn=call.func)
    new.args.extend(call.args)
    new.keywords.extend(call.keywords)
    return new


class _InplaceMethods(StatementTransformer):
    def __init__(self):
        self.rebindable = []
        self.params = []
        self.containers = []   # per def: names bound to a list/dict it creates

    def visit_ClassDef(self, node):
        return node

    def visit_FunctionDef(self, node):
        self.rebindable.append(scope_locals(node) | declared_nonlocals(node))
        args = node.args
        self.params.append({a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
                           | {a.arg for a in (args.vararg, args.kwarg) if a is not None})
        self.containers.append(_python_containers(node))
        self.generic_visit(node)
        self.rebindable.pop()
        self.params.pop()
        self.containers.pop()
        return node

    def _item_receiver(self, node, call):
        """`xs[i].add_(v)` (an item of a local name): the function's own list
        or dict (`xs = [...]`) has the item rebound, a statement the
        analyses carry through tensor constructs like `xs[i] = v`; anything
        else goes through `_jst.inplace_on_item`, which writes a tensor's
        item copy as eager code does (its value unchanged) and refuses a
        list it cannot rebind. Else None."""
        recv = call.func.value
        if not (isinstance(recv, ast.Subscript) and isinstance(recv.value, ast.Name)
                and self.rebindable and recv.value.id in self.rebindable[-1]):
            return None
        if recv.value.id in self.containers[-1]:
            target = copy.deepcopy(recv)
            target.ctx = ast.Store()
            return finish([ast.Assign(targets=[target], value=_marked(call))], node)
        helper = templates.replace_as_expression(
            "_jst.inplace_on_item(container, index, method)", container=recv.value,
            index=_index_expr(recv.slice), method=ast.Constant(call.func.attr))
        helper.args.extend(call.args)
        helper.keywords.extend(call.keywords)
        return finish([ast.Expr(value=helper)], node)

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
            # (a parameter too: a write to the function's input reaches the
            # caller's Tensor after the run, jit.outliving)
            return out.id if isinstance(out, ast.Name) and out.id in local else None
        if call.func.attr not in _NAMES:
            return None
        owner = call.func.value
        if isinstance(owner, ast.Name) and owner.id in local:
            return owner.id  # x.add_(y)
        if (call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in local
                and (isinstance(owner, ast.Name) or (call.func.attr in _FUNCTION_ONLY
                                                     and _dotted(owner)))):
            # d2s.reshape_(x, shape): a module's function (`self.total.add_(x)`
            # writes `self.total`, never its argument)
            return call.args[0].id
        return None

    def _chain(self, call):
        """(`y`, its calls in order) of `y.add_(a).multiply_(b)` on a local
        name `y`: each writes `y` and returns it eagerly, so each is a
        statement rebinding `y`; else None."""
        calls = []
        while (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
               and call.func.attr in _NAMES):
            calls.append(call)
            call = call.func.value
        if len(calls) < 2 or not (isinstance(call, ast.Name) and self.rebindable
                                  and call.id in self.rebindable[-1]):
            return None
        return call.id, [ast.Call(func=ast.Attribute(ast.Name(call.id, ast.Load()),
                                                     c.func.attr, ast.Load()),
                                  args=c.args, keywords=c.keywords) for c in reversed(calls)]

    @staticmethod
    def _attribute_receiver(call):
        """`o.t` of `o.t.add_(v)` (attributes of a name), whose attribute is
        rebound to the result as a local name is (an attribute write the
        program records and replays on a layer or object), or None."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in _NAMES and isinstance(call.func.value, ast.Attribute)):
            return None
        root = call.func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        return call.func.value if isinstance(root, ast.Name) else None

    def _hoisted(self, node, value_field="value"):
        """`z = y.add_(v) * 2` -> `y = _jst.inplace_call(y.add_, v)` then
        `z = y * 2`: one in-place call on a local name inside the statement's
        expression, the name read nowhere else in the statement but in that
        call (which reads it before writing), so the write first is the order
        Python evaluates it in; outside lambdas, comprehensions, conditional
        expressions and `and`/`or`. Else None."""
        value = getattr(node, value_field, None)
        if value is None:
            return None
        found, reads = [], 0
        for sub in ast.walk(value):
            if isinstance(sub, (ast.Lambda, ast.IfExp, ast.BoolOp) + _SCOPES):
                return None   # (parts Python may run later, or not at all)
            if isinstance(sub, ast.Call) and self._receiver(sub) is not None \
                    and isinstance(sub.func.value, ast.Name):
                found.append(sub)
        if len(found) != 1:
            return None
        call = found[0]
        name = self._receiver(call)   # (`d2s.reshape_(x, s)` writes x, not d2s)
        inside = {id(sub) for sub in ast.walk(call)}   # read before the write
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id == name and id(sub) not in inside:
                reads += 1
        if reads:
            return None
        new = templates.replace("name = call", name=name, call=_marked(call))
        replace_node(node, call, ast.Name(id=name, ctx=ast.Load()))
        return finish(new, node) + [node]

    def visit_Expr(self, node):
        name = self._receiver(node.value)
        if name is not None:
            return finish(templates.replace("name = call", name=name,
                                            call=_marked(node.value)), node)
        chain = self._chain(node.value)
        if chain is not None:
            name, calls = chain
            new = []
            for call in calls:
                new += templates.replace("name = call", name=name, call=_marked(call))
            return finish(new, node)
        target = self._attribute_receiver(node.value)
        if target is not None:
            assign = ast.Assign(targets=[copy.deepcopy(target)],
                                value=_marked(node.value, "inplace_call_held"))
            assign.targets[0].ctx = ast.Store()
            return finish([assign], node)
        if (isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr in _NAMES):
            item = self._item_receiver(node, node.value)
            if item is not None:
                return item
        return self._hoisted(node) or node

    def visit_Return(self, node):
        name = self._receiver(node.value)
        if name is None:
            return self._hoisted(node) or node
        # `return y.add_(v)`: the write, then `return y` (eagerly the same
        # Tensor the method returns)
        new = templates.replace("name = call", name=name, call=_marked(node.value))
        new.append(ast.Return(value=ast.Name(id=name, ctx=ast.Load())))
        return finish(new, node)

    def visit_Assign(self, node):
        name = self._receiver(node.value)
        if name is None:
            return self._hoisted(node) or node
        if len(node.targets) != 1:
            return node
        new = templates.replace("name = call", name=name, call=_marked(node.value))
        new += [ast.Assign(targets=node.targets, value=ast.Name(id=name, ctx=ast.Load()))]
        return finish(new, node)


def _dotted(node):
    """Whether `node` is a module path `a.b.c` (names and attributes only)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.FunctionDef)


def transform(node, ctx):
    if not any(isinstance(n, ast.Attribute) and (n.attr in _NAMES or n.attr == "assign")
               for n in ctx.user_nodes):
        return node  # the usual function: no walk
    return _InplaceMethods().visit(node)
