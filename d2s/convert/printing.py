"""Print converted ASTs as Python source, once, noting where each statement lands.

astor gives the project's house style (its long-line wrapping included).
Where astor cannot print a tree, `ast.unparse` prints it instead, decided
without re-parsing: astor raises on syntax it has no printer for (`match`,
`except*`, `type` aliases); the few node kinds it would print wrongly raise
here too (`_RecordingGenerator`); and text that does not compile makes the
loader ask for `print_tree(..., fallback=True)`.  Printing the 282,000
top-level statements of the ~17,500 modules installed with Python 3.11 here
(standard library and site-packages) found no other case where astor's text
parses to a different tree, except `del a, b` wrapped as `del (a, b)`, which
means the same.

The same pass that prints reports, for each printed line, the statement
that starts there (`Printed.statements`), so the origin map needs no second
parse of the text; and which lines continue a multi-line string
(`Printed.string_lines`), so the text can be indented exactly.

Printing is a fifth of converting a large function: every if/while becomes
four closures and a runtime call, tens of nodes a line.  The visitors of the
node kinds that make up most of converted code (plain defs, calls, tuples,
numbers, operators, comparisons, assignments, `nonlocal`, `return`) and
astor's `write` are written here without astor's per-node helpers (a
`Delimit` object, a closure per call, generic precedence setting), writing
the very fragments astor writes: fragments, not only text, since wrapping a
long line splits it between them (tests/convert/test_printing.py compares
the fragments).  The simple statements go further: `short_lines` writes
their fragments into a list without a visitor per node, and a line that
needs no wrapping is written as one fragment (a plain def's header too).
"""
import ast
import math
from collections import namedtuple

from astor.code_gen import SourceGenerator, set_precedence
from astor.op_util import Precedence, get_op_precedence, get_op_symbol
from astor.source_repr import split_lines

from .short_lines import Unsupported, statement_fragments

__all__ = ["ast_to_source", "print_tree", "Printed"]

Printed = namedtuple("Printed", "text statements string_lines")
"""text: the source; statements: {line: the first statement node printed on
it} (lines a statement continues on are absent); string_lines: the lines that
lie inside a multi-line string token (never re-indented)."""

_MAX_LINE = 79  # astor's wrapping width


class _AstorCannotPrint(Exception):
    """A node astor would print as different code."""


_BRACED = (ast.Dict, ast.DictComp, ast.Set, ast.SetComp)
_ESCAPED = ("\\", "'", '"', "\n", "\r")


def _fstring_printable(node):
    """Whether astor prints this f-string faithfully.

    astor writes a replacement field as `{` + expression text, so a braced
    expression (`{ {1, 2} }`) would read back as an escaped brace, and string
    literals inside a field are escaped a second time by the quoting of the
    whole f-string (a syntax error before Python 3.12, another value after).
    """
    for part in ast.walk(node):
        if isinstance(part, ast.FormattedValue):
            if isinstance(part.value, _BRACED):
                return False
            for sub in ast.walk(part.value):
                if (isinstance(sub, ast.Constant) and isinstance(sub.value, (str, bytes))
                        and any(c in str(sub.value) for c in _ESCAPED)):
                    return False
    return True


_COMMA, _CALL_ONE_ARG, _HIGHEST = Precedence.Comma, Precedence.call_one_arg, Precedence.highest
_POW, _POW_RHS = Precedence.Pow, Precedence.PowRHS
# What astor's `set_precedence(node, ...)` gives the parts of these statements.
_ASSIGN, _EXPR, _RETURN = (get_op_precedence(kind()) for kind in (ast.Assign, ast.Expr,
                                                                   ast.Return))
_VISITORS = {}   # node class -> _RecordingGenerator's (unbound) visit method


def _short(visitor):
    """A statement visitor writing `short_lines.statement_fragments`, as one
    fragment where the line fits unwrapped; astor's `visitor` for the rest."""

    def visit(self, node):
        if self.short_lines:
            try:
                fragments = statement_fragments(node)
            except Unsupported:
                fragments = None
            if fragments is not None:
                self.newline(node)
                if self.new_lines:
                    self._text("")           # the line break and indentation
                if self.join_short and 4 * self.indentation + sum(
                        map(len, fragments)) <= _MAX_LINE:
                    self.result.append("".join(fragments))
                else:
                    self.result.extend(fragments)
                return
        visitor(self, node)
    visit.__name__ = visitor.__name__
    return visit


