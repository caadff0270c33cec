"""`x.stop_gradient = flag` -> `x = _jst.set_stop_gradient(x, flag, True)`.

On an eager Tensor the helper sets the flag, as the statement did. On a
static Variable the flag alone changes nothing in the program's gradients
(they follow its ops), so the helper makes the write mean what it means
eagerly: `True` gives the value through a `detach` op, which the name is
rebound to (later uses carry no gradient); `False` on an input of the
traced function marks it so that each call makes the caller's tensor
require a gradient, as the eager statement does. A target that is not a
local name (`self.h.stop_gradient = True`, a global tensor) is not rebound:
the helper gets `False` for `rebind`, sets the flag of an eager Tensor, and
for a static Variable with `True` says what to write instead.
"""
import ast

from .. import templates
from ..analysis.activity import declared_nonlocals, scope_locals
from ..traversal import StatementTransformer
from .common import finish


class _StopGradient(StatementTransformer):
    def __init__(self):
        self.rebindable = []  # per enclosing def: its locals and nonlocal names

    def visit_ClassDef(self, node):
        return node

    def visit_FunctionDef(self, node):
        declared = declared_nonlocals(node)
        self.rebindable.append(scope_locals(node) | declared)
        self.generic_visit(node)
        self.rebindable.pop()
        return node

    def visit_Assign(self, node):
        if len(node.targets) != 1:
            return node
        target = node.targets[0]
        if not (isinstance(target, ast.Attribute) and target.attr == "stop_gradient"):
            return node
        # Only a name the function may bind is rebound: a global or closure
        # tensor (an eager one) keeps the plain attribute write.
        if isinstance(target.value, ast.Name) and self.rebindable \
                and target.value.id in self.rebindable[-1]:
            new = templates.replace("name = _jst.set_stop_gradient(name, flag, True)",
                                    name=target.value.id, flag=node.value)
        else:
            new = templates.replace("_jst.set_stop_gradient(holder, flag, False)",
                                    holder=target.value, flag=node.value)
        return finish(new, node)


def transform(node, ctx):
    if not any(isinstance(n, ast.Attribute) and n.attr == "stop_gradient"
               and isinstance(n.ctx, ast.Store) for n in ctx.user_nodes):
        return node  # the usual function: no walk
    return _StopGradient().visit(node)
