"""Which local names of a function hold only lists the function itself creates
and has not handed out before it changes them.

A list a function creates (`outs = []`, `[f(x) for x in xs]`, `list(xs)`)
is seen by no one else until the function hands it out, so a tensor `if` or
loop in the function may carry it by name as a tensor array (runtime
`lists.sharing`). Any other list a name may hold (a parameter, a name from
an enclosing scope or a global, `cache = self.cache`, a call's result, which
may be a list kept elsewhere) can be seen through another reference, which
a tensor array carried by name cannot change: an in-place append to it while
a tensor branch or loop is traced is an error (`lists.check_outer_list`),
never an append shown on every path.

The same holds for the function's own list once it *escapes* before a change
(`self.outs = outs`, `d["k"] = outs`, `pair = (outs, y)`, `keep(outs)`, a
closure reading it): the other reference would not see the append, so such a
name is not fresh either. A use that only reads the list now (`len(outs)`,
`d2s.stack(outs)`, `for o in outs`, `outs[0]`, `return outs`) hands nothing
out; a local alias (`b = outs`) is the runtime's `check_list_aliases`. An
escape counts when it may run before a change: earlier in the source, or in
a loop around both that does not bind the name anew before the change.

One pass over the statements finds the names whose every binding makes a new
list (or no list); only when there are such names are the expressions walked
(for `:=` targets, escapes and in-place changes), nested scopes skipped.
"""
import ast

__all__ = ["fresh_list_names", "list_names", "new_list_or_no_list"]

# Calls that always return a new list.
_NEW_LIST_CALLS = frozenset(("list", "sorted", "dict", "set"))
# Builtins that read a list's items at once and keep no reference to it.
_READING_CALLS = frozenset(("len", "sum", "max", "min", "sorted", "list", "tuple", "set",
                            "dict", "any", "all", "print", "isinstance", "str", "repr",
                            "bool", "id", "type", "frozenset"))
# Builtins returning an iterator over the list: they read it when it is read.
_LAZY_CALLS = frozenset(("iter", "reversed", "zip", "enumerate", "map", "filter"))
# Methods of another list that copy the argument's items.
_READING_METHODS = frozenset(("extend", "index", "count"))
# Methods changing a list, dict or set in place.
_IN_PLACE = frozenset(("append", "extend", "pop", "insert", "remove", "clear", "sort",
                       "reverse", "popitem", "update", "setdefault", "add", "discard"))
# Modules whose functions read their list arguments now (`d2s.stack(outs)`;
# numpy copies; `_jst` is the runtime's, from converters that ran before).
_READING_MODULES = frozenset(("d2s", "_jst", "np", "numpy", "math"))

# How an expression's value is used: read now, bound to a local name, or
# stored where another reference may see it later.
_READ, _ALIAS, _ESCAPE = 0, 1, 2
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def fresh_list_names(fn):
    """The names local to `fn` (a FunctionDef) that every binding gives a new
    list or a value that is no list (an `ast` test: `outs = []`, `outs, hs =
    [], []`, `outs = a + b`, `outs = [] if c else [x]`), and that escape
    nowhere before a change in place; never a parameter, a `global`/
    `nonlocal` name, or a name bound by a loop, `with`, `import`, `:=` or a
    call other than `list(...)`/`sorted(...)`/`dict(...)`/`set(...)`/
    `x.copy()`."""
    return list_names(fn)[1]


def list_names(fn):
    """(own, fresh): the names every binding of which gives a new list or no
    list, and those of them no escape may precede a change of."""
    scan = _Scan()
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            scan.other.add(a.arg)
    scan.statements(fn.body, None)
    own = scan.fresh - scan.other
    if not own:
        return set(), set()
    scan.watch = own
    scan.expressions()
    own -= scan.other            # `:=` targets
    return own, {name for name in own if not scan.escapes_before_change(name)
                 and not scan.rebound_before_change(name)}


