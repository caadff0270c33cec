"""The conversion side of d2s: Python source -> AST -> converted function.

`convert_function(fn)` returns the converted function (compiled from the
converted tree) and its source text (printed when first read);
generated code calls helpers from `d2s.convert.runtime` (as `_jst`);
`layer_writes` surrounds a program's trace (jit.concrete_program), and
`recording_reads` records what converted code read during it (jit.read_guards).
The AST side depends on nothing else of d2s.
"""
from .api import convert_function, is_convertible
from .errors import D2SConversionError, SourceUnavailableError, UnsupportedSyntaxError
from .origin import rewrite_exception
from .runtime.python_random import generators_held, is_generator
from .runtime.reads import recording as recording_reads
from .runtime.targets import layer_writes

__all__ = ["convert_function", "is_convertible", "rewrite_exception", "layer_writes", "recording_reads",
           "generators_held", "is_generator",
           "D2SConversionError", "SourceUnavailableError", "UnsupportedSyntaxError"]
