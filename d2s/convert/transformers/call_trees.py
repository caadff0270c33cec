"""Wrap user calls as `_jst.convert_call(f)(args)` so callees are converted too.

The runtime decides at call time whether `f` is convertible user code;
calls into the runtime itself, generated closures and a few builtins that
never need conversion are left as plain calls (readability and speed).
"""
import ast

from .. import templates
from ..traversal import NodeTransformer
from .common import finish

_PLAIN_BUILTINS = frozenset("""
    isinstance issubclass super type getattr setattr hasattr delattr int float bool
    str list tuple dict set frozenset object slice id hash repr format callable
    iter next min max abs sum sorted reversed round divmod pow any all map filter
    ord chr vars locals globals ValueError TypeError RuntimeError NameError
    KeyError IndexError AssertionError NotImplementedError Exception
""".split())


def _is_plain(func):
    if isinstance(func, ast.Name):
        return func.id in _PLAIN_BUILTINS or func.id.startswith("__") or func.id == "_jst"
    if isinstance(func, ast.Attribute):
        return isinstance(func.value, ast.Name) and func.value.id == "_jst"
    return False


class _CallTrees(NodeTransformer):
    def visit_FunctionDef(self, node):
        # Decorators run once at definition time; only the body is converted.
        node.body = [self.visit(stmt) for stmt in node.body]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        return wrap_call(node)


def wrap_call(node):
    """The call (its parts converted) as `_jst.convert_call(f)(args)`, unless plain."""
    if _is_plain(node.func):
        return node
    node.func = finish(templates.replace_as_expression(
        "_jst.convert_call(func)", func=node.func), node.func)
    return node


def transform(node, ctx):
    return _CallTrees().visit(node)
