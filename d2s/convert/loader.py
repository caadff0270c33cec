"""Compile converted source into a function that behaves like the original.

The converted def is printed once, under a private name, and placed
(indented) inside a factory def whose parameters are the original's free
variables plus `_jst`, so the code compiles with the same scoping.  The inner
code object is then rebuilt with `types.FunctionType` using the original
globals and the original closure cells (writes to closure variables stay
shared) and a fresh cell holding the runtime.  Defaults, kwdefaults,
`__wrapped__` and friends are copied over.

What gets compiled is a `ConvertedSource`: text only, so the persistent
conversion cache can store it and `load_source` compiles a stored one exactly
like a fresh one (its bytecode read back from `bytecode_cache` when the same
text was compiled before).
"""
import functools
import itertools
import types
from collections import namedtuple

from .. import bytecode_cache
from . import origin
from .printing import print_tree

__all__ = ["ConvertedSource", "generate_source", "load_source", "load_function",
           "RUNTIME_NAME"]

RUNTIME_NAME = "_jst"
_FACTORY = "__d2s_factory"
_INNER = "__d2s_converted"
_counter = itertools.count()

ConvertedSource = namedtuple("ConvertedSource", "module code origins")
"""module: the factory module's text (what is compiled); code: the converted
def as users see it, under its own name; origins: {module line: Origin} for
the lines where statements start, or a function returning it (an entry of the
conversion cache makes them when the line map is first read)."""


def _strip_definition_time_parts(fn_node):
    """Defaults and annotations are evaluated at def time; the original's
    evaluated values are reused instead, so remove them from the source."""
    fn_node.args.defaults = []
    fn_node.args.kw_defaults = [None] * len(fn_node.args.kwonlyargs)
    fn_node.returns = None
    for arg in (fn_node.args.posonlyargs + fn_node.args.args + fn_node.args.kwonlyargs
                + [a for a in (fn_node.args.vararg, fn_node.args.kwarg) if a]):
        arg.annotation = None
    fn_node.decorator_list = []


def _indented(printed):
    """The printed def one level deeper, leaving multi-line string contents alone."""
    skip = printed.string_lines
    lines = printed.text.split("\n")[:-1]
    return "".join(line + "\n" if not line or number in skip else "    " + line + "\n"
                   for number, line in enumerate(lines, 1))


def generate_source(fn_node, original, fallback=False):
    """Print the converted `fn_node` once; the ConvertedSource around it.

    Inside the factory the def gets a private name: under its own name it
    would be a factory local, and recursive calls would bind to it instead
    of the module global (or closure cell) the original refers to.
    """
    _strip_definition_time_parts(fn_node)
    name = fn_node.name
    fn_node.name = _INNER
    try:
        printed = print_tree(fn_node, fallback=fallback)
    finally:
        fn_node.name = name
    head = f"def {_INNER}("
    if not printed.text.startswith(head):  # pragma: no cover - decorators were stripped
        raise RuntimeError(f"converted code does not start with {head!r}")
    params = ", ".join(list(original.__code__.co_freevars) + [RUNTIME_NAME])
    module = f"def {_FACTORY}({params}):\n{_indented(printed)}    return {_INNER}\n"
    code = f"def {name}(" + printed.text[len(head):]
    # Module line = printed line + 1 (the factory's header comes first).
    return ConvertedSource(module, code, origin.statement_origins(printed.statements, 1))


def _find_code(code, name):
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    raise RuntimeError(f"compiled converted code has no {name!r}")  # pragma: no cover


def _line_map(source):
    origins = source.origins() if callable(source.origins) else source.origins
    return origin.dense_line_map(origins, source.module.count("\n"))


def load_source(source, original, runtime_module):
    """Compile a ConvertedSource into a function standing in for `original`.

    Raises SyntaxError (registering nothing) when the text does not compile.
    """
    filename = f"<d2s converted {original.__qualname__} #{next(_counter)}>"
    code = bytecode_cache.compile_module(source.module, filename)
    origin.register_generated(filename, source.module, functools.partial(_line_map, source))
    fn_code = _find_code(_find_code(code, _FACTORY), _INNER)
    cells = dict(zip(original.__code__.co_freevars, original.__closure__ or ()))
    cells[RUNTIME_NAME] = types.CellType(runtime_module)
    closure = tuple(cells[name] for name in fn_code.co_freevars)
    new = types.FunctionType(fn_code, original.__globals__, original.__name__,
                             original.__defaults__, closure)
    new.__kwdefaults__ = dict(original.__kwdefaults__) if original.__kwdefaults__ else None
    functools.update_wrapper(new, original)
    new._d2s_converted = True
    return new


def load_function(fn_node, original, runtime_module):
    """Compile `fn_node` (converted); returns (function, ConvertedSource).

    astor's text is compiled first; if astor printed something Python cannot
    compile (syntax newer than astor), the tree is printed by `ast.unparse`.
    """
    source = generate_source(fn_node, original)
    try:
        return load_source(source, original, runtime_module), source
    except SyntaxError:
        source = generate_source(fn_node, original, fallback=True)
        return load_source(source, original, runtime_module), source
