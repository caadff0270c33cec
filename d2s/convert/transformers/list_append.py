"""`lst.append(v)` in a loop -> `lst = _jst.convert_list_append(lst, v)`,
`lst.extend(vs)` -> `lst = _jst.convert_list_extend_call(lst, vs)`,
`lst += [v, ...]` (a list literal) -> `lst = _jst.convert_list_extend(lst, [v, ...])`
and `lst = lst + [v, ...]` -> `lst = _jst.convert_list_concat(lst, [v, ...])`;
`lst.insert(i, v)` in a loop or `if` -> `lst = _jst.convert_list_insert(lst, i, v)`
(in front of a tensor array: returns computed backwards);
`obj.a.append(v)` / `d["k"].extend(vs)` -> `_jst.convert_reached_list_call(...)`,
an error under a tensor `if` or loop (never an append shown on every path);
`y = x.pop(i)` / `x.pop(i)` / `return x.pop(i)` (a statement of its own; a
pop inside a statement's expression, `s += x.pop()`, `b = b + x.pop() * 2`,
becomes one first when the statement reads `x` nowhere else) ->
`x, y = _jst.convert_list_pop(x, "x", outer, i)`: a list a tensor loop filled
(or a tensor `if` shares) is a tensor array there, popped by rebinding its
name to the shorter array; any other `x.pop(...)` (and the other methods
changing a list, dict or set in place) -> `_jst.checked_method(x, "pop",
"x")(...)`, an error under a tensor `if` or loop likewise.

Rewritten inside loops and `if` statements. The assignment makes `lst` a
loop variable or branch output for the analyses, so a loop or `if` on a
tensor can carry it as a tensor array; with Python values the helper
appends in place and returns the same list (plain Python semantics kept).

A list the function did not create itself (`analysis.fresh_lists`: a
parameter, `cache = self.cache`, a name from outside) may be seen through
another reference, which no tensor array carried by name can change: its
helper call says so (`outer="lst"`), and so does an append to it anywhere
else in the function, since a caller may be tracing a tensor branch or loop
when it runs (`def add(cache, x): cache.append(x)`): the runtime raises
then, naming the list (`lists.check_outer_list`).
"""
import ast

from .. import templates
from ..analysis.fresh_lists import new_list_or_no_list, list_names
from ..traversal import StatementTransformer
from .common import finish, replace_node


_METHOD_HELPERS = {"append": "convert_list_append", "extend": "convert_list_extend_call"}


