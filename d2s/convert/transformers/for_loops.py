"""`for` -> a body closure taking the item + `_jst.convert_for(...)`.

The body closure assigns the loop target itself (any target shape, e.g.
`i, (a, b)`), so the runtime only hands it one item per iteration; a break
flag (from break_continue) becomes `cond_fn`, checked before each item.
"""
import ast

from .. import templates
from ..analysis import annos
from .common import (ScopedTransformer, construct_state, construct_targets, finish,
                     mark_generated, state_functions, with_roles)
from .ifelse import appended_lists

_TEMPLATE = """
def body_fn(item):
    nonlocal state
    target = item
    body
state_functions
"""


class _ForConverter(ScopedTransformer):
    def visit_For(self, node):
        self.generic_visit(node)
        state = construct_state(node, self.scope)
        carried, uncarried, labels = construct_targets(node)
        head = getattr(node, annos.LIVE_HEAD)
        # Targets live in containers others may read: always carried.
        loop_vars = [n for n in state if n in head] + labels
        namer = self.ctx.namer
        body_fn, item = namer.new("for_body_fn"), namer.new("item")
        get_state, set_state = namer.new("get_state"), namer.new("set_state")
        stmts = templates.replace(
            _TEMPLATE, body_fn=body_fn, item=item, state=list(state),
            target=node.target, body=node.body,
            state_functions=state_functions(get_state, set_state, namer.new("vals"), state,
                                            carried))
        flag = getattr(node, annos.BREAK_FLAG, None)
        call = ("_jst.convert_for(iterable, body_fn, get_state, set_state, state_names, "
                "loop_vars{})".format(", lambda: _jst.convert_logical_not(flag)" if flag else ""))
        stmts += templates.replace(
            call, iterable=node.iter, body_fn=body_fn, get_state=get_state,
            set_state=set_state, state_names=templates.str_tuple(state + labels),
            loop_vars=templates.str_tuple(loop_vars), flag=flag or "")
        with_roles(stmts, self.scope, state, labels, uncarried)
        lists = appended_lists(node, loop_vars) if flag else ()
        if lists:  # a Python loop whose `break` becomes a tensor guards each rest trip
            stmts[-1].value.keywords.append(
                ast.keyword(arg="lists", value=templates.str_tuple(lists)))
        mark_generated(stmts)
        return finish(stmts, node)


def transform(node, ctx):
    return _ForConverter(ctx).visit(node)
