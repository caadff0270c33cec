"""Liveness: which names may be read after each statement of a function.

Runs backwards over structured statements (no CFG is needed because `break`,
`continue` and nested `return` are canonicalized away before this runs).
Loops iterate to a fixpoint.  Annotates LIVE_IN / LIVE_OUT on statements,
LIVE_HEAD on loops and MODIFIED on If/While/For (see `annos`).

A name the function declares `nonlocal` is read after the function returns
(by the scope that owns it), so it is live wherever the function may exit
(`exits`): a tensor `if` that assigns it must give it out as an output.
"""
import ast

from . import annos
from .activity import declared_nonlocals, header_nodes, reads_writes

__all__ = ["annotate_liveness", "live_in_block"]

_TERMINATORS = (ast.Return, ast.Raise)


def live_in_block(stmts, live_out, exits=frozenset()):
    """Live-in of a statement list given its live-out; annotates each stmt.
    `exits`: the names live where the function returns or raises."""
    live = frozenset(live_out)
    for stmt in reversed(stmts):
        setattr(stmt, annos.LIVE_OUT, live)
        live = frozenset(_live_in_stmt(stmt, live, exits))
        setattr(stmt, annos.LIVE_IN, live)
    return live


def _reads(nodes):
    return reads_writes(nodes)[0] if nodes else set()


def _live_in_stmt(stmt, out, exits):
    if isinstance(stmt, ast.If):
        setattr(stmt, annos.MODIFIED, frozenset(reads_writes(stmt.body + stmt.orelse)[1]))
        return (_reads([stmt.test]) | live_in_block(stmt.body, out, exits)
                | live_in_block(stmt.orelse, out, exits))
    if isinstance(stmt, ast.While):
        test_reads, test_writes = reads_writes(stmt.test)
        return _live_in_loop(stmt, out, test_reads, test_writes, exits)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        target_reads, target_writes = reads_writes(stmt.target)
        head = _live_in_loop(stmt, out, target_reads, target_writes, exits)
        return head | _reads([stmt.iter])
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        var_reads, var_writes = reads_writes(
            [i.optional_vars for i in stmt.items if i.optional_vars is not None])
        body_in = live_in_block(stmt.body, out, exits)
        return _reads(header_nodes(stmt)) | var_reads | (body_in - var_writes)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        final_in = live_in_block(stmt.finalbody, out, exits)
        handlers_in = set()
        for handler in stmt.handlers:
            h_in = live_in_block(handler.body, final_in, exits)
            if handler.name:
                h_in = h_in - {handler.name}
            handlers_in |= h_in | _reads([handler.type] if handler.type else [])
        else_in = live_in_block(stmt.orelse, final_in, exits)
        # An exception may leave the body at any point: handler needs stay live.
        body_in = live_in_block(stmt.body, else_in | handlers_in | final_in, exits)
        return body_in | handlers_in | final_in
    if isinstance(stmt, ast.Match):
        live = set(out)
        for case in stmt.cases:
            case_in = live_in_block(case.body, out, exits)
            pat_reads, pat_writes = reads_writes(case.pattern)
            guard = _reads([case.guard]) if case.guard else set()
            live |= pat_reads | ((case_in | guard) - pat_writes)
        return live | _reads([stmt.subject])
    if isinstance(stmt, _TERMINATORS):
        return _reads([stmt]) | exits
    reads, writes = reads_writes(stmt)
    return (set(out) - writes) | reads


def _live_in_loop(loop, out, head_reads, head_writes, exits):
    """Fixpoint of: head = head_reads | out-of-orelse | (body_in(head) - head_writes)."""
    flag = getattr(loop, annos.BREAK_FLAG, None)
    extra = {flag} if flag else set()
    orelse_in = live_in_block(loop.orelse, out, exits)
    head = set(head_reads) | extra | set(orelse_in) | set(out)
    while True:
        body_in = live_in_block(loop.body, head, exits)
        new_head = set(head_reads) | extra | set(orelse_in) | set(out) | (body_in - head_writes)
        if new_head == head:
            break
        head = new_head
    modified = reads_writes(loop.body + loop.orelse)[1] | set(head_writes)
    setattr(loop, annos.MODIFIED, frozenset(modified))
    setattr(loop, annos.LIVE_HEAD, frozenset(head))
    return head


def annotate_liveness(fn_node):
    """Annotate every statement of `fn_node`'s body (nested defs excluded)."""
    exits = frozenset(declared_nonlocals(fn_node))
    live_in_block(fn_node.body, exits, exits)
