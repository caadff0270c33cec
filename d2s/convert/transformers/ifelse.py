"""`if`/`elif`/`else` -> branch closures + `_jst.convert_ifelse(...)`.

State (names either branch may assign) is shared through `nonlocal`;
outputs are the state names live after the `if` (see analysis.annos).
Outputs a branch appends to (`lst = _jst.convert_list_append(lst, v)`, from
list_append) are named in `lists=(...)`: the runtime keeps the list both
branches start from unchanged and carries the appends as a tensor array.
"""
import ast

from ..traversal import walk

from .. import templates
from ..analysis import annos
from .common import (AFTER_EXIT, ScopedTransformer, construct_state, construct_targets,
                     finish, mark_generated, state_functions, with_roles)

_TEMPLATE = """
def true_fn():
    nonlocal state
    body
def false_fn():
    nonlocal state
    orelse
state_functions
_jst.convert_ifelse(test, true_fn, false_fn, get_state, set_state, state_names, out_names)
"""


class _IfConverter(ScopedTransformer):
    def visit_If(self, node):
        self.generic_visit(node)
        state = construct_state(node, self.scope)
        carried, uncarried, labels = construct_targets(node)
        live_out = getattr(node, annos.LIVE_OUT)
        # Targets live in containers others may read: always outputs.
        outs = [n for n in state if n in live_out] + labels
        namer = self.ctx.namer
        true_fn, false_fn = namer.new("true_fn"), namer.new("false_fn")
        get_state, set_state = namer.new("get_state"), namer.new("set_state")
        stmts = templates.replace(
            _TEMPLATE, true_fn=true_fn, false_fn=false_fn, state=list(state),
            body=node.body, orelse=node.orelse or [ast.Pass()],
            state_functions=state_functions(get_state, set_state, namer.new("vals"), state,
                                            carried),
            test=node.test, get_state=get_state, set_state=set_state,
            state_names=templates.str_tuple(state + labels),
            out_names=templates.str_tuple(outs))
        with_roles(stmts, self.scope, state, labels, uncarried)
        # Every list the branches append to, live after the `if` or not: one
        # that is dead here may still be seen through another name (`b = a`).
        lists = appended_lists(node, state)
        if lists:
            stmts[-1].value.keywords.append(
                ast.keyword(arg="lists", value=templates.str_tuple(lists)))
        if getattr(node, AFTER_EXIT, False):
            # the guard of the statements after a `break`/`continue` on a tensor:
            # what they assign may differ in shape from the value a trip that
            # left keeps (it is the value the run has, whichever path ran), so
            # its dims may be unknown after the guard, as a loop variable's are
            stmts[-1].value.keywords.append(ast.keyword(arg="relax", value=ast.Constant(True)))
        mark_generated(stmts)
        return finish(stmts, node)


_LIST_HELPERS = frozenset(("convert_list_append", "convert_list_extend", "convert_list_insert",
                           "convert_list_extend_call", "convert_list_concat"))


def appended_lists(node, outs):
    """The names of `outs` that the body or else part of `node` (nested
    constructs included) appends to."""
    names = set()
    for part in node.body + node.orelse:
        for n in walk(part):
            if not isinstance(n, ast.Assign):
                continue
            if _is_helper_call(n.value, _LIST_HELPERS):
                names.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif _is_helper_call(n.value, ("convert_list_pop",)) or (
                    isinstance(n.value, ast.Subscript)
                    and _is_helper_call(n.value.value, ("convert_list_pop",))):
                # `a, x = _jst.convert_list_pop(a, ...)` / `a = ...(a, ...)[0]`
                popped = n.value if isinstance(n.value, ast.Call) else n.value.value
                if isinstance(popped.args[0], ast.Name):
                    names.add(popped.args[0].id)
    return [n for n in outs if n in names]


def _is_helper_call(value, helpers):
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in helpers and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "_jst")


def transform(node, ctx):
    return _IfConverter(ctx).visit(node)
