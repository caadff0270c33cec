"""Find and parse the source of a function so it can be converted.

Handles plain, nested, decorated functions and methods (the `def` is parsed
alone, its decorators stripped, since the caller already holds the decorated
object; a wrapper made with `functools.wraps` is its own `def`, found by its
code's name, never the function it wraps), and lambdas defined in files (turned into an equivalent `def`).
Anything without retrievable source gets a SourceUnavailableError naming it.

Finding the def's lines is cheap: from its first line to the first later
line indented no deeper (`inspect.getsourcelines` tokenizes the whole block,
which costs more than converting it).  A block cut short there (a string or
bracket reaching back to the left margin) does not parse, and then inspect
finds it.  So text that parsed into the def is always the whole def, which
is what the conversion cache keys on.
"""
import ast
import inspect
import linecache
import textwrap
from collections import namedtuple

from .errors import SourceUnavailableError

__all__ = ["FunctionSource", "ParsedFunction", "function_source", "parse_function"]

FunctionSource = namedtuple("FunctionSource", "filename start lines is_lambda")
"""The text a function is converted from: `lines` (with line ends) begin at
file line `start`; for a lambda, the whole file (start 1)."""

ParsedFunction = namedtuple(
    "ParsedFunction", "node filename line_offset source_lines is_lambda source")
"""node: the FunctionDef; line_offset: add to node line numbers to get file
lines; source_lines: the parsed text's lines (index lineno - 1); source: the
FunctionSource parsed."""

LAMBDA_NAME = "__lambda"


def _describe(fn):
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{name!s}"


def _unavailable(fn, why):
    return SourceUnavailableError(
        f"cannot convert {_describe(fn)}: its source code is not available ({why}); "
        "functions must be defined in a file to be converted")


def _parse_block(lines):
    """Parse indented source lines; dedent, or wrap in `if 1:` when dedent fails."""
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    try:
        return ast.parse(dedented), dedented.splitlines(), 0
    except SyntaxError:
        wrapped = "if 1:\n" + text
        tree = ast.parse(wrapped)
        return tree, wrapped.splitlines(), -1


def _find_lambda(fn, source):
    code = fn.__code__
    lines = source.lines
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError as exc:
        raise _unavailable(fn, f"file does not parse: {exc}") from None
    argnames = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                  and n.lineno == code.co_firstlineno
                  and [a.arg for a in n.args.posonlyargs + n.args.args
                       + n.args.kwonlyargs] == argnames]
    if len(candidates) != 1:
        raise _unavailable(fn, "several lambdas on one line; use a def")
    lam = candidates[0]
    fn_def = ast.FunctionDef(name=LAMBDA_NAME, args=lam.args,
                             body=[ast.Return(value=lam.body)],
                             decorator_list=[], returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:   # Python 3.12: compiled as a tree
        fn_def.type_params = []
    ast.copy_location(fn_def, lam)
    ast.copy_location(fn_def.body[0], lam.body)
    return ParsedFunction(fn_def, source.filename, 0, [l.rstrip("\n") for l in lines], True,
                          source)


_DEF_STARTS = ("def ", "def\t", "async ")


def _block_at(lines, first):
    """Lines `first`.. up to the first line after the `def` line indented no
    deeper than line `first` (blank and comment lines never end the block)."""
    head = lines[first]
    indent = len(head) - len(head.lstrip())
    seen_def = head.lstrip().startswith(_DEF_STARTS)
    end = first + 1
    while end < len(lines):
        line = lines[end]
        text = line.lstrip()
        if text and text[0] != "#" and len(line) - len(text) <= indent:
            if seen_def:
                break
            seen_def = text.startswith(_DEF_STARTS)
        end += 1
    return lines[first:end]


def function_source(fn):
    """The FunctionSource of `fn`, found without parsing (see the module doc)."""
    if not inspect.isfunction(fn):
        raise _unavailable(fn, f"{type(fn).__name__} is not a Python function")
    filename = fn.__code__.co_filename
    if filename.startswith("<"):
        lines = linecache.getlines(filename)
        if not lines:
            raise _unavailable(fn, f"defined in {filename}")
    else:
        linecache.checkcache(filename)   # a file edited since it was read is read again
        lines = linecache.getlines(filename, fn.__globals__)
    if fn.__code__.co_name == "<lambda>":
        if not lines:
            raise _unavailable(fn, "file not readable")
        return FunctionSource(filename, 1, lines, True)
    first = fn.__code__.co_firstlineno - 1
    if not 0 <= first < len(lines):
        return _inspect_source(fn)       # raises, naming why
    return FunctionSource(filename, first + 1, _block_at(lines, first), False)


def _inspect_source(fn):
    # Of the code object, not of `fn`: inspect follows `__wrapped__`, and the
    # wrapper a decorator returns (`functools.wraps`) is what runs, so what
    # is converted; its name is `fn.__name__` no more, the code's name is.
    try:
        lines, start = inspect.getsourcelines(fn.__code__)
    except (OSError, TypeError) as exc:
        raise _unavailable(fn, str(exc)) from None
    return FunctionSource(fn.__code__.co_filename, start, lines, False)


def _parse_def(fn, source):
    """(FunctionDef, parsed text lines, line offset), or None if it is not there."""
    try:
        tree, text_lines, extra = _parse_block(source.lines)
    except SyntaxError:
        return None
    body = tree.body[0].body if extra else tree.body   # under `if 1:` when wrapped
    defs = [n for n in body[:1] if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == fn.__code__.co_name]
    if not defs:
        return None
    return defs[0], text_lines, source.start - 1 + extra


def parse_function(fn, source=None):
    """Return the ParsedFunction of `fn` (a Python function object).

    `source`: its FunctionSource if already found.
    """
    source = source or function_source(fn)
    if source.is_lambda:
        return _find_lambda(fn, source)
    found = _parse_def(fn, source)
    if found is None:
        source = _inspect_source(fn)
        try:
            _parse_block(source.lines)
        except SyntaxError as exc:
            raise _unavailable(fn, f"source does not parse: {exc}") from None
        found = _parse_def(fn, source)
        if found is None:
            raise _unavailable(fn, "no matching def found in its source")
    node, text_lines, line_offset = found
    node.decorator_list = []
    return ParsedFunction(node, source.filename, line_offset, text_lines, False, source)