class _Scan:
    """The statements of one function's own scope, then (`expressions`) the
    expressions hanging off them."""

    def __init__(self):
        self.fresh, self.other = set(), set()
        self.serial = 0          # statements in source order
        self.loops = ()          # serials of the loops around the statement
        self.binds = {}          # loop serial -> {name: first direct binding's serial}
        self.roots = []          # (expression, use, (serial, loops))
        self.nested = []         # (def / class / lambda, (serial, loops))
        self.watch = frozenset()
        self.escapes, self.changes = {}, {}   # name -> [(serial, loops)]
        # name -> [(serial, loops)]: `name = value` with a value that may be
        # a list made elsewhere (`outs = d2s.stack(outs)`, `res = res[::-1]`,
        # `c = self.cache`)
        self.rebinds = {}

    # ---- statements -------------------------------------------------------------

    def statements(self, body, loop):
        for stmt in body:
            self.serial += 1
            if loop is not None and type(stmt) in (ast.Assign, ast.AnnAssign):
                first = self.binds.setdefault(loop, {})
                for target in (stmt.targets if type(stmt) is ast.Assign else [stmt.target]):
                    if type(target) is ast.Name:
                        first.setdefault(target.id, self.serial)
            self.statement(stmt, (self.serial, self.loops))

    def statement(self, node, here):
        t = type(node)
        root = self.roots.append
        if t is ast.Assign:
            for target in node.targets:
                _bind(target, node.value, self.fresh, self.other, self.rebound(here))
                self.assigned(target, node.value, here)
        elif t is ast.Expr or t is ast.Return:
            if node.value is not None:
                root((node.value, _READ, here))
        elif t is ast.If:
            root((node.test, _READ, here))
            self.statements(node.body, None)
            self.statements(node.orelse, None)
        elif t is ast.For or t is ast.AsyncFor or t is ast.While:
            serial, loops = here
            inside = (serial, loops + (serial,))
            if t is ast.While:
                root((node.test, _READ, inside))
            else:
                root((node.iter, _READ, here))
                self.stored(node.target, inside)
            outer, self.loops = self.loops, inside[1]
            self.statements(node.body, serial)
            self.loops = outer
            self.statements(node.orelse, None)
        elif t is ast.AugAssign:
            if type(node.target) is ast.Name:
                self.changes.setdefault(node.target.id, []).append(here)
            else:
                root((node.target, _READ, here))
            root((node.value, _READ, here))
        elif t is ast.AnnAssign:
            if node.value is not None:
                _bind(node.target, node.value, self.fresh, self.other, self.rebound(here))
                self.assigned(node.target, node.value, here)
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            self.other.add(node.name)
            for decorator in node.decorator_list:
                root((decorator, _ESCAPE, here))
            if t is ast.ClassDef:
                for part in node.bases + [k.value for k in node.keywords]:
                    root((part, _ESCAPE, here))
            else:
                for default in node.args.defaults + node.args.kw_defaults:
                    if default is not None:
                        root((default, _ESCAPE, here))
            self.nested.append((node, here))
        elif t in (ast.With, ast.AsyncWith):
            for item in node.items:
                root((item.context_expr, _ESCAPE, here))
                if item.optional_vars is not None:
                    self.stored(item.optional_vars, here)
            self.statements(node.body, None)
        elif t in (ast.Try, getattr(ast, "TryStar", ast.Try)):
            self.statements(node.body, None)
            for handler in node.handlers:
                if handler.type is not None:
                    root((handler.type, _READ, here))
                if handler.name:
                    self.other.add(handler.name)
                self.statements(handler.body, None)
            self.statements(node.orelse, None)
            self.statements(node.finalbody, None)
        elif t is ast.Global or t is ast.Nonlocal:
            self.other.update(node.names)
        elif t is ast.Import or t is ast.ImportFrom:
            self.other.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif t is ast.Delete:
            for target in node.targets:
                self.stored(target, here)
        elif t is ast.Raise:
            for part in (node.exc, node.cause):
                if part is not None:
                    root((part, _ESCAPE, here))
        elif t is ast.Assert:
            root((node.test, _READ, here))
            if node.msg is not None:
                root((node.msg, _READ, here))
        elif t is getattr(ast, "Match", None):
            root((node.subject, _READ, here))
            for case in node.cases:
                for part in ast.walk(case.pattern):
                    name = getattr(part, "name", None) or getattr(part, "rest", None)
                    if name:
                        self.other.add(name)
                if case.guard is not None:
                    root((case.guard, _READ, here))
                self.statements(case.body, None)

    def rebound(self, here):
        """The callback `_bind` gives a name bound to what may be another
        list, at statement `here`."""
        return lambda name: self.rebinds.setdefault(name, []).append(here)

    def assigned(self, target, value, here):
        """Register `value`'s use when bound to `target`."""
        t = type(target)
        if t is ast.Name:
            self.roots.append((value, _ALIAS, here))
        elif (t in (ast.Tuple, ast.List) and type(value) in (ast.Tuple, ast.List)
              and len(target.elts) == len(value.elts)):
            for sub_target, sub_value in zip(target.elts, value.elts):
                self.assigned(sub_target, sub_value, here)
        elif t in (ast.Tuple, ast.List):
            self.roots.append((value, _READ, here))     # unpacked: its items are bound
            self.stored(target, here)
        else:   # `self.a = v`, `d[k] = v`, `*rest = v`
            self.roots.append((value, _ESCAPE, here))
            self.roots.append((target, _READ, here))

    def stored(self, target, here):
        """Names a loop / `with` / `del` target binds are no fresh lists; its
        other parts (`self.a`, `d[k]`) are read."""
        t = type(target)
        if t is ast.Name:
            self.other.add(target.id)
        elif t in (ast.Tuple, ast.List):
            for elt in target.elts:
                self.stored(elt, here)
        elif t is ast.Starred:
            self.stored(target.value, here)
        else:
            self.roots.append((target, _READ, here))

    # ---- expressions --------------------------------------------------------------

    def expressions(self):
        for node, use, here in self.roots:
            self.expression(node, use, here)
        for scope, here in self.nested:
            for name in _closure_reads(scope) & self.watch:
                self.escapes.setdefault(name, []).append(here)

    def expression(self, node, use, here):
        t = type(node)
        if t is ast.Name:
            if use == _ESCAPE and node.id in self.watch:
                self.escapes.setdefault(node.id, []).append(here)
        elif t is ast.Constant:
            pass
        elif t is ast.Attribute:
            self.expression(node.value, _READ, here)
        elif t is ast.Call:
            self.call(node, use, here)
        elif t is ast.BinOp:
            self.expression(node.left, _READ, here)
            self.expression(node.right, _READ, here)
        elif t is ast.Subscript:
            self.expression(node.value, _READ, here)
            self.expression(node.slice, _READ, here)
        elif t is ast.Compare:
            self.expression(node.left, _READ, here)
            for part in node.comparators:
                self.expression(part, _READ, here)
        elif t is ast.UnaryOp:
            self.expression(node.operand, _READ, here)
        elif t is ast.IfExp:
            self.expression(node.test, _READ, here)
            self.expression(node.body, use, here)
            self.expression(node.orelse, use, here)
        elif t is ast.BoolOp:
            for part in node.values:
                self.expression(part, use, here)
        elif t in (ast.Tuple, ast.List, ast.Set):
            for elt in node.elts:
                self.expression(elt, _ESCAPE, here)    # a Starred element is copied
        elif t is ast.Starred:
            self.expression(node.value, _READ, here)
        elif t is ast.Dict:
            for key, value in zip(node.keys, node.values):
                if key is not None:
                    self.expression(key, _READ, here)
                self.expression(value, _ESCAPE if key is not None else _READ, here)
        elif t is ast.NamedExpr:
            self.other.add(node.target.id)
            self.expression(node.value, max(use, _ALIAS), here)
        elif t in _COMPREHENSIONS:
            self.comprehension(node, use, here)
        elif t is ast.Lambda:
            for default in node.args.defaults + node.args.kw_defaults:
                if default is not None:
                    self.expression(default, _ESCAPE, here)
            self.nested.append((node, here))
        elif t in (ast.Await, ast.Yield, ast.YieldFrom):
            if node.value is not None:
                self.expression(node.value, _ESCAPE, here)
        else:   # JoinedStr, FormattedValue, Slice, ...
            for child in ast.iter_child_nodes(node):
                self.expression(child, _READ, here)

    def call(self, node, use, here):
        func = type(node.func)
        args_use = _ESCAPE
        if func is ast.Attribute:
            owner = node.func.value
            if type(owner) is ast.Name:
                if node.func.attr in _IN_PLACE:
                    self.changes.setdefault(owner.id, []).append(here)
                if owner.id in _READING_MODULES:
                    args_use = _READ
            if node.func.attr in _READING_METHODS:
                args_use = _READ
        elif func is ast.Name:
            if node.func.id in _READING_CALLS:
                args_use = _READ
            elif node.func.id in _LAZY_CALLS:
                args_use = _READ if use == _READ else _ESCAPE
        self.expression(node.func, _READ, here)
        for arg in node.args:
            self.expression(arg, args_use, here)
        for keyword in node.keywords:
            self.expression(keyword.value, args_use, here)

    def comprehension(self, node, use, here):
        """The first iterable is evaluated here; the rest runs in the
        comprehension's scope at once (a generator: whenever it is read, so
        a generator kept for later reads the list then). Its `:=` binds
        in this scope."""
        lazy = type(node) is ast.GeneratorExp and use != _READ
        read = _ESCAPE if lazy else _READ
        for generator in node.generators:
            self.expression(generator.iter, read, here)
            for test in generator.ifs:
                self.expression(test, read, here)
        if type(node) is ast.DictComp:
            self.expression(node.key, read, here)
            self.expression(node.value, _ESCAPE, here)
        else:
            self.expression(node.elt, _ESCAPE, here)

    # ---- the verdict --------------------------------------------------------------

    def escapes_before_change(self, name):
        """Whether an escape of `name` may run before one of its changes in
        place: earlier in the source, or both in a loop that does not bind
        `name` anew (directly in its body) before the change."""
        return self._before_change(self.escapes.get(name), name)

    def rebound_before_change(self, name):
        """Whether `name` may hold a list made elsewhere when it is changed
        in place: a binding of another value (`outs = self.cache`) that may
        run before a change, as an escape may. A rebinding that only follows
        the changes (`outs = d2s.stack(outs)` after the loop filling `outs`)
        reads the function's own list and leaves it fresh where it is changed."""
        return self._before_change(self.rebinds.get(name), name)

    def _before_change(self, escapes, name):
        changes = self.changes.get(name)
        if not (escapes and changes):
            return False
        for e_serial, e_loops in escapes:
            for c_serial, c_loops in changes:
                if e_serial <= c_serial:
                    return True
                for loop in set(e_loops).intersection(c_loops):
                    first = self.binds.get(loop, {}).get(name)
                    if first is None or first > c_serial:
                        return True
        return False