class _ListAppend(StatementTransformer):
    """Rewrites statements only (expressions hold none)."""

    def __init__(self, namer=None):
        self.loops = 0
        self.namer = namer   # fresh names for the item popped by `s += a.pop()`
        # list_names of the innermost def: the names holding only lists it
        # creates (`own`), and those of them it hands out nowhere before
        # changing them (`fresh`)
        self.own = self.fresh = frozenset()
        self.fresh_of = {}   # id(def) -> its fresh names (for _MutatorCalls)

    def visit_For(self, node):
        self.loops += 1
        self.generic_visit(node)
        self.loops -= 1
        return node

    # In a branch too: a list a tensor `if` appends to must become a branch
    # output (runtime `lists.sharing`), never be changed in place.
    visit_While = visit_If = visit_For

    def visit_FunctionDef(self, node):
        saved = self.loops, self.own, self.fresh
        self.loops = 0
        self.own, self.fresh = map(frozenset, list_names(node))
        self.fresh_of[id(node)] = self.fresh
        self.generic_visit(node)
        self.loops, self.own, self.fresh = saved
        return node

    def _outer(self, name):
        """`outer=` for a list helper's call when `name` may hold a list the
        function did not create (none when it holds only its own lists)."""
        if name in self.fresh:
            return []
        return [ast.keyword(arg="outer", value=ast.Constant(name))]

    def visit_ClassDef(self, node):
        return node

    def _pop_call(self, owner, call):
        """`_jst.convert_list_pop(owner, "owner", outer, *call.args)`; `outer`:
        whether `owner` may hold a list the function did not create."""
        return ast.Call(
            func=ast.Attribute(ast.Name("_jst", ast.Load()), "convert_list_pop", ast.Load()),
            args=[ast.Name(owner, ast.Load()), ast.Constant(owner),
                  ast.Constant(owner not in self.fresh)] + list(call.args), keywords=[])

    def visit_Expr(self, node):
        call = node.value
        owner = _popped_name(call)
        if owner is not None:
            # `a.pop()` -> `a = _jst.convert_list_pop(a, "a", outer)[0]`
            return finish(ast.Assign(
                targets=[ast.Name(owner, ast.Store())],
                value=ast.Subscript(self._pop_call(owner, call), ast.Constant(0), ast.Load())), node)
        owner = _reversed_name(call)
        if owner is not None and owner in self.own:  # (rebinding a global would make it local)
            # `a.reverse()` -> `a = _jst.convert_list_reverse(a, "a", outer)`
            return finish(ast.Assign(
                targets=[ast.Name(owner, ast.Store())],
                value=ast.Call(
                    func=ast.Attribute(ast.Name("_jst", ast.Load()), "convert_list_reverse",
                                       ast.Load()),
                    args=[ast.Name(owner, ast.Load()), ast.Constant(owner),
                          ast.Constant(owner not in self.fresh)], keywords=[])), node)
        if (self.loops and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "insert" and isinstance(call.func.value, ast.Name)
                and call.func.value.id != "_jst" and not call.func.value.id.startswith("__")
                and len(call.args) == 2 and not call.keywords
                and not any(isinstance(a, ast.Starred) for a in call.args)):
            # `a.insert(i, v)` -> `a = _jst.convert_list_insert(a, i, v)`: in
            # front of a tensor array a loop carries (returns computed backwards)
            stmts = templates.replace(
                "lst = _jst.convert_list_insert(lst, index, value)", lst=call.func.value.id,
                index=call.args[0], value=call.args[1])
            stmts[0].value.keywords.extend(self._outer(call.func.value.id))
            return finish(stmts, node)
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in _METHOD_HELPERS and len(call.args) == 1
                and not call.keywords and not isinstance(call.args[0], ast.Starred)):
            return node
        owner = call.func.value
        if self.loops and isinstance(owner, ast.Name):
            stmts = templates.replace(
                "lst = _jst.helper(lst, value)", helper=_METHOD_HELPERS[call.func.attr],
                lst=owner.id, value=call.args[0])
            stmts[0].value.keywords.extend(self._outer(owner.id))
            return finish(stmts, node)
        if ((self.loops and isinstance(owner, (ast.Attribute, ast.Subscript)))
                or (isinstance(owner, ast.Name) and owner.id not in self.fresh)):
            # A list reached through an object or a dict, or one the function
            # did not create: checked when called.
            return finish(templates.replace(
                "_jst.convert_reached_list_call(lst, method, value, label)",
                lst=owner, method=ast.Constant(call.func.attr), value=call.args[0],
                label=ast.Constant(ast.unparse(owner))), node)
        return node

    def _hoisted_pop(self, node):
        """`s += a.pop()`, `b = b + a.pop() * 2`, `return f(a.pop(0))` ->
        `a, item = _jst.convert_list_pop(a, "a", outer, ...)` then the
        statement with `item`: the pop a statement of its own, as the list a
        tensor loop carries is popped by rebinding its name. Only for one pop
        of a local name the statement reads nowhere else (its targets
        included), outside lambdas and comprehensions: the pop first is then
        the order Python evaluates it in. Else None."""
        if self.namer is None or node.value is None:
            return None
        pops = []
        for sub in ast.walk(node.value):
            if isinstance(sub, _DEFERRED):
                return None
            if _popped_name(sub) is not None:
                pops.append(sub)
        if len(pops) != 1 or pops[0] is node.value and not isinstance(node, ast.AugAssign):
            return None   # (a pop that is the whole value has its own forms)
        call = pops[0]
        owner = _popped_name(call)
        inside = {id(sub) for sub in ast.walk(call)}
        if any(isinstance(sub, ast.Name) and sub.id == owner and id(sub) not in inside
               for sub in ast.walk(node)):
            return None
        item = self.namer.new("popped")
        pop = ast.Assign(
            targets=[ast.Tuple([ast.Name(owner, ast.Store()), ast.Name(item, ast.Store())],
                               ast.Store())],
            value=self._pop_call(owner, call))
        if call is node.value:
            node.value = ast.Name(item, ast.Load())
        else:
            replace_node(node.value, call, ast.Name(item, ast.Load()))
        return finish([pop], node) + [node]

    def visit_Return(self, node):
        hoisted = self._hoisted_pop(node)
        if hoisted is not None:
            return hoisted
        owner = _popped_name(node.value)
        if owner is not None:
            # `return a.pop()` -> `return _jst.convert_list_pop(a, "a", outer)[1]`
            node.value = finish(ast.Subscript(self._pop_call(owner, node.value), ast.Constant(1),
                                              ast.Load()), node.value)
        return node

    def visit_Assign(self, node):
        hoisted = self._hoisted_pop(node)
        if hoisted is not None:
            return hoisted
        value = node.value
        owner = _popped_name(value)
        if (owner is not None and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id != owner):
            # `x = a.pop(i)` -> `a, x = _jst.convert_list_pop(a, "a", outer, i)`:
            # a list a tensor loop filled is a tensor array after it (and a
            # pending one in it), popped by rebinding its name to the shorter
            # array
            return finish(ast.Assign(
                targets=[ast.Tuple([ast.Name(owner, ast.Store()), node.targets[0]], ast.Store())],
                value=self._pop_call(owner, value)), node)
        if (self.loops and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
                and isinstance(value.left, ast.Name) and value.left.id == node.targets[0].id
                and isinstance(value.right, ast.List)):
            return finish(templates.replace(
                "lst = _jst.convert_list_concat(lst, values)",
                lst=value.left.id, values=value.right), node)
        for target in node.targets:
            node.value = self._marked(target, node.value)
        return node

    def _marked(self, target, value):
        """`value` bound to `target`, each new list it gives a fresh name
        wrapped in `_jst.new_container(...)` (the runtime then knows it was created
        inside the tensor construct being traced, if one is)."""
        if isinstance(target, ast.Name):
            # an escaped list too: appending to it in a helper the trace
            # calls is right when the trace created it
            if target.id in self.own and _makes_list(value):
                return finish(templates.replace_as_expression(
                    "_jst.new_container(value)", value=value), value)
            return value
        if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
                and len(target.elts) == len(value.elts)):
            value.elts = [self._marked(t, v) for t, v in zip(target.elts, value.elts)]
        return value

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        hoisted = self._hoisted_pop(node)
        if hoisted is not None:
            return hoisted
        if (isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name)
                and isinstance(node.value, ast.List)
                and (self.loops or node.target.id not in self.fresh)):
            stmts = templates.replace(
                "lst = _jst.convert_list_extend(lst, values)",
                lst=node.target.id, values=node.value)
            stmts[0].value.keywords.extend(self._outer(node.target.id))
            return finish(stmts, node)
        return node


