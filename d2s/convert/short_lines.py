"""astor's text for a short one-line statement, built as one string.

astor prints through fragments (a `write` per token, a `Delimit` per
parenthesizable node) because a line longer than 79 columns is wrapped
between them afterwards.  Most lines of converted code are short: the
nonlocal declarations, state tuples, `x = x + 1` bodies and runtime calls of
the closures every if/while becomes.  For those the fragments are only
joined again, so `statement_text` builds the line directly, with astor's
rules for each node kind it knows (which parentheses are dropped, the
trailing comma of a 1-tuple, the quoting of a one-line string), and
`printing` writes it as one fragment when it fits in the line.  Anything
else (a kind not listed here, a string with a line break, a number astor
spells its own way) raises `Unsupported` and the statement is printed by
astor's fragments as before: the text is the same either way
(tests/convert/test_printing.py compares both over the converted test code).

astor reads a node's `_pp` (the precedence of its place) without setting it
in a few places: the value of an attribute or subscript, the called
expression, a starred value.  There only the kinds whose text does not
depend on it are accepted (`_PLAIN`), so no precedence left on a node by an
earlier print can change the text.  This path sets no `_pp` itself.
"""
import ast
import math

from astor.op_util import Precedence, get_op_precedence, get_op_symbol

__all__ = ["Unsupported", "statement_text"]


class Unsupported(Exception):
    """The statement holds something only astor's own printer spells."""


_COMMA, _CALL_ONE_ARG = Precedence.Comma, Precedence.call_one_arg
_TUPLE, _CONSTANT, _SUBSCRIPT = Precedence.Tuple, Precedence.Constant, Precedence.Subscript
_POW, _POW_RHS = Precedence.Pow, Precedence.PowRHS
_ASSIGN, _AUG_ASSIGN, _RETURN = Precedence.Assign, Precedence.AugAssign, Precedence.Return


def _name(node, pp):
    return node.id


def _constant(node, pp):
    value = node.value
    kind = value.__class__
    if kind is int or kind is bool or (kind is float and math.isfinite(value)):
        # astor's numeric case: the repr, in parentheses unless the place
        # binds looser than a number (`(-1).bit_length()`)
        text = repr(value)
        return text if _CONSTANT >= pp else "(" + text + ")"
    if kind is str:
        # astor quotes a string by `repr` unless it holds a line break or
        # starts its line (then a triple-quoted form may be chosen); callers
        # never put a string first on the line (see `_first_is_safe`).
        if "\n" in value:
            raise Unsupported("multi-line string")
        return (node.kind or "") + repr(value)
    if value is None or kind is bytes:
        return repr(value)
    raise Unsupported(kind.__name__)


def _tuple(node, pp):
    elts = node.elts
    if not elts:
        return "()"
    text = ", ".join([_expr(elt, _COMMA) for elt in elts])
    if len(elts) == 1:
        text += ","
    return text if _TUPLE >= pp else "(" + text + ")"


def _list(node, pp):
    return "[" + ", ".join([_expr(elt, _COMMA) for elt in node.elts]) + "]"


def _binop(node, pp):
    op = node.op
    p = get_op_precedence(op)
    if op.__class__ is ast.Pow:
        left, right = _expr(node.left, _POW + 1), _expr(node.right, _POW_RHS)
    else:
        left, right = _expr(node.left, p), _expr(node.right, p + 1)
    text = left + get_op_symbol(op, " %s ") + right
    return text if p >= pp else "(" + text + ")"


def _compare(node, pp):
    p = get_op_precedence(node.ops[0])
    parts = [_expr(node.left, p + 1)]
    for op, right in zip(node.ops, node.comparators):
        parts.append(get_op_symbol(op, " %s "))
        parts.append(_expr(right, p + 1))
    text = "".join(parts)
    return text if p >= pp else "(" + text + ")"


def _boolop(node, pp):
    p = get_op_precedence(node.op)
    text = get_op_symbol(node.op, " %s ").join([_expr(value, p + 1) for value in node.values])
    return text if p >= pp else "(" + text + ")"


def _unaryop(node, pp):
    p = get_op_precedence(node.op)
    symbol = get_op_symbol(node.op)
    text = symbol + (" " if symbol.isalpha() else "") + _expr(node.operand, p)
    return text if p >= pp else "(" + text + ")"


def _plain(node):
    """The text of a node in a place whose precedence astor leaves unset."""
    if node.__class__ not in _PLAIN:
        raise Unsupported(f"{node.__class__.__name__} where astor reads a stale precedence")
    return _KINDS[node.__class__](node, None)


def _attribute(node, pp):
    return _plain(node.value) + "." + node.attr


def _subscript(node, pp):
    if node.slice.__class__ is ast.Slice:
        raise Unsupported("slice")
    return _plain(node.value) + "[" + _expr(node.slice, _SUBSCRIPT) + "]"


def _starred(node, pp):
    return "*" + _plain(node.value)


def _call(node, pp):
    args, keywords = node.args, node.keywords
    place = _COMMA if len(args) + len(keywords) > 1 else _CALL_ONE_ARG
    parts = [_expr(arg, place) for arg in args]
    for keyword in keywords:
        name = keyword.arg
        parts.append((name + "=" if name else "**") + _expr(keyword.value, _COMMA))
    return _plain(node.func) + "(" + ", ".join(parts) + ")"


_KINDS = {ast.Name: _name, ast.Constant: _constant, ast.Tuple: _tuple, ast.List: _list,
          ast.BinOp: _binop, ast.Compare: _compare, ast.BoolOp: _boolop,
          ast.UnaryOp: _unaryop, ast.Attribute: _attribute, ast.Subscript: _subscript,
          ast.Starred: _starred, ast.Call: _call}
# Kinds whose text is the same at every precedence (no parentheses of their own).
_PLAIN = frozenset({ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.List})


def _expr(node, pp):
    try:
        kind = _KINDS[node.__class__]
    except KeyError:
        raise Unsupported(node.__class__.__name__) from None
    return kind(node, pp)


def _assign(node):
    return "".join([_expr(target, _ASSIGN) + " = " for target in node.targets]) + _expr(
        node.value, _ASSIGN)


def _aug_assign(node):
    return _expr(node.target, _AUG_ASSIGN) + get_op_symbol(node.op, " %s= ") + _expr(
        node.value, _AUG_ASSIGN)


def _expression_statement(node):
    # A call only: its text starts with a name, never with a string astor
    # might triple-quote (a string starting the line is quoted by context).
    if node.value.__class__ is not ast.Call:
        raise Unsupported("expression statement other than a call")
    return _expr(node.value, Precedence.Expr)


def _return(node):
    if node.value is None:
        return "return"
    return "return " + _expr(node.value, _RETURN)


_STATEMENTS = {ast.Assign: _assign, ast.AugAssign: _aug_assign, ast.Expr: _expression_statement,
               ast.Return: _return,
               ast.Nonlocal: lambda node: "nonlocal " + ", ".join(node.names),
               ast.Global: lambda node: "global " + ", ".join(node.names),
               ast.Pass: lambda node: "pass", ast.Break: lambda node: "break",
               ast.Continue: lambda node: "continue"}


def statement_text(node):
    """The line astor prints for the simple statement `node` (before wrapping).

    Raises Unsupported where only astor's fragments give the text.
    """
    try:
        kind = _STATEMENTS[node.__class__]
    except KeyError:
        raise Unsupported(node.__class__.__name__) from None
    return kind(node)
