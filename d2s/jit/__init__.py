"""`d2s.jit`: to_static conversion, the mode switch, save/load."""
from ..convert import origin as _origin
from ..static import ir as _ir
from ..backends import get_backend, set_backend
from ..static.input_spec import InputSpec
from .api import ignore_module, not_to_static, to_static
from .concrete_program import ConcreteProgram
from .program_cache import set_cache_limit
from .save_load import TranslatedLayer, load, save
from .serialization import ProgramFormatError
from .static_function import StaticFunction
from .switch import enable_to_static, set_code_level


def _resolve_generated(filename, lineno):
    o = _origin.lookup(filename, lineno)
    return None if o is None else (o.filename, o.lineno, o.source_line)


_ir.ORIGIN_RESOLVERS.append(_resolve_generated)

__all__ = ["to_static", "not_to_static", "enable_to_static", "set_code_level", "set_cache_limit",
           "StaticFunction", "ConcreteProgram", "InputSpec", "save", "load",
           "TranslatedLayer", "ProgramFormatError", "set_backend", "get_backend",
           "ignore_module"]