class _RecordingGenerator(SourceGenerator):
    """astor's generator, noting where each line break and statement begins.

    astor emits a line break lazily: `newline()` asks for one and the next
    write appends it as a fragment of `result`.  So `len(result)` at each
    `newline()` call is the index of that break (nothing is appended in
    between), and a call with a node marks the statement printed after it.
    """

    # Simple statements by `short_lines` (else astor's visitors), a line that
    # fits joined into one fragment (else the fragments astor would write).
    short_lines = True
    join_short = True

    def __init__(self):
        super().__init__(" " * 4)
        self.breaks = []       # result indices of line-break fragments
        self.starts = {}       # result index -> first statement node printed there
        self._elifs = []       # (indentation, [If nodes printed as `elif`, last first])
        self.write = self._make_write()

    def _make_write(self):
        """astor's `write` closure, asking an item first whether it is text.

        An item written is a node (visited), a callable (called) or text
        (appended after any pending line break); astor asks whether it is a
        node, then whether it is callable, and most items are text.  Same
        steps, same fragments; a node goes to its visitor directly.
        """
        result = self.result
        append = result.append
        visitors = _VISITORS
        visit = self.visit
        AST = ast.AST

        def text(item):
            if self.new_lines:
                append("\n" * self.new_lines)
                self.colinfo = len(result), 0
                append(self.indent_with * self.indentation)
                self.new_lines = 0
            if item:
                append(item)

        def write(*params):
            for item in params:
                if item.__class__ is str:
                    if self.new_lines:
                        text(item)
                    elif item:
                        append(item)
                elif isinstance(item, AST):
                    method = visitors.get(item.__class__)
                    if method is None:
                        visit(item)
                    else:
                        method(self, item)
                elif callable(item):
                    item()
                else:
                    text(item)
        self._text = text
        return write

    def visit_Name(self, node):
        self._text(node.id)

    def visit(self, node):
        # astor builds the method name and looks it up per node; once per
        # node class is enough (about 10% of printing).
        try:
            method = _VISITORS[node.__class__]
        except KeyError:
            method = getattr(_RecordingGenerator, "visit_" + node.__class__.__name__, None)
            if method is None:  # as astor: no printer for this node kind
                raise AttributeError(
                    f"No defined handler for node of type {node.__class__.__name__}")
            _VISITORS[node.__class__] = method
        return method(self, node)

    def newline(self, node=None, extra=0):
        # SourceGenerator.newline without its line comments (never asked for here)
        if self.new_lines <= extra:
            self.new_lines = 1 + extra
        if node is None and self._elifs:
            indentation, pending = self._elifs[-1]
            if indentation == self.indentation and pending:
                node = pending.pop()
        index = len(self.result)
        self.breaks.append(index)
        if node is not None and index not in self.starts:
            self.starts[index] = node

    def visit_If(self, node):
        # astor prints a chain `if/elif/elif` in one visit, breaking the line
        # before each `elif` (at this indentation) without naming its If.
        chain = []
        tail = node
        while len(tail.orelse) == 1 and isinstance(tail.orelse[0], ast.If):
            tail = tail.orelse[0]
            chain.append(tail)
        if not chain:
            return SourceGenerator.visit_If(self, node)
        self._elifs.append((self.indentation, chain[::-1]))
        try:
            SourceGenerator.visit_If(self, node)
        finally:
            self._elifs.pop()

    def visit_JoinedStr(self, node):
        if not _fstring_printable(node):
            raise _AstorCannotPrint("f-string")
        SourceGenerator.visit_JoinedStr(self, node)

    def visit_FunctionDef(self, node, is_async=False):
        if getattr(node, "type_params", None):  # Python 3.12 `def f[T]()`
            raise _AstorCannotPrint("type parameters")
        args = node.args
        if (is_async or node.decorator_list or node.returns is not None or args.posonlyargs
                or args.vararg or args.kwonlyargs or args.kwarg or args.defaults
                or any(arg.annotation is not None for arg in args.args)):
            return SourceGenerator.visit_FunctionDef(self, node, is_async)
        # A def with plain parameters only, as every closure conversion makes:
        # astor's steps (decorators, statement, visit_arguments, visit_arg,
        # body) inline, writing the same fragments.
        write = self.write
        self.newline(extra=1 if self.indentation else 2)
        self.newline(node)
        if self.short_lines and self.join_short:
            header = "def " + node.name + "(" + ", ".join([a.arg for a in args.args]) + "):"
            if 4 * self.indentation + len(header) <= _MAX_LINE:
                self._text(header)
                self._body(node)
                return
        write("def " + node.name, "(")
        for k, arg in enumerate(args.args):
            if k:
                write(", ")
            write(arg.arg)
        write(")")
        write(":")
        self._body(node)

    def _body(self, node):
        self.indentation += 1
        self.write(*node.body)
        self.indentation -= 1
        if not self.indentation:
            self.newline(extra=2)

    def visit_Call(self, node):
        # astor's visit_Call without its per-call closure and the lookups of
        # `starargs`/`kwargs` (Python 2 fields, never set): the same fragments.
        write = self.write
        args, keywords = node.args, node.keywords
        set_precedence(_COMMA if len(args) + len(keywords) > 1 else _CALL_ONE_ARG, *args)
        self.visit(node.func)
        write("(")
        comma = False
        for arg in args:
            if comma:
                write(", ")
            comma = True
            write(arg)
        set_precedence(_COMMA, *(keyword.value for keyword in keywords))
        for keyword in keywords:
            if comma:
                write(", ")
            comma = True
            name = keyword.arg or ""   # None: `**mapping`
            write(name, "=" if name else "**", keyword.value)
        write(")")

    def _delimited(self, node, op=None):
        """astor's `Delimit(self, node[, op])` entered: writes `(`; the index just
        after it, the precedence of `op or node` and whether the parenthesis is
        dropped (the node binds tighter than its place)."""
        self.write("(")
        p = get_op_precedence(op or node)
        return len(self.result), p, p >= getattr(node, "_pp", _HIGHEST)

    def _close(self, index, discard):
        """astor's `Delimit` exited."""
        if discard:
            self.result[index - 1] = ""
        else:
            self.result.append(")")

    def visit_Tuple(self, node):
        # astor's visit_Tuple and comma_list, without a Delimit object per tuple
        index, _, discard = self._delimited(node)
        elts = node.elts
        set_precedence(_COMMA, *elts)
        write = self.write
        for k, item in enumerate(elts):
            write(", " if k else "", item)
        write("," if len(elts) == 1 else "")
        self._close(index, discard and elts)   # `()` is never dropped

    def visit_Constant(self, node):
        value = node.value
        kind = value.__class__
        if kind is int or (kind is float and math.isfinite(value)):
            # astor's numeric case: the repr, delimited (`(-1).bit_length()`)
            index, _, discard = self._delimited(node)
            self.write(repr(value))
            self._close(index, discard)
        elif (kind is str and not self.new_lines and "\n" not in value
              and getattr(node, "_pp", _HIGHEST) >= _ASSIGN and self._line_has_text()):
            # astor's `pretty_string` gives the repr of a one-line string
            # that does not start its line, in any place binding at least as
            # tightly as an assignment's value (no triple quotes)
            self.result.append((getattr(node, "kind", None) or "") + repr(value))
        else:
            SourceGenerator.visit_Constant(self, node)

    def _line_has_text(self):
        """Whether the line being written holds more than its indentation
        (astor's `current_line.strip()`, without joining the line)."""
        result = self.result
        start, column = self.colinfo
        for index in range(len(result) - 1, start, -1):
            if result[index].strip():
                return True
        return start < len(result) and bool(result[start][column:].strip())

    def visit_BinOp(self, node):
        op, left, right = node.op, node.left, node.right
        index, p, discard = self._delimited(node, op)
        if op.__class__ is ast.Pow:
            left._pp, right._pp = _POW + 1, _POW_RHS
        else:
            left._pp, right._pp = p, p + 1
        self.write(left, get_op_symbol(op, " %s "), right)
        self._close(index, discard)

    def visit_Compare(self, node):
        index, p, discard = self._delimited(node, node.ops[0])
        set_precedence(p + 1, node.left, *node.comparators)
        self.visit(node.left)
        for op, right in zip(node.ops, node.comparators):
            self.write(get_op_symbol(op, " %s "), right)
        self._close(index, discard)

    def visit_Assign(self, node):
        set_precedence(_ASSIGN, node.value, *node.targets)
        self.newline(node)
        for target in node.targets:
            self.write(target, " = ")
        self.visit(node.value)

    def visit_Expr(self, node):
        node.value._pp = _EXPR
        self.newline(node)
        self.visit(node.value)

    def visit_Return(self, node):
        self.newline(node)
        self.write("return")
        if node.value is not None:
            node.value._pp = _RETURN
            self.write(" ", node.value)

    def visit_Nonlocal(self, node):
        self.newline(node)
        self.write("nonlocal ", ", ".join(node.names))

    # The simple statements: one fragment when short (see short_lines).
    visit_Assign = _short(visit_Assign)
    visit_Expr = _short(visit_Expr)
    visit_Return = _short(visit_Return)
    visit_Nonlocal = _short(visit_Nonlocal)
    visit_AugAssign = _short(SourceGenerator.visit_AugAssign)
    visit_Global = _short(SourceGenerator.visit_Global)
    visit_Pass = _short(SourceGenerator.visit_Pass)
    visit_Break = _short(SourceGenerator.visit_Break)
    visit_Continue = _short(SourceGenerator.visit_Continue)

    def visit_ClassDef(self, node):
        if getattr(node, "type_params", None):
            raise _AstorCannotPrint("type parameters")
        SourceGenerator.visit_ClassDef(self, node)


