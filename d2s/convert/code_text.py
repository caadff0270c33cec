"""The converted def as text, printed only when someone reads it.

Converted code is compiled from its tree (`loader`), so its text is needed
only by a person: `StaticFunction.code`, `D2S_CODE_LEVEL`.  `ConvertedCode`
is that text, made on its first read by converting the function's source
again (conversion is deterministic: the same names, the same tree) and
printing the tree with astor, or `ast.unparse` where astor cannot print it
faithfully.  A function loaded from the conversion cache has no tree at
all, and most converted functions are never printed: none of them pays for
printing, or for importing astor.
"""
import ast
import collections
import threading
import types

__all__ = ["ConvertedCode", "ast_to_source", "converted_code"]

_lock = threading.Lock()


def ast_to_source(tree):
    """Readable source for `tree` (a module, statement list or node).

    astor gives the project's house style (its long-line wrapping included);
    where astor has no printer for a node kind (`match`, `except*`), or its
    text reads back as another tree (an f-string field holding a brace or a
    quoted string), `ast.unparse` prints it instead.
    """
    import astor
    if isinstance(tree, list):
        tree = ast.Module(body=tree, type_ignores=[])
    module = tree if isinstance(tree, ast.Module) else ast.Module(body=[tree], type_ignores=[])
    try:
        text = astor.to_source(tree)
        faithful = ast.dump(ast.parse(text)) == ast.dump(module)
    except Exception:   # astor has no printer for a node kind here, or its text is not Python
        faithful = False
    return text if faithful else ast.unparse(tree) + "\n"


class ConvertedCode(collections.UserString):
    """Text (a `UserString`: `in`, `==`, `str()`, the string methods), printed
    on its first read by `make()`."""

    def __init__(self, seq="", make=None):   # (the signature UserString's methods call)
        self._make = make
        self._text = None if make is not None else str(seq)

    @property
    def data(self):
        if self._text is None:
            with _lock:
                if self._text is None:
                    self._text = self._make()
                    self._make = None
        return self._text

    @data.setter
    def data(self, value):
        self._text, self._make = str(value), None


def _print(code, name, qualname, source):
    from .api import converted_tree
    from .loader import strip_definition_time_parts
    from .source import parse_function
    # what conversion reads of the function: its code, names and source
    fn = types.SimpleNamespace(__code__=code, __name__=name, __qualname__=qualname)
    node = converted_tree(fn, parse_function(fn, source))
    strip_definition_time_parts(node)
    return ast_to_source(node)


def converted_code(fn, source):
    """The ConvertedCode of `fn` converted from `source` (a FunctionSource).

    Holds the function's code object and names, not the function (its
    globals, closure and defaults stay the caller's to keep)."""
    code = fn.__code__
    name, qualname = fn.__name__, fn.__qualname__
    return ConvertedCode(make=lambda: _print(code, name, qualname, source))
