"""Canonicalize `return` inside if/loops into one exit with a flag and a value.

`return v` nested in a compound statement becomes `ret_val = v; ret_flag =
True` (plus `break` inside a loop); statements after anything that may have
returned run under `if not ret_flag:`; a function that may fall off its end
sets `ret_val = None` there (so a tensor `if` sees that path's None); the
function ends with one `return`. Afterwards control flow converters see only
structured code.

The function is annotated with RETURN_SLOTS (flag name, value name, and how
messages call the value), which the control-flow converters hand to the
runtime: the runtime never guesses roles from generated names.
"""
import ast

from .. import templates
from ..analysis import annos
from ..origin import ORIGIN
from .common import LOOP_NODES, SCOPE_NODES, contains, finish, user_functions, walk_scope

_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.Match)


def _may_return(stmt):
    return contains(stmt, ast.Return)


def _always_true(test):
    return isinstance(test, ast.Constant) and bool(test.value)


def _may_complete(stmts):
    """Whether running `stmts` may reach their end (conservative: True when unsure)."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return False
        if isinstance(stmt, ast.If) and not (_may_complete(stmt.body)
                                             or _may_complete(stmt.orelse)):
            return False
        if isinstance(stmt, ast.While) and _always_true(stmt.test) \
                and not contains(stmt.body, ast.Break, stop=SCOPE_NODES + LOOP_NODES):
            return False
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and not _may_complete(stmt.body):
            return False
        if isinstance(stmt, ast.Try) and not _try_may_complete(stmt):
            return False
    return True


def _try_may_complete(stmt):
    """A `try` ends normally only if its `finally` does, and its body (then
    its `else`) or one of its handlers does: `try: ... return a ... finally:
    cleanup()` with every path returning never reaches the code after it."""
    if not _may_complete(stmt.finalbody):
        return False
    return _may_complete(stmt.body + stmt.orelse) or any(
        _may_complete(handler.body) for handler in stmt.handlers)


def _return_lines(fn):
    lines = set()
    for node in walk_scope(fn.body):
        if isinstance(node, ast.Return):
            origin = getattr(node, ORIGIN, None)
            lines.add(origin.lineno if origin is not None else node.lineno)
    return sorted(lines)


def _value_label(fn, falls_through):
    """How messages name the returned value: the function and its return lines."""
    lines = _return_lines(fn)
    where = ("line " if len(lines) == 1 else "lines ") + ", ".join(map(str, lines))
    tail = " and None at its end" if falls_through else ""
    return f"the value returned by '{fn.name}' (return at {where}{tail})"


class _Canonicalizer:
    def __init__(self, flag, value):
        self.flag = flag
        self.value = value

    def block(self, stmts, in_loop, at_end=False):
        """`at_end`: these statements end the function, which returns None if
        they complete."""
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                value = stmt.value if stmt.value is not None else ast.Constant(value=None)
                new = templates.replace("value_var = value\nflag = True",
                                        value_var=self.value, value=value, flag=self.flag)
                if in_loop:
                    new.append(ast.Break())
                out += finish(new, stmt)
                return out  # the rest of the block is unreachable
            if not isinstance(stmt, SCOPE_NODES) and _may_return(stmt):
                out.append(self.compound(stmt, in_loop))
                rest = stmts[i + 1:]
                if in_loop:
                    if isinstance(stmt, LOOP_NODES):
                        out += finish(templates.replace("if flag:\n    break",
                                                        flag=self.flag), stmt)
                    continue
                rest = self.block(rest, in_loop, at_end)
                if rest:
                    out += finish(templates.replace("if not flag:\n    rest",
                                                    flag=self.flag, rest=rest), stmt)
                return out
            out.append(stmt)
        if at_end:
            out += templates.replace("value_var = None", value_var=self.value)
        return out

    def compound(self, stmt, in_loop):
        if isinstance(stmt, LOOP_NODES):
            stmt.body = self.block(stmt.body, True)
            stmt.orelse = self.block(stmt.orelse, in_loop)
        elif isinstance(stmt, ast.Match):
            for case in stmt.cases:
                case.body = self.block(case.body, in_loop)
        else:
            for field in ("body", "orelse", "finalbody"):
                if getattr(stmt, field, None):
                    setattr(stmt, field, self.block(getattr(stmt, field), in_loop))
            for handler in getattr(stmt, "handlers", []):
                handler.body = self.block(handler.body, in_loop)
        if hasattr(stmt, "body") and not stmt.body:
            stmt.body = [ast.Pass()]
        for case in getattr(stmt, "cases", ()):
            case.body = case.body or [ast.Pass()]
        return stmt


def _needs_canonicalization(fn):
    return any(isinstance(s, _COMPOUND) and _may_return(s) for s in fn.body)


def transform(node, ctx):
    for fn in user_functions(node):
        if not _needs_canonicalization(fn):
            continue
        flag, value = ctx.namer.new("ret_flag"), ctx.namer.new("ret_val")
        falls_through = _may_complete(fn.body)
        setattr(fn, annos.RETURN_SLOTS, (flag, value, _value_label(fn, falls_through)))
        body = _Canonicalizer(flag, value).block(fn.body, in_loop=False,
                                                 at_end=falls_through)
        head = templates.replace("flag = False\nvalue = _jst.UndefinedVar('return value')",
                                 flag=flag, value=value)
        tail = templates.replace("return _jst.return_value(value)", value=value)
        fn.body = finish(head, fn) + body + finish(tail, fn)
    return node
