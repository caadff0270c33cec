"""astor's fragments for a simple statement, written straight into a list.

astor prints through fragments (a `write` per token, a `Delimit` per
parenthesizable node) because a line longer than 79 columns is wrapped
between them afterwards.  Converted code is made of a few simple statement
kinds: the nonlocal declarations, state tuples, `x = x + 1` bodies and
runtime calls of the closures every if/while becomes.  `statement_fragments`
writes the very fragments astor's visitors write for those (the `(` of a
dropped parenthesis blanked in place, as `Delimit` leaves it), with astor's
rules for each node kind it knows (which parentheses are dropped, the
trailing comma of a 1-tuple, the quoting of a one-line string), without a
visitor call, a `write` call and a precedence attribute per node.
`printing` writes a line that fits as one fragment, and a longer one as
these fragments for astor's wrapping.  Anything else (a kind not listed
here, a string with a line break, a number astor spells its own way) raises
`Unsupported` and the statement is printed by astor's visitors as before
(tests/convert/test_printing.py compares the fragments, and the text, over
the converted test code).

astor reads a node's `_pp` (the precedence of its place) without setting it
in a few places: the value of an attribute or subscript, the called
expression, a starred value.  There only the kinds whose text does not
depend on it are accepted (`_PLAIN`), so no precedence left on a node by an
earlier print can change the fragments.  This path sets no `_pp` itself.
"""
import ast
import math

from astor.op_util import Precedence, get_op_precedence, get_op_symbol

__all__ = ["Unsupported", "statement_fragments"]


class Unsupported(Exception):
    """The statement holds something only astor's own printer spells."""


_COMMA, _CALL_ONE_ARG = Precedence.Comma, Precedence.call_one_arg
_TUPLE, _CONSTANT, _SUBSCRIPT = Precedence.Tuple, Precedence.Constant, Precedence.Subscript
_POW, _POW_RHS = Precedence.Pow, Precedence.PowRHS
_ASSIGN, _AUG_ASSIGN, _RETURN = Precedence.Assign, Precedence.AugAssign, Precedence.Return
_Name = ast.Name


def _name(node, pp, out):
    out.append(node.id)


def _constant(node, pp, out):
    value = node.value
    kind = value.__class__
    if kind is int or kind is bool or (kind is float and math.isfinite(value)):
        # astor's numeric case: the repr, delimited (`(-1).bit_length()`)
        out.append("(")
        out.append(repr(value))
        if _CONSTANT >= pp:
            out[-2] = ""
        else:
            out.append(")")
    elif kind is str:
        # astor quotes a string by `repr` unless it holds a line break or
        # starts its line (then a triple-quoted form may be chosen); no
        # statement here starts with one (see `_expression_statement`).
        if "\n" in value:
            raise Unsupported("multi-line string")
        out.append((getattr(node, "kind", None) or "") + repr(value))
    elif value is None or kind is bytes:
        out.append(repr(value))
    else:
        raise Unsupported(kind.__name__)


def _tuple(node, pp, out):
    elts = node.elts
    out.append("(")
    index = len(out)
    for k, elt in enumerate(elts):
        if k:
            out.append(", ")
        _expr(elt, _COMMA, out)
    if len(elts) == 1:
        out.append(",")
    if elts and _TUPLE >= pp:     # `()` keeps its parentheses
        out[index - 1] = ""
    else:
        out.append(")")


def _list(node, pp, out):
    out.append("[")
    for k, elt in enumerate(node.elts):
        if k:
            out.append(", ")
        _expr(elt, _COMMA, out)
    out.append("]")


def _binop(node, pp, out):
    op = node.op
    p = get_op_precedence(op)
    out.append("(")
    index = len(out)
    if op.__class__ is ast.Pow:
        _expr(node.left, _POW + 1, out)
        out.append(" ** ")
        _expr(node.right, _POW_RHS, out)
    else:
        _expr(node.left, p, out)
        out.append(get_op_symbol(op, " %s "))
        _expr(node.right, p + 1, out)
    if p >= pp:
        out[index - 1] = ""
    else:
        out.append(")")


def _compare(node, pp, out):
    p = get_op_precedence(node.ops[0])
    out.append("(")
    index = len(out)
    _expr(node.left, p + 1, out)
    for op, right in zip(node.ops, node.comparators):
        out.append(get_op_symbol(op, " %s "))
        _expr(right, p + 1, out)
    if p >= pp:
        out[index - 1] = ""
    else:
        out.append(")")


