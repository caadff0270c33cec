"""Compile a converted def into a function that behaves like the original.

The converted def is compiled from its tree (never printed: `code_text`
prints it when someone reads `.code`), under a private name, inside a
factory def whose parameters are the original's free variables plus `_jst`,
so the code compiles with the same scoping.  Every node sits at its user's
file line (`positions`), so the code's line numbers are the user's.  The
inner code object is then rebuilt with `types.FunctionType` using the
original globals and the original closure cells (writes to closure
variables stay shared) and a fresh cell holding the runtime.  Defaults,
kwdefaults, `__wrapped__` and friends are copied over.

The factory's code object is what the persistent conversion cache stores
(marshalled), and `load_code` builds a function from a stored one exactly
like from a fresh one.
"""
import ast
import functools
import itertools
import types

from . import origin
from .positions import place

__all__ = ["strip_definition_time_parts", "compile_function", "load_code", "new_filename",
           "RUNTIME_NAME"]

RUNTIME_NAME = "_jst"
_FACTORY = "__d2s_factory"
_INNER = "__d2s_converted"
_counter = itertools.count()


def strip_definition_time_parts(fn_node):
    """Defaults and annotations are evaluated at def time; the original's
    evaluated values are reused instead, so remove them from the tree."""
    fn_node.args.defaults = []
    fn_node.args.kw_defaults = [None] * len(fn_node.args.kwonlyargs)
    fn_node.returns = None
    for arg in (fn_node.args.posonlyargs + fn_node.args.args + fn_node.args.kwonlyargs
                + [a for a in (fn_node.args.vararg, fn_node.args.kwarg) if a]):
        arg.annotation = None
    fn_node.decorator_list = []


def _factory_module(fn_node, original):
    """`def __d2s_factory(<free variables>, _jst): <fn_node>; return __d2s_converted`,
    the factory's own nodes at the def's line.

    Inside the factory the def gets a private name: under its own name it
    would be a factory local, and recursive calls would bind to it instead
    of the module global (or closure cell) the original refers to."""
    params = ", ".join(list(original.__code__.co_freevars) + [RUNTIME_NAME])
    module = ast.parse(f"def {_FACTORY}({params}):\n    return {_INNER}\n")
    line = fn_node.lineno
    for node in ast.walk(module):
        if "lineno" in node._attributes:
            node.lineno = node.end_lineno = line
            node.col_offset = node.end_col_offset = -1
    module.body[0].body.insert(0, fn_node)
    fn_node.name = _INNER
    return module


def compile_function(fn_node, original, filename):
    """Compile the converted `fn_node` (changed: name, def-time parts); the
    factory module's code object.

    The converters gave every node they made a position (`positions`); a
    node one of them left without is found only if `compile` refuses the
    tree: then `positions.place` gives each such node its origin's line."""
    strip_definition_time_parts(fn_node)
    module = _factory_module(fn_node, original)
    try:
        return compile(module, filename, "exec", dont_inherit=True)
    except (TypeError, ValueError):   # a node without its position
        place(module, fn_node.lineno)
        return compile(module, filename, "exec", dont_inherit=True)


def new_filename(original):
    """A file name of its own for one compile of converted code."""
    return f"<d2s converted {original.__qualname__} #{next(_counter)}>"


def _find_code(code, name):
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    raise ValueError(f"compiled converted code has no {name!r}")


def load_code(code, filename, source, original, runtime_module):
    """The function standing in for `original`, from the factory's `code`
    (compiled under `filename`) converted from `source` (a FunctionSource).

    Raises ValueError (registering nothing) when `code` holds no converted def.
    """
    fn_code = _find_code(_find_code(code, _FACTORY), _INNER)
    origin.register_generated(filename, source, original.__name__)
    cells = dict(zip(original.__code__.co_freevars, original.__closure__ or ()))
    cells[RUNTIME_NAME] = types.CellType(runtime_module)
    closure = tuple(cells[name] for name in fn_code.co_freevars)
    new = types.FunctionType(fn_code, original.__globals__, original.__name__,
                             original.__defaults__, closure)
    new.__kwdefaults__ = dict(original.__kwdefaults__) if original.__kwdefaults__ else None
    functools.update_wrapper(new, original)
    new._d2s_converted = True
    return new
