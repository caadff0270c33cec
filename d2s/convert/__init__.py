"""The conversion side of d2s: Python source -> AST -> converted function.

`convert_function(fn)` returns the converted function and its source;
generated code calls helpers from `d2s.convert.runtime` (as `_jst`).
The AST side depends on nothing else of d2s.
"""
from .api import convert_function, is_convertible
from .errors import D2SConversionError, SourceUnavailableError, UnsupportedSyntaxError
from .origin import rewrite_exception

__all__ = ["convert_function", "is_convertible", "rewrite_exception", "D2SConversionError",
           "SourceUnavailableError", "UnsupportedSyntaxError"]
