"""`while` -> condition and body closures + `_jst.convert_while_loop(...)`.

Loop variables are the state names live at the loop head: read by the test
or by the body before being written, or live after the loop.  Names the
test assigns (`:=`) are shared with the condition closure too, and passed
as `test_writes`: a static loop evaluates the test again where the body
and the code after the loop read them.
"""
import ast

from .. import templates
from ..analysis import annos
from ..analysis.activity import reads_writes
from .common import (ScopedTransformer, construct_state, construct_targets, finish,
                     mark_generated, state_functions, with_roles)

_TEMPLATE = """
def cond_fn():
    nonlocal test_state
    return test
def body_fn():
    nonlocal state
    body
state_functions
_jst.convert_while_loop(cond_fn, body_fn, get_state, set_state, state_names, loop_vars)
"""


class _WhileConverter(ScopedTransformer):
    def visit_While(self, node):
        self.generic_visit(node)
        state = construct_state(node, self.scope)
        carried, uncarried, labels = construct_targets(node)
        head = getattr(node, annos.LIVE_HEAD)
        # Targets live in containers others may read: always carried.
        loop_vars = [n for n in state if n in head] + labels
        namer = self.ctx.namer
        cond_fn, body_fn = namer.new("cond_fn"), namer.new("body_fn")
        get_state, set_state = namer.new("get_state"), namer.new("set_state")
        test_state = [n for n in state if n in reads_writes(node.test)[1]]
        stmts = templates.replace(
            _TEMPLATE, cond_fn=cond_fn, body_fn=body_fn, test=node.test,
            test_state=test_state,
            state=list(state), body=node.body,
            state_functions=state_functions(get_state, set_state, namer.new("vals"), state,
                                            carried),
            get_state=get_state, set_state=set_state,
            state_names=templates.str_tuple(state + labels),
            loop_vars=templates.str_tuple(loop_vars))
        with_roles(stmts, self.scope, state, labels, uncarried)
        if test_state:
            stmts[-1].value.keywords.append(
                ast.keyword(arg="test_writes", value=templates.str_tuple(test_state)))
        mark_generated(stmts)
        return finish(stmts, node)


def transform(node, ctx):
    return _WhileConverter(ctx).visit(node)
