"""Compile converted source into a function that behaves like the original.

The converted def is printed inside a factory def whose parameters are the
original's free variables plus `_jst` (so the code compiles with the same
scoping), then the inner code object is rebuilt with `types.FunctionType`
using the original globals and the original closure cells (writes to
closure variables stay shared) and a fresh cell holding the runtime.
Defaults, kwdefaults, `__wrapped__` and friends are copied over.
"""
import ast
import functools
import itertools
import types

from . import origin
from .printing import ast_to_source

__all__ = ["load_function", "RUNTIME_NAME"]

RUNTIME_NAME = "_jst"
_FACTORY = "__d2s_factory"
_INNER = "__d2s_converted"
_counter = itertools.count()


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


def _find_code(code, name):
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    raise RuntimeError(f"compiled converted code has no {name!r}")  # pragma: no cover


def load_function(fn_node, original, runtime_module):
    """Compile `fn_node` (converted) into a function; returns (function, source)."""
    _strip_definition_time_parts(fn_node)
    printed = ast_to_source(fn_node)
    # Inside the factory the def gets a private name: under its own name it
    # would be a factory local, and recursive calls would bind to it instead
    # of the module global (or closure cell) the original refers to.
    fn_node.name = _INNER
    freevars = list(original.__code__.co_freevars)
    factory_src = ast.parse(f"def {_FACTORY}({', '.join(freevars + [RUNTIME_NAME])}):\n"
                            f"    return {_INNER}")
    factory = factory_src.body[0]
    factory.body.insert(0, fn_node)
    origin.fill_missing_origins(fn_node)
    module = ast.Module(body=[factory], type_ignores=[])
    source = ast_to_source(module)
    filename = f"<d2s converted {original.__qualname__} #{next(_counter)}>"
    origin.register_generated(filename, source, origin.build_line_map(module, source))
    code = compile(source, filename, "exec")
    fn_code = _find_code(_find_code(code, _FACTORY), fn_node.name)
    cells = dict(zip(freevars, original.__closure__ or ()))
    cells[RUNTIME_NAME] = types.CellType(runtime_module)
    closure = tuple(cells[name] for name in fn_code.co_freevars)
    new = types.FunctionType(fn_code, original.__globals__, original.__name__,
                             original.__defaults__, closure)
    new.__kwdefaults__ = dict(original.__kwdefaults__) if original.__kwdefaults__ else None
    functools.update_wrapper(new, original)
    new._d2s_converted = True
    return new, printed
