"""Helpers shared by converters: scope walking, state functions, placeholders."""
import ast
import collections
import copy

from .. import templates
from ..analysis import annos
from ..origin import ORIGIN, inherit_origin
from ..traversal import StatementTransformer, statement_fields

SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
LOOP_NODES = (ast.For, ast.While, ast.AsyncFor)
# attribute of the `if` guarding what follows a `break`/`continue` in a trip
AFTER_EXIT = "_d2s_after_exit"


def walk_scope(nodes, stop=SCOPE_NODES):
    """Yield nodes under `nodes` without entering nodes of the `stop` types."""
    todo = list(nodes) if isinstance(nodes, list) else [nodes]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, stop):
            continue
        todo.extend(ast.iter_child_nodes(node))


def contains(nodes, kinds, stop=SCOPE_NODES):
    """Whether any node of `kinds` occurs under `nodes` (not inside `stop` nodes).

    The roots themselves are always inspected, even when of a `stop` type.
    """
    roots = nodes if isinstance(nodes, list) else [nodes]
    if _all_statement_kinds(kinds):
        return _statement_contains(roots, kinds, stop)
    for root in roots:
        if isinstance(root, kinds):
            return True
        for child in ast.iter_child_nodes(root):
            if any(isinstance(n, kinds) for n in walk_scope(child, stop)):
                return True
    return False


def _all_statement_kinds(kinds):
    return all(issubclass(kind, ast.stmt) for kind in (
        kinds if isinstance(kinds, tuple) else (kinds,)))


def _statement_contains(roots, kinds, stop):
    """`contains` for statement kinds (`return`, `break`, ...): a statement
    lies only in statement lists, so expressions are never walked (the
    converters ask this per loop and per `if`)."""
    todo = []
    descend = list(roots)    # a root is searched even when of a stop kind
    while descend or todo:
        if descend:
            node = descend.pop()
            if isinstance(node, kinds):
                return True
        else:
            node = todo.pop()
            if isinstance(node, kinds):
                return True
            if isinstance(node, stop):
                continue
        for field in statement_fields(node.__class__):
            children = getattr(node, field, None)
            if type(children) is list:
                todo.extend(children)
    return False


def user_functions(tree):
    """All user-written FunctionDefs in `tree`, outermost first.

    In `ast.walk` order; a def is a statement, so only statement lists (and
    the handlers / cases holding them) are walked.
    """
    found = []
    queue = collections.deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, ast.FunctionDef) and not getattr(node, annos.GENERATED, False):
            found.append(node)
        for field in statement_fields(node.__class__):
            children = getattr(node, field, None)
            if isinstance(children, list):
                queue.extend(children)
    return found


def mark_generated(stmts):
    for stmt in stmts:
        if isinstance(stmt, ast.FunctionDef):
            setattr(stmt, annos.GENERATED, True)
    return stmts


_GET_STATE = """
def get_state():
    return state_load
"""
_SET_STATE = {  # by (plain names?, targets?)
    (False, False): "def set_state(vals):\n    pass",
    (False, True): "def set_state(vals):\n    target_stores",
    (True, False): "def set_state(vals):\n    nonlocal names\n    state_store = vals",
    (True, True): "def set_state(vals):\n    nonlocal names\n    state_store = vals[:count]\n"
                  "    target_stores",
}


def state_functions(get_name, set_name, vals_name, names, targets=()):
    """`get_state()` returning the state's values and `set_state(vals)` assigning them.

    The state is `names` (plain locals, shared by `nonlocal`) followed by
    `targets`: (label, node) pairs of attribute/subscript targets, read and
    written through their containers (see analysis.targets).
    """
    loads = [ast.Name(id=n, ctx=ast.Load()) for n in names]
    stores = []
    for k, (label, target) in enumerate(targets, start=len(names)):
        load, store = _target_access(target, label, vals_name, k)
        loads.append(load)
        stores.append(store)
    template = _GET_STATE + _SET_STATE[bool(names), bool(targets)]
    return mark_generated(templates.replace(
        template, get_state=get_name, set_state=set_name, vals=vals_name,
        state_load=ast.Tuple(elts=loads, ctx=ast.Load()), names=list(names),
        state_store=templates.name_tuple(names, ast.Store),
        count=ast.Constant(value=len(names)), target_stores=stores))


def _target_access(target, label, vals_name, k):
    """(load expression, store statement) of one attribute/subscript target."""
    container = copy.deepcopy(target.value)
    if isinstance(target, ast.Attribute):
        helper, key = "attr", ast.Constant(value=target.attr)
    else:
        helper, key = "item", copy.deepcopy(target.slice)
    load = templates.replace_as_expression(
        f"_jst.load_{helper}(container, key, label)", container=container, key=key,
        label=ast.Constant(value=label))
    value = ast.Subscript(value=ast.Name(id=vals_name, ctx=ast.Load()),
                          slice=ast.Constant(value=k), ctx=ast.Load())
    store = templates.replace(
        f"_jst.store_{helper}(container, key, value)", container=copy.deepcopy(container),
        key=copy.deepcopy(key), value=value)[0]
    return load, store


