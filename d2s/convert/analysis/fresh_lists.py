"""Which local names of a function hold only lists the function itself creates.

A list a function creates (`outs = []`, `[f(x) for x in xs]`, `list(xs)`)
is seen by no one else until the function hands it out, so a tensor `if` or
loop in the function may carry it by name as a tensor array (runtime
`lists.sharing`). Any other list a name may hold (a parameter, a name from
an enclosing scope or a global, `cache = self.cache`, a call's result, which
may be a list kept elsewhere) can be seen through another reference, which
a tensor array carried by name cannot change: an in-place append to it while
a tensor branch or loop is traced is an error (`lists.check_outer_list`),
never an append shown on every path.
"""
import ast

__all__ = ["fresh_list_names"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# Calls that always return a new list.
_NEW_LIST_CALLS = frozenset(("list", "sorted", "dict", "set"))


def fresh_list_names(fn):
    """The names local to `fn` (a FunctionDef) that every binding gives a new
    list or a value that is no list (an `ast` test: `outs = []`, `outs, hs =
    [], []`, `outs = a + b`, `outs = [] if c else [x]`); never a parameter, a
    `global`/`nonlocal` name, or a name bound by a loop, `with`, `import`,
    `:=` or a call other than `list(...)`/`sorted(...)`/`dict(...)`/`set(...)`/
    `x.copy()`."""
    fresh, other = set(), set()
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            other.add(a.arg)
    for node in _own_nodes(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(target, node.value, fresh, other)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _bind(node.target, node.value, fresh, other)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            other.add(node.id)   # loop / `with` / `:=` / `del` targets
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            other.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            other.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            other.add(node.name)
    return fresh - other


def _own_nodes(fn):
    """Nodes of `fn`'s body in its own scope (nested scopes' names are theirs;
    a nested def's name is still yielded, as a node of this scope)."""
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # bound names are _bind's (an augmented one keeps its object);
            # the targets' other parts (`self.a`, `d[k]`) are still walked
            if node.value is not None:
                todo.append(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            todo.extend(_target_parts(targets))
            continue
        todo.extend(ast.iter_child_nodes(node))


def _target_parts(targets):
    """Sub-expressions of assignment targets that are not bound names
    (`self.a`, `d[k]`): bound names are _bind's."""
    parts = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            parts.extend(_target_parts(t.elts))
        elif isinstance(t, ast.Starred):
            parts.extend(_target_parts([t.value]))
        elif not isinstance(t, ast.Name):
            parts.append(t)
    return parts


def _bind(target, value, fresh, other):
    if isinstance(target, ast.Name):
        (fresh if _new_list_or_no_list(value) else other).add(target.id)
    elif (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
          and len(target.elts) == len(value.elts)
          and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)):
        for t, v in zip(target.elts, value.elts):
            _bind(t, v, fresh, other)
    else:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                other.add(node.id)


def _new_list_or_no_list(value):
    """Whether `value` evaluates to a new list, or to something no list is
    (a constant, a tuple, arithmetic)."""
    if isinstance(value, (ast.List, ast.ListComp, ast.Constant, ast.Tuple, ast.Dict, ast.Set,
                          ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.JoinedStr,
                          ast.Compare, ast.UnaryOp, ast.Lambda)):
        return True
    if isinstance(value, ast.BinOp):
        return True    # `a + b`, `[x] * n`: a new object whatever the operands
    if isinstance(value, ast.IfExp):
        return _new_list_or_no_list(value.body) and _new_list_or_no_list(value.orelse)
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name) and func.id in _NEW_LIST_CALLS:
            return True
        return (isinstance(func, ast.Attribute) and func.attr == "copy"
                and not value.args and not value.keywords)
    return False