def _lay_out(fragments, first_line, has_strings):
    """A logical line that is long or holds a multi-line string, as astor lays it out.

    Returns its text and the lines (numbered from `first_line`, the line its
    leading break ends) that continue a multi-line string.  Like astor, wrap
    unless the last fragment holds a newline; wrapping adds pure-newline
    fragments only, so any other fragment with a newline is a string (none
    unless `has_strings`: the line's text past its leading break has one).
    """
    body = fragments[1:] if not fragments[0].strip("\n") else fragments
    if sum(map(len, body)) > _MAX_LINE and not body[-1].find("\n") > 0:
        fragments = split_lines(list(fragments) + ["\n"])[:-1]
    if not has_strings:
        return "".join(fragments), ()
    string_lines = []
    line = first_line
    for fragment in fragments:
        count = fragment.count("\n")
        if count and fragment.strip("\n"):
            string_lines.extend(range(line + 1, line + count + 1))
        line += count
    return "".join(fragments), string_lines


def _print_with_astor(tree):
    gen = _RecordingGenerator()
    try:
        gen.visit(tree)
    finally:
        # The generator holds its own `write` and `_text` closures, reference
        # cycles through which `starts` would keep the whole converted tree
        # alive until the cyclic collector ran (a young-generation scan over
        # every node, once the build re-enables the collector): break them.
        del gen.write, gen._text
    result = gen.result
    if result and not result[0].strip("\n"):
        result[0] = ""         # no blank lines before the first statement
    n = len(result)
    bounds = sorted({b for b in gen.breaks if 0 < b < n})
    bounds.append(n)
    starts = gen.starts
    pieces, statements, string_lines = [], {}, []
    line = 1                   # the line the next piece starts on
    start = 0
    for end in bounds:
        fragments = result[start:end]
        text = "".join(fragments)
        body = text.lstrip("\n")
        lead = len(text) - len(body)
        has_strings = "\n" in body
        if has_strings or len(body) > _MAX_LINE:
            text, strings = _lay_out(fragments, line, has_strings)
            string_lines.extend(strings)
        node = starts.get(start)
        if node is not None and line + lead not in statements:
            statements[line + lead] = node
        pieces.append(text)
        line += text.count("\n")
        start = end
    pieces.append("\n")
    return Printed("".join(pieces), statements, frozenset(string_lines))