def undefined_inits(names):
    """`x = _jst.UndefinedVar('x')` for each name (sorted, for stable output)."""
    stmts = []
    for name in sorted(names):
        stmts += templates.replace("name = _jst.UndefinedVar(label)", name=name,
                                   label=ast.Constant(value=name))
    return stmts


def construct_state(node, scope):
    """Names a construct's closures share (`nonlocal`): all it may assign.

    Sharing every assigned name (not only the outputs) keeps Python
    semantics exactly and guarantees that a name `nonlocal`-declared by an
    inner construct is bound by the enclosing closure too, all the way up to
    the user function, which binds possibly-unassigned ones at its start
    (see undefined_names).
    """
    modified = getattr(node, annos.MODIFIED)
    return sorted(modified - getattr(scope, annos.SCOPE_GLOBALS))


def with_roles(stmts, scope, state, targets=(), uncarried=()):
    """Add to the runtime call ending `stmts` the roles of state entries that
    are not plain variables, as keywords (the runtime never guesses them from
    generated names):

    * `returns=_jst.ReturnSlots(...)` when the state holds the function's
      early-return flag or value (see annos.RETURN_SLOTS);
    * `targets=('acc[0]', ...)`: the attribute/subscript targets carried;
    * `uncarried=(('buf[i]', line), ...)`: targets written that cannot be
      carried (an error if the construct turns out to be on a tensor); a
      third entry True when only a key varies (a construct on a tensor
      finds those items itself: runtime.loop_items).
    """
    call = stmts[-1].value
    slots = getattr(scope, annos.RETURN_SLOTS, None)
    if slots is not None and set(slots[:2]) & set(state):
        flag, value, label = slots
        slots_call = templates.replace_as_expression(
            "_jst.ReturnSlots(flag, value, label)", flag=ast.Constant(value=flag),
            value=ast.Constant(value=value), label=ast.Constant(value=label))
        call.keywords.append(ast.keyword(arg="returns", value=slots_call))
    if targets:
        call.keywords.append(ast.keyword(arg="targets", value=templates.str_tuple(targets)))
    if uncarried:
        where = ast.Tuple(elts=[ast.Tuple(elts=[ast.Constant(value=label),
                                                ast.Constant(value=_line_of(node))]
                                          + ([ast.Constant(value=True)] if keyed else []),
                                          ctx=ast.Load()) for label, node, keyed in uncarried],
                          ctx=ast.Load())
        call.keywords.append(ast.keyword(arg="uncarried", value=where))
    return stmts


def _line_of(node):
    origin = getattr(node, ORIGIN, None)
    return origin.lineno if origin is not None else node.lineno


def construct_targets(node):
    """(carried, uncarried) attribute/subscript targets of a construct (lists of
    (label, node), see analysis.targets) and the carried labels."""
    carried, uncarried = getattr(node, annos.TARGETS, ([], []))
    return carried, uncarried, [label for label, _ in carried]


def walrus_targets(nodes):
    """Names bound by `:=` anywhere under `nodes` (sorted). A part of an
    expression that conversion moves into a `lambda` must bind none: the
    lambda would bind them in itself."""
    return sorted({n.target.id for node in nodes for n in ast.walk(node)
                   if isinstance(n, ast.NamedExpr)})


def python_test_only(test, targets, construct):
    """`test` wrapped so that a static Variable there is a clear error naming the
    walrus `targets` that keep `construct` from being converted (it stays
    Python, which needs the test's truth while tracing)."""
    return finish(templates.replace_as_expression(
        "_jst.python_test_only(test, targets, construct)", test=test,
        targets=templates.str_tuple(targets), construct=ast.Constant(value=construct)), test)


def finish(new_stmts, old_node):
    """Give generated statements the origin of the node they replace."""
    inherit_origin(new_stmts, old_node)
    return new_stmts




class ScopedTransformer(StatementTransformer):
    """A StatementTransformer that knows the user function whose body it is in.

    Generated closures are not scopes of their own for the analyses, so only
    user-written defs change `self.scope`; local class bodies are skipped.
    """

    def __init__(self, ctx):
        self.ctx = ctx
        self.scopes = []

    @property
    def scope(self):
        return self.scopes[-1]

    def visit_FunctionDef(self, node):
        user = not getattr(node, annos.GENERATED, False)
        if user:
            self.scopes.append(node)
        self.generic_visit(node)
        if user:
            self.scopes.pop()
        return node

    def visit_ClassDef(self, node):
        return node


def replace_node(tree, old, new):
    """Put `new` where the node `old` is in `tree` (its one occurrence): a
    call lifted out of an expression leaves a name in its place."""
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new
                        return