def _closure_reads(scope):
    """Names a nested def, class or lambda reads from the enclosing scope
    (those it binds itself, other than `nonlocal` ones, are its own)."""
    loads, own, shared = set(), set(), set()
    if type(scope) is not ast.ClassDef:
        args = scope.args
        own.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs
                   + [args.vararg, args.kwarg] if a is not None)
    body = scope.body if type(scope) is not ast.Lambda else [scope.body]
    for stmt in body:
        for node in ast.walk(stmt):
            if type(node) is ast.Name:
                (loads if type(node.ctx) is ast.Load else own).add(node.id)
            elif type(node) is ast.Nonlocal:
                shared.update(node.names)
    return (loads - own) | shared


def _bind(target, value, fresh, other, rebound):
    """A name bound to a new list (or no list) is `fresh`; one bound to what
    may be another list is `rebound(name)` (`fresh` only where no such
    binding may precede a change); a name an unpacking binds is `other`."""
    if isinstance(target, ast.Name):
        if new_list_or_no_list(value):
            fresh.add(target.id)
        else:
            rebound(target.id)
    elif (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
          and len(target.elts) == len(value.elts)
          and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts)):
        for t, v in zip(target.elts, value.elts):
            _bind(t, v, fresh, other, rebound)
    else:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                other.add(node.id)


def new_list_or_no_list(value):
    """Whether `value` evaluates to a new list, or to something no list is
    (a constant, a tuple, arithmetic)."""
    if isinstance(value, (ast.List, ast.ListComp, ast.Constant, ast.Tuple, ast.Dict, ast.Set,
                          ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.JoinedStr,
                          ast.Compare, ast.UnaryOp, ast.Lambda)):
        return True
    if isinstance(value, ast.BinOp):
        return True    # `a + b`, `[x] * n`: a new object whatever the operands
    if isinstance(value, ast.IfExp):
        return new_list_or_no_list(value.body) and new_list_or_no_list(value.orelse)
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name) and func.id in _NEW_LIST_CALLS:
            return True
        return (isinstance(func, ast.Attribute) and func.attr == "copy"
                and not value.args and not value.keywords)
    return False