def _boolop(node, pp, out):
    p = get_op_precedence(node.op)
    symbol = get_op_symbol(node.op, " %s ")
    out.append("(")
    index = len(out)
    for k, value in enumerate(node.values):
        if k:
            out.append(symbol)
        _expr(value, p + 1, out)
    if p >= pp:
        out[index - 1] = ""
    else:
        out.append(")")


def _unaryop(node, pp, out):
    p = get_op_precedence(node.op)
    symbol = get_op_symbol(node.op)
    out.append("(")
    index = len(out)
    out.append(symbol)
    if symbol.isalpha():
        out.append(" ")
    _expr(node.operand, p, out)
    if p >= pp:
        out[index - 1] = ""
    else:
        out.append(")")


def _plain(node, out):
    """The fragments of a node in a place whose precedence astor leaves unset."""
    kind = node.__class__
    if kind is _Name:
        out.append(node.id)
    elif kind in _PLAIN:
        _KINDS[kind](node, None, out)
    else:
        raise Unsupported(f"{kind.__name__} where astor reads a stale precedence")


def _attribute(node, pp, out):
    _plain(node.value, out)
    out.append(".")
    out.append(node.attr)


def _subscript(node, pp, out):
    if node.slice.__class__ is ast.Slice:
        raise Unsupported("slice")
    _plain(node.value, out)
    out.append("[")
    _expr(node.slice, _SUBSCRIPT, out)
    out.append("]")


def _starred(node, pp, out):
    out.append("*")
    _plain(node.value, out)


def _call(node, pp, out):
    args, keywords = node.args, node.keywords
    place = _COMMA if len(args) + len(keywords) > 1 else _CALL_ONE_ARG
    _plain(node.func, out)
    out.append("(")
    comma = False
    for arg in args:
        if comma:
            out.append(", ")
        comma = True
        _expr(arg, place, out)
    for keyword in keywords:
        if comma:
            out.append(", ")
        comma = True
        name = keyword.arg
        if name:
            out.append(name)
            out.append("=")
        else:
            out.append("**")
        _expr(keyword.value, _COMMA, out)
    out.append(")")


_KINDS = {ast.Name: _name, ast.Constant: _constant, ast.Tuple: _tuple, ast.List: _list,
          ast.BinOp: _binop, ast.Compare: _compare, ast.BoolOp: _boolop,
          ast.UnaryOp: _unaryop, ast.Attribute: _attribute, ast.Subscript: _subscript,
          ast.Starred: _starred, ast.Call: _call}
# Kinds whose fragments are the same at every precedence (no parentheses of their own).
_PLAIN = frozenset({ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.List})


def _expr(node, pp, out):
    kind = node.__class__
    if kind is _Name:       # a third of the nodes: no call
        out.append(node.id)
        return
    write = _KINDS.get(kind)
    if write is None:
        raise Unsupported(kind.__name__)
    write(node, pp, out)


def _assign(node, out):
    for target in node.targets:
        _expr(target, _ASSIGN, out)
        out.append(" = ")
    _expr(node.value, _ASSIGN, out)


def _aug_assign(node, out):
    _expr(node.target, _AUG_ASSIGN, out)
    out.append(get_op_symbol(node.op, " %s= "))
    _expr(node.value, _AUG_ASSIGN, out)


def _expression_statement(node, out):
    # A call only: its text starts with a name, never with a string astor
    # might triple-quote (a string starting the line is quoted by context).
    if node.value.__class__ is not ast.Call:
        raise Unsupported("expression statement other than a call")
    _expr(node.value, Precedence.Expr, out)


def _return(node, out):
    out.append("return")
    if node.value is not None:
        out.append(" ")
        _expr(node.value, _RETURN, out)


def _declaration(word):
    def declaration(node, out):
        out.append(word)
        out.append(", ".join(node.names))
    return declaration


def _keyword(word):
    def keyword(node, out):
        out.append(word)
    return keyword


_STATEMENTS = {ast.Assign: _assign, ast.AugAssign: _aug_assign, ast.Expr: _expression_statement,
               ast.Return: _return, ast.Nonlocal: _declaration("nonlocal "),
               ast.Global: _declaration("global "), ast.Pass: _keyword("pass"),
               ast.Break: _keyword("break"), ast.Continue: _keyword("continue")}


def statement_fragments(node):
    """The fragments astor writes for the simple statement `node` (after its
    line break and indentation): joined, its line before any wrapping.

    Raises Unsupported where only astor's visitors give them.
    """
    try:
        kind = _STATEMENTS[node.__class__]
    except KeyError:
        raise Unsupported(node.__class__.__name__) from None
    out = []
    kind(node, out)
    return out