_DEFERRED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
             ast.IfExp, ast.BoolOp)   # parts Python may run later, or not at all


def _reversed_name(call):
    """`a` when `call` is `a.reverse()` (`a` a user's name), else None."""
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "reverse" and isinstance(call.func.value, ast.Name)
            and not call.args and not call.keywords
            and call.func.value.id != "_jst" and not call.func.value.id.startswith("__")):
        return call.func.value.id
    return None


def _popped_name(call):
    """`a` when `call` is `a.pop()` or `a.pop(i)` (`a` a user's name), else None."""
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "pop" and isinstance(call.func.value, ast.Name)
            and len(call.args) <= 1 and not call.keywords
            and not any(isinstance(a, ast.Starred) for a in call.args)
            and call.func.value.id != "_jst" and not call.func.value.id.startswith("__")):
        return call.func.value.id
    return None


def _makes_list(value):
    """Whether `value` (bound to a fresh name) visibly makes a list (a dict, a
    set): a display, a comprehension, `list(...)`, `sorted(...)`, `x.copy()`, `[x] * n`,
    `a + [x]`, or a ternary with such a branch (not `a + b`: most arithmetic
    is on tensors, and its lists stay unmarked, so appending to one from a
    helper while tracing is an error rather than a silent wrong list)."""
    if isinstance(value, (ast.List, ast.ListComp, ast.Dict, ast.DictComp, ast.Set,
                          ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        # an own name may also be rebound after its changes (`outs =
        # d2s.stack(outs)`): only the calls making lists mark it
        return new_list_or_no_list(value)
    if isinstance(value, ast.BinOp):
        return isinstance(value.left, (ast.List, ast.ListComp)) or isinstance(
            value.right, (ast.List, ast.ListComp))
    if isinstance(value, ast.IfExp):
        return _makes_list(value.body) or _makes_list(value.orelse)
    return False


# Methods that change a list, dict or set in place (append/extend: above).
_MUTATORS = frozenset(("pop", "insert", "remove", "clear", "sort", "reverse", "popitem",
                       "update", "setdefault", "add", "discard"))


class _MutatorCalls(ast.NodeTransformer):
    """`x.pop(...)` -> `_jst.checked_method(x, "pop", "x")(...)`: while a tensor
    branch or loop is traced, Python runs the call once for every path, so a
    list/dict/set made before it (`outs.pop()` under a tensor `if`) would
    change on all of them: the runtime raises, naming it. Any other object's
    method is returned as it is (call_trees converts the call)."""

    def __init__(self, fresh_of):
        self.fresh_of = fresh_of   # id(def) -> its fresh names, before rewriting
        self.fresh = frozenset()

    def visit_ClassDef(self, node):
        return node

    def visit_FunctionDef(self, node):
        saved, self.fresh = self.fresh, self.fresh_of.get(id(node), frozenset())
        self.generic_visit(node)
        self.fresh = saved
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in _MUTATORS
                and isinstance(func.value, (ast.Name, ast.Attribute, ast.Subscript))
                and not (isinstance(func.value, ast.Name)
                         and (func.value.id == "_jst" or func.value.id.startswith("__")))):
            node.func = finish(templates.replace_as_expression(
                "_jst.checked_method(owner, method, label)", owner=func.value,
                method=ast.Constant(func.attr), label=ast.Constant(ast.unparse(func.value))),
                func)
            if (func.attr == "pop" and isinstance(func.value, ast.Name)
                    and func.value.id in self.fresh):
                # the function's own list, popped inside an expression (a
                # statement of its own is `convert_list_pop`'s): the error
                # says to write it so
                node.func.keywords.append(ast.keyword(arg="own", value=ast.Constant(True)))
        return node


def transform(node, ctx):
    appends = _ListAppend(ctx.namer)
    node = appends.visit(node)
    # One scan of the user's nodes instead of a transformer's walk of the tree
    # when, as in most functions, no such method is called.
    if any(type(n) is ast.Call and type(n.func) is ast.Attribute and n.func.attr in _MUTATORS
           for n in ctx.user_nodes):
        node = _MutatorCalls(appends.fresh_of).visit(node)
    return node
