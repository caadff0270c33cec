"""Canonicalize `return` inside if/loops into one exit with a flag and a value.

`return v` nested in a compound statement becomes `ret_val = v; ret_flag =
True` (plus `break` inside a loop); statements after anything that may have
returned run under `if not ret_flag:`; the function ends with one `return`.
Afterwards control flow converters see only structured code.
"""
import ast

from .. import templates
from .common import LOOP_NODES, SCOPE_NODES, contains, finish, user_functions

_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.Match)


def _may_return(stmt):
    return contains(stmt, ast.Return)


class _Canonicalizer:
    def __init__(self, flag, value):
        self.flag = flag
        self.value = value

    def block(self, stmts, in_loop):
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
                rest = self.block(rest, in_loop)
                if rest:
                    out += finish(templates.replace("if not flag:\n    rest",
                                                    flag=self.flag, rest=rest), stmt)
                return out
            out.append(stmt)
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
        for field in ("body",):
            if not getattr(stmt, field):
                setattr(stmt, field, [ast.Pass()])
        return stmt


def _needs_canonicalization(fn):
    return any(isinstance(s, _COMPOUND) and _may_return(s) for s in fn.body)


def transform(node, ctx):
    for fn in user_functions(node):
        if not _needs_canonicalization(fn):
            continue
        flag, value = ctx.namer.new("ret_flag"), ctx.namer.new("ret_val")
        body = _Canonicalizer(flag, value).block(fn.body, in_loop=False)
        head = templates.replace("flag = False\nvalue = _jst.UndefinedVar('return value')",
                                 flag=flag, value=value)
        tail = templates.replace("return _jst.return_value(value)", value=value)
        fn.body = finish(head, fn) + body + finish(tail, fn)
    return node
