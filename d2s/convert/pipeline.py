"""The ordered list of converters applied to a parsed function.

Order matters; the reason for each position is given beside it.
"""
import ast

from .analysis import analyze_function
from .naming import Namer
from .transformers import (annotations, break_continue, builtin_calls, call_trees,
                           conditional_expressions, for_loops, global_writes, ifelse,
                           inplace_methods, item_assignment, list_append,
                           logical_expressions, mangling, plain_reads,
                           raise_statements, return_statements, stop_gradient, try_statements,
                           undefined_names, unsupported, while_loops)
from .transformers.common import user_functions
from .traversal import walk


class Context:
    """What converters share: fresh names, where the code came from, and
    `user_nodes`: every node of the function as parsed, before any converter
    ran (`traversal.walk` order), for the searches of the user's own code."""

    def __init__(self, namer, filename, function_name, user_nodes):
        self.namer = namer
        self.filename = filename
        self.function_name = function_name
        self.user_nodes = user_nodes


class _ControlFlow(ifelse._IfConverter, while_loops._WhileConverter,
                   for_loops._ForConverter):
    """Pipeline step: ifelse, while_loops and for_loops fused into one walk.

    Each converts innermost-first (post-order) and reads only annotations
    computed before it, so converting all three kinds in one post-order walk
    gives the same code as three walks, for a third of the walking.
    """

    @classmethod
    def transform(cls, node, ctx):
        return cls(ctx).visit(node)


_DEFINITION_TIME_FIELDS = tuple(f for f in ast.FunctionDef._fields if f != "body")


class _CallsAndExpressions(builtin_calls._BuiltinCalls, logical_expressions._Logical,
                           conditional_expressions._Ternary):
    """Pipeline step: builtin_calls, call_trees, logical_expressions and
    conditional_expressions fused into one walk.

    All four rewrite bottom-up, each node once its parts are done, and none
    rewrites what another produces: call_trees leaves the runtime's own calls
    alone (the builtins routed there, `_jst.convert_shape(x)`), and what the
    expression converters generate comes after call_trees in the pipeline
    order this replaces.  So applying them in that order at each node of one
    post-order walk gives the same code as four walks.  call_trees converts
    only a def's body (decorators, defaults and annotations run once, at
    definition time): elsewhere `wrap_calls` is off.
    """

    def __init__(self, rebound):
        super().__init__(rebound)
        self.wrap_calls = True

    @classmethod
    def transform(cls, node, ctx):
        return cls(builtin_calls.rebound_names(ctx)).visit(node)

    def visit_def_parts(self, node):
        # calls are wrapped in the body only: the rest runs at definition time
        outer, self.wrap_calls = self.wrap_calls, False
        self.generic_visit(node, _DEFINITION_TIME_FIELDS)
        self.wrap_calls = True
        self.generic_visit(node, ("body",))
        self.wrap_calls = outer

    def visit_Call(self, node):
        self.generic_visit(node)
        node = self.rewrite_call(node)
        return call_trees.wrap_call(node) if self.wrap_calls else node


class _Analysis:
    """Pipeline step: annotate every user function (see analysis.annos)."""

    @staticmethod
    def transform(node, ctx):
        for fn in user_functions(node):
            analyze_function(fn)
        return node


# Closures each construct defines and passes to its runtime call at once, in
# the same statements: a later construct in the same scope may reuse the name
# (see naming; compile time grows with the names bound in one scope).
CLOSURE_ROLES = ("true_fn", "false_fn", "cond_fn", "body_fn", "for_body_fn", "get_state",
                 "set_state")

PIPELINE = [
    # First: errors must name the user's syntax, before anything is rewritten.
    unsupported,
    # Before the analyses and the control-flow converters, whose closures
    # declare assigned names `nonlocal` (an annotated name cannot be).
    annotations,
    # Before any generated name exists: only the user's `__private` names
    # were mangled by Python when the method was first compiled.
    mangling,
    # After mangling (it would mangle the `__caught` name it reads, not the
    # handler's own), before the analyses, which must see the check.
    try_statements,
    # Before return canonicalization and the analyses: a raise under a tensor
    # `if` becomes a run-time check, and the analyses must then see it as a
    # call that falls through (the static branch keeps being traced).
    raise_statements,
    # Canonicalize before converting (nested `return` becomes flags and
    # `break`s, so it must precede break_continue, which folds them).
    return_statements,
    break_continue,
    # Before the analyses: `x.stop_gradient = f` becomes an assignment to `x`
    # (see stop_gradient), which they must see; its helper call is `_jst`'s.
    stop_gradient,
    # Before the analyses: `x[i] = v` becomes an assignment to `x` (see
    # item_assignment), so tensor constructs carry `x` as a name.
    item_assignment,
    # Likewise `x.add_(y)` becomes `x = x.add_(y)` (see inplace_methods).
    inplace_methods,
    # Before call_trees (which would wrap `lst.append` in convert_call) and
    # before the analyses (the rewrite makes `lst` a loop variable); it
    # rewrites `lst.append(v)` statements alone, which builtin_calls keeps.
    list_append,
    # builtin_calls, call_trees, logical_expressions, conditional_expressions,
    # fused; in that order at each node.  Builtins before call_trees, so
    # `print`/`len`/`range` become runtime helpers instead of being wrapped
    # in convert_call.  The expressions after canonicalization, so the
    # `not flag and test` it generated is converted too.
    _CallsAndExpressions,
    # Analyses see the final expressions but still-structured statements.
    _Analysis,
    # Needs DEFINED_IN; must run before control flow moves code into closures.
    undefined_names,
    # Control flow last; each reads annotations computed above and converts
    # innermost-first, so their relative order does not matter: ifelse,
    # while_loops and for_loops, fused.
    _ControlFlow,
    # After control flow: declares `global` in the closures it generated.
    global_writes,
    # Last: wraps attribute and item loads (recorded reads, for the guards of
    # jit.read_guards); every converter above matches the user's own nodes.
    plain_reads,
]


def convert_tree(fn_node, filename, function_name, user_nodes=None):
    """Apply the pipeline to a parsed function (a FunctionDef, changed in place).

    `user_nodes`: `traversal.walk(fn_node)`, when the caller has it.
    """
    if user_nodes is None:
        user_nodes = walk(fn_node)
    ctx = Context(Namer.for_tree(fn_node, CLOSURE_ROLES, user_nodes), filename, function_name,
                  user_nodes)
    node = fn_node
    for step in PIPELINE:
        node = step.transform(node, ctx)
    return node
