"""Canonicalize `break` / `continue` (and loop `else`) into flag variables.

`break` becomes `brk = True` and the loop test gains `not brk and ...` (for a
`for`, the flag is recorded in BREAK_FLAG and checked by the for converter);
a `while` test that binds names with `:=` is evaluated by statements instead
(before the loop, then at the end of each iteration not broken out of), so
the binding is never inside the lazy side of that `and`;
`continue` becomes `cont = True`; statements after one that may have set a
flag run under `if not <flag>:`.  A loop's `else` runs after it under
`if not brk:`.  Inner loops are processed first, so every remaining
`break`/`continue` found in a loop body belongs to that loop.
"""
import ast
import copy

from .. import templates
from ..analysis import annos
from ..traversal import StatementTransformer
from .common import AFTER_EXIT, LOOP_NODES, SCOPE_NODES, contains, finish, walrus_targets

_STOP = SCOPE_NODES + LOOP_NODES


class _Guarder:
    """Rewrites one loop body given its flag names (None when not needed)."""

    def __init__(self, brk, cont):
        self.flags = {ast.Break: brk, ast.Continue: cont}

    def _flags_set_by(self, stmt):
        return [flag for kind, flag in self.flags.items()
                if flag and contains(stmt, kind, stop=_STOP)]

    def block(self, stmts):
        out = []
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, (ast.Break, ast.Continue)):
                out += finish(templates.replace("flag = True",
                                                flag=self.flags[type(stmt)]), stmt)
                return out
            flags = [] if isinstance(stmt, _STOP) else self._flags_set_by(stmt)
            if not flags:
                out.append(stmt)
                continue
            out.append(self.compound(stmt))
            rest = self.block(stmts[i + 1:])
            if rest:
                test = ast.UnaryOp(op=ast.Not(), operand=(
                    ast.Name(id=flags[0], ctx=ast.Load()) if len(flags) == 1 else
                    ast.BoolOp(op=ast.Or(), values=[ast.Name(id=f, ctx=ast.Load())
                                                    for f in flags])))
                guard = templates.replace("if test:\n    rest", test=test, rest=rest)
                for node in guard:
                    # the rest of a trip that a tensor `break` may skip: a value it
                    # changes may change shape there (a decoder's `cur = nxt[:, None]`
                    # after a first trip on the whole prompt): see transformers.ifelse
                    setattr(node, AFTER_EXIT, True)
                out += finish(guard, stmt)
            return out
        return out

    def compound(self, stmt):
        if isinstance(stmt, ast.Match):
            for case in stmt.cases:
                case.body = self.block(case.body) or [ast.Pass()]
            return stmt
        for field in ("body", "orelse", "finalbody"):
            if getattr(stmt, field, None):
                new = self.block(getattr(stmt, field))
                setattr(stmt, field, new or ([ast.Pass()] if field == "body" else []))
        for handler in getattr(stmt, "handlers", []):
            handler.body = self.block(handler.body) or [ast.Pass()]
        return stmt


class _LoopVisitor(StatementTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def _visit_loop(self, node):
        self.generic_visit(node)  # inner loops first
        has_break = contains(node.body, ast.Break, stop=_STOP)
        has_continue = contains(node.body, ast.Continue, stop=_STOP)
        if not (has_break or has_continue or node.orelse):
            return node
        brk = self.ctx.namer.new("break") if has_break else None
        cont = self.ctx.namer.new("continue") if has_continue else None
        before, after, retest = [], [], []
        if brk:
            before = templates.replace("brk = False", brk=brk)
            if isinstance(node, ast.While) and walrus_targets([node.test]):
                before, retest = self._test_by_statements(node, brk, before)
            elif isinstance(node, ast.While):
                node.test = templates.replace_as_expression(
                    "not brk and test", brk=brk, test=node.test)
            else:
                setattr(node, annos.BREAK_FLAG, brk)
        if has_break or has_continue:
            body = _Guarder(brk, cont).block(node.body)
            if cont:
                before += templates.replace("cont = False", cont=cont)
                body = templates.replace("cont = False", cont=cont) + body
            node.body = (body + retest) or [ast.Pass()]
        if node.orelse:
            after = (templates.replace("if not brk:\n    orelse", brk=brk, orelse=node.orelse)
                     if brk else node.orelse)
            node.orelse = []
        return finish(before, node) + [node] + finish(after, node)

    visit_While = visit_For = _visit_loop

    def _test_by_statements(self, node, brk, before):
        """`while (y := f()) < k: ... break` as `t = (y := f()) < k` before the
        loop, `while t:`, and `t = ...` again at the end of each iteration that
        did not break (a `continue` still reaches it): the test runs exactly when
        Python runs it, and its `:=` targets are plain assignments the `if` and
        `while` converters carry. Returns (statements before, the re-test)."""
        test = self.ctx.namer.new("test")
        first = templates.replace("test = expr", test=test, expr=copy.deepcopy(node.test))
        retest = templates.replace("if brk:\n    test = False\nelse:\n    test = expr",
                                   brk=brk, test=test, expr=node.test)
        node.test = ast.Name(id=test, ctx=ast.Load())
        return before + finish(first, node), finish(retest, node)


def transform(node, ctx):
    return _LoopVisitor(ctx).visit(node)
