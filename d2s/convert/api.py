"""Entry points: `convert_function(fn)` and `is_convertible(fn)`.

Conversion (parse, transform, compile the tree) runs once per code object;
each function object sharing that code gets its own function built from the
cached code with its own globals, closure and defaults.  The converted code
object is also kept on disk (`disk_cache`), so another process only loads
it.  The converted text is printed only when read (`code_text`).
"""
import os
import sysconfig
import threading
import types
import weakref

from ..bytecode_cache import with_filename
from ..gc_pause import gc_paused
from . import disk_cache, origin, source_match
from .code_text import converted_code
from .loader import compile_function, load_code, new_filename
from .pipeline import convert_tree
from .source import function_source, parse_function
from .traversal import walk

__all__ = ["convert_function", "is_convertible", "cached_conversion", "converted_tree",
           "ignore_modules"]

_lock = threading.RLock()
_by_code = {}                              # code object -> (converted function, its text)
_by_function = weakref.WeakKeyDictionary()  # function -> (converted function, source)

_LIBRARY_DIRS = tuple(os.path.normcase(os.path.realpath(p)) + os.sep for p in {
    sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")
} if p)
_LIBRARY_PACKAGES = ("numpy", "astor", "pytest", "_pytest", "pluggy")


_convertible_code = {}  # code object -> bool (module/path part of the decision)
_ignored_modules = set()  # names given to jit.ignore_module: their functions run as written


def ignore_modules(modules):
    """Functions of these modules (module objects or dotted names; their
    submodules too) are never converted: calls into them run as written."""
    for m in modules if isinstance(modules, (list, tuple, set)) else [modules]:
        name = m if isinstance(m, str) else getattr(m, "__name__", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"ignore_module: expected modules or module names, got {m!r}")
        _ignored_modules.add(name)
    _convertible_code.clear()  # decisions taken before now are taken again


def is_convertible(fn):
    """Whether `fn` is user code that conversion should rewrite."""
    if getattr(fn, "_d2s_not_to_static", False) or getattr(fn, "_d2s_converted", False):
        return False
    if not isinstance(fn, types.FunctionType):
        return False
    known = _convertible_code.get(fn.__code__)
    if known is None:
        known = _convertible_code[fn.__code__] = _is_user_code(fn)
    return known


def _is_user_code(fn):
    if getattr(fn, "_d2s_convert_as_user_code", False):
        return True  # library code that calls user layers (nn.Sequential.forward)
    module = getattr(fn, "__module__", None) or ""
    top = module.split(".")[0]
    if top == "d2s" and ".tests" not in module:
        return False
    if top in _LIBRARY_PACKAGES:
        return False
    if _ignored_modules and any(module == m or module.startswith(m + ".")
                                for m in _ignored_modules):
        return False
    filename = fn.__code__.co_filename
    if origin.is_generated_filename(filename):
        return False
    path = os.path.normcase(os.path.realpath(filename)) if not filename.startswith("<") else ""
    if path and (path.startswith(_LIBRARY_DIRS) or "site-packages" in path
                 or "dist-packages" in path):
        return False
    return True


def cached_conversion(fn):
    """The converted function for `fn` if already built, else None."""
    entry = _by_function.get(fn)
    return entry[0] if entry is not None else None


def _load_stored(fn, source, runtime):
    """The converted function from the disk cache, or None."""
    code = disk_cache.load(fn, source)
    if code is None:
        return None
    filename = new_filename(fn)
    try:
        return load_code(with_filename(code, filename), filename, source, fn, runtime)
    except ValueError:      # not converted code: convert again (and overwrite it)
        return None


def converted_tree(fn, parsed):
    """Apply the pipeline to `parsed` (the ParsedFunction of `fn`): the
    converted FunctionDef, its nodes at their file lines (see `positions`)."""
    node = parsed.node
    user_nodes = walk(node)   # one walk of the parsed tree, for every search of it
    origin.annotate_origins(node, parsed.filename, parsed.line_offset, parsed.source_lines,
                            fn.__name__, nodes=user_nodes, col_shift=_dedent(parsed))
    return convert_tree(node, parsed.filename, fn.__qualname__, user_nodes=user_nodes)


def _dedent(parsed):
    """How many columns the parsed text's lines were moved left of the file's."""
    if parsed.is_lambda:
        return 0
    node = parsed.node
    lines = parsed.source.lines
    index = node.lineno + parsed.line_offset - parsed.source.start
    if not 0 <= index < len(lines):     # pragma: no cover - the def is in its text
        return 0
    line = lines[index]
    return len(line) - len(line.lstrip(" \t\f")) - node.col_offset


def _convert_code(fn):
    from . import runtime
    source = function_source(fn)
    loaded = _load_stored(fn, source, runtime)
    if loaded is not None:
        return loaded, converted_code(fn, source)
    parsed = parse_function(fn, source)
    source_match.check(fn, parsed)   # the text on disk is the one `fn` was built from
    if parsed.source != source:   # the text was found another way: its own entry
        loaded = _load_stored(fn, parsed.source, runtime)
        if loaded is not None:
            return loaded, converted_code(fn, parsed.source)
    node = converted_tree(fn, parsed)
    filename = new_filename(fn)
    code = compile_function(node, fn, filename)
    converted = load_code(code, filename, parsed.source, fn, runtime)
    disk_cache.store(fn, parsed.source, code)
    return converted, converted_code(fn, parsed.source)


def convert_function(fn):
    """Return `(converted_fn, code)` for a Python function (or bound method):
    `code` is the converted source (a `code_text.ConvertedCode`, printed
    when first read).

    Raises a D2SConversionError subclass (source unavailable, unsupported
    syntax) naming the function and, where relevant, file and line.
    """
    if isinstance(fn, types.MethodType):
        converted, source = convert_function(fn.__func__)
        return types.MethodType(converted, fn.__self__), source
    if not isinstance(fn, types.FunctionType):
        from .source import parse_function as _check
        _check(fn)  # raises SourceUnavailableError naming it
    with _lock:
        entry = _by_function.get(fn)
        if entry is not None:
            return entry
        cached = _by_code.get(fn.__code__)
        if cached is not None:
            converted = _rebuild(cached[0], fn)
            source = cached[1]
        else:
            with gc_paused():  # tens of AST nodes per line, none garbage
                converted, source = _convert_code(fn)
            _by_code[fn.__code__] = (converted, source)
        _by_function[fn] = (converted, source)
        return converted, source


def _rebuild(template_fn, fn):
    """A converted function for `fn` reusing the code converted for its code object."""
    from . import runtime
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells["_jst"] = types.CellType(runtime)
    closure = tuple(cells[name] for name in template_fn.__code__.co_freevars)
    new = types.FunctionType(template_fn.__code__, fn.__globals__, fn.__name__,
                             fn.__defaults__, closure)
    new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    import functools
    functools.update_wrapper(new, fn)
    new._d2s_converted = True
    return new