def _print_with_unparse(tree):
    """`ast.unparse`, with statement lines found by parsing the text once more.

    Only for trees astor cannot print; node pairs of the two trees match in
    walk order because the text parses back to the same tree.
    """
    text = ast.unparse(tree) + "\n"
    statements, string_lines = {}, set()
    for old, new in zip(ast.walk(tree), ast.walk(ast.parse(text))):
        if type(old) is not type(new):
            break
        if isinstance(new, ast.stmt):
            statements.setdefault(new.lineno, old)
        elif isinstance(new, (ast.Constant, ast.JoinedStr)) and new.end_lineno > new.lineno:
            string_lines.update(range(new.lineno + 1, new.end_lineno + 1))
    return Printed(text, statements, frozenset(string_lines))


def print_tree(tree, fallback=False):
    """Print `tree` (a module, statement list or node); a `Printed`.

    `fallback=True` skips astor (after its text failed to compile).
    """
    if isinstance(tree, list):
        tree = ast.Module(body=tree, type_ignores=[])
    if not fallback:
        try:
            return _print_with_astor(tree)
        except Exception:  # astor has no (faithful) printer for a node kind here
            pass
    return _print_with_unparse(tree)


def ast_to_source(tree):
    """Readable source for `tree` (a module, statement list or node)."""
    return print_tree(tree).text
