"""Find and parse the source of a function so it can be converted.

Handles plain, nested, decorated functions and methods (the `def` is parsed
alone, its decorators stripped, since the caller already holds the decorated
object), and lambdas defined in files (turned into an equivalent `def`).
Anything without retrievable source gets a SourceUnavailableError naming it.
"""
import ast
import inspect
import linecache
import textwrap
from collections import namedtuple

from .errors import SourceUnavailableError

__all__ = ["ParsedFunction", "parse_function"]

ParsedFunction = namedtuple(
    "ParsedFunction", "node filename line_offset source_lines is_lambda")
"""node: the FunctionDef; line_offset: add to node line numbers to get file
lines; source_lines: the parsed text's lines (index lineno - 1)."""

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
    try:
        return ast.parse(textwrap.dedent(text)), textwrap.dedent(text).splitlines(), 0
    except SyntaxError:
        wrapped = "if 1:\n" + text
        tree = ast.parse(wrapped)
        return tree, wrapped.splitlines(), -1


def _find_lambda(fn, filename):
    code = fn.__code__
    lines = linecache.getlines(filename)
    if not lines:
        raise _unavailable(fn, "file not readable")
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
    ast.copy_location(fn_def, lam)
    ast.copy_location(fn_def.body[0], lam.body)
    return ParsedFunction(fn_def, filename, 0, [l.rstrip("\n") for l in lines], True)


def parse_function(fn):
    """Return the ParsedFunction of `fn` (a Python function object)."""
    if not inspect.isfunction(fn):
        raise _unavailable(fn, f"{type(fn).__name__} is not a Python function")
    filename = fn.__code__.co_filename
    if filename.startswith("<") and not linecache.getlines(filename):
        raise _unavailable(fn, f"defined in {filename}")
    if fn.__name__ == "<lambda>":
        return _find_lambda(fn, filename)
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise _unavailable(fn, str(exc)) from None
    try:
        tree, text_lines, extra = _parse_block(lines)
    except SyntaxError as exc:
        raise _unavailable(fn, f"source does not parse: {exc}") from None
    defs = [n for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name == fn.__name__]
    if not defs:
        raise _unavailable(fn, "no matching def found in its source")
    node = defs[0]
    node.decorator_list = []
    return ParsedFunction(node, filename, start - 1 + extra, text_lines, False)
