"""Whether the source text found for a function is the text its code was built from.

d2s converts a function from its text on disk, found by the code object's
file and first line.  A file edited while the process runs can hold other
text at that line, even another function of the same name (`A.forward`'s
line now starting `B.forward`): converting it would run code the user never
called.  So the def that was parsed is compiled on its own, and what the
result does is compared with the function object's code: its arguments and
local names, its constants, the operators, attribute names and subscripts it
applies, in order, in every nested code object, and the global names it
reads.  The def is compiled inside a function binding the same free
variables, and a method in a class of the same name (private names,
`super`).  The comparison leaves out what the def's place changes
(how names are loaded, calls, jumps, line numbers), so the same text
compiled in its class or closure matches.

A file not written since the process started holds the text every module
imported from it was built from: then nothing is compared (one `stat`).
The conversion cache keys on `cache_dir.code_digest(fn.__code__)`: an entry
is used only by the code it was verified against.
"""
import ast
import copy
import dis
import os
import time
import types

from .errors import SourceMismatchError

__all__ = ["check", "matches"]

_FUTURE_FLAGS = 0
for _name in ("CO_FUTURE_ANNOTATIONS", "CO_FUTURE_DIVISION", "CO_FUTURE_GENERATOR_STOP",
              "CO_FUTURE_BARRY_AS_BDFL"):
    import __future__
    _FUTURE_FLAGS |= getattr(__future__, _name, 0)
_KIND_FLAGS = 0x04 | 0x08 | 0x20 | 0x80 | 0x200   # varargs, varkw, generator, coroutine, async gen

# what a compiled def does wherever it stands: compared with their arguments
_KEPT = {"BINARY_OP", "COMPARE_OP", "IS_OP", "CONTAINS_OP", "UNARY_NEGATIVE", "UNARY_NOT",
         "UNARY_INVERT", "UNARY_POSITIVE", "LOAD_ATTR", "STORE_ATTR", "DELETE_ATTR",
         "LOAD_METHOD", "LOAD_SUPER_ATTR", "BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR",
         "BUILD_SLICE", "BINARY_SLICE", "STORE_SLICE", "BUILD_LIST", "BUILD_TUPLE",
         "BUILD_MAP", "BUILD_SET", "BUILD_STRING", "FORMAT_VALUE", "RETURN_VALUE",
         "RETURN_CONST", "RAISE_VARARGS", "YIELD_VALUE", "GET_ITER", "FOR_ITER"}
_SAME = {"LOAD_METHOD": "LOAD_ATTR", "LOAD_SUPER_ATTR": "LOAD_ATTR", "RETURN_CONST": "RETURN_VALUE",
         "FOR_ITER": "FOR_ITER"}


def _token(value):
    if isinstance(value, (tuple, frozenset)):
        inner = sorted(_token(v) for v in value) if isinstance(value, frozenset) else \
            [_token(v) for v in value]
        return f"{type(value).__name__}({','.join(inner)})"
    return f"{type(value).__name__}:{value!r}"


def _demangler(qualname):
    prefixes = ["_" + part.lstrip("_") for part in qualname.split(".")[:-1]
                if part != "<locals>" and part.lstrip("_")]

    def demangle(name):
        for prefix in prefixes:
            if name.startswith(prefix + "__"):
                return name[len(prefix):]
        return name
    return demangle


def _shape(code, demangle, qualname):
    """(what code does, the global names it reads) as described in the module
    doc. `qualname`: the function's, which nested classes' and functions'
    qualified names (constants) begin with, written `<q>` instead."""
    ops, consts, nested = [], [], []
    for ins in dis.get_instructions(code):
        name = ins.opname
        if name in _KEPT:
            arg = ins.argval
            if name in ("RETURN_VALUE", "RETURN_CONST", "GET_ITER", "FOR_ITER"):
                arg = None
            elif isinstance(arg, str):
                arg = demangle(arg)
            ops.append((_SAME.get(name, name), repr(arg)))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            nested.append(_shape(const, demangle, qualname))
        elif const is not None:
            if isinstance(const, str) and const.startswith(qualname + "."):
                const = "<q>" + const[len(qualname):]
            consts.append(_token(const))
    own = (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
           code.co_flags & _KIND_FLAGS, tuple(demangle(n) for n in code.co_varnames),
           tuple(sorted(consts)), tuple(ops))
    names = {demangle(n) for n in code.co_names}
    for sub, sub_names in nested:
        names |= sub_names
    return (own, tuple(sub for sub, _ in nested)), names


def _global_names(code):
    names = set(code.co_names)
    for sub in _nested(code):
        names |= set(sub.co_names)
    return names


def _looks_imported(fn, name):
    value = fn.__globals__.get(name)
    if isinstance(value, types.ModuleType):
        return name.isidentifier()
    module = getattr(value, "__module__", None)
    return (isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType))
            and module is not None and module != fn.__globals__.get("__name__")
            and name.isidentifier())


def _class_name(qualname):
    parts = qualname.split(".")
    return parts[-2] if len(parts) > 1 and parts[-2] != "<locals>" else None


def _compiled_alone(fn, node):
    """`node` compiled where it can be: inside a function binding `fn`'s free
    variables (so `nonlocal` compiles and they load as free variables), in a
    class of its class's name when it is a method (private names, `super`)."""
    code = fn.__code__
    free = [n for n in code.co_freevars if n != "__class__"]
    cls = _class_name(fn.__qualname__)
    text = "def __d2s_outer():\n" + "".join(f"    {n} = None\n" for n in free) + \
        ("    class C:\n        pass\n" if cls else "    pass\n")
    imported = sorted(n for n in _global_names(code) if _looks_imported(fn, n))
    if imported:   # (the compiler calls methods of imported names differently)
        text = "".join(f"import {n}\n" for n in imported) + text
    tree = ast.parse(text)
    outer = tree.body[-1]
    if cls:
        outer.body[-1].name = cls
        outer.body[-1].body = [node]
    else:
        outer.body[-1] = node
    if "@pytest_ar" in fn.__globals__:   # a test module pytest rewrote on import
        tree = copy.deepcopy(tree)          # (the parsed def itself is converted next)
        _rewrite_asserts_as_pytest(tree, code.co_filename)
    compiled = compile(tree, code.co_filename, "exec", dont_inherit=True,
                       flags=code.co_flags & _FUTURE_FLAGS)
    found = [c for c in _nested(compiled) if c.co_name == node.name]
    return found[0] if len(found) == 1 else None


def _rewrite_asserts_as_pytest(tree, filename):
    """pytest compiles its test modules with every `assert` rewritten (its
    assertion introspection): the def is rewritten the same way before the
    comparison, by pytest itself (running: the module was imported by it)."""
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
        with open(filename, "rb") as f:
            source = f.read()
        rewrite_asserts(tree, source, filename)
    except RecursionError:  # (a conversion deep in a recursion: not a different text)
        raise
    except Exception:   # (another pytest, or the file gone: compared as written)
        return


def matches(fn, node):
    """Whether the FunctionDef `node` (decorators stripped) compiles to what
    `fn`'s code does (see the module doc)."""
    try:
        alone = _compiled_alone(fn, node)
    except (SyntaxError, ValueError, TypeError):
        return False
    if alone is None:
        return False
    if _same(fn.__code__, alone, fn.__qualname__, getattr(alone, "co_qualname", None)):
        return True   # the usual case: compiled in its place, the same bytecode
    demangle = _demangler(fn.__qualname__)
    (mine, names) = _shape(fn.__code__, demangle, fn.__qualname__)
    (theirs, their_names) = _shape(alone, demangle, getattr(alone, "co_qualname", node.name))
    if mine != theirs:
        return False
    free = set(fn.__code__.co_freevars) | {"__class__"}
    for sub in _nested(fn.__code__):
        free |= set(sub.co_freevars)
    return names <= their_names and their_names - names <= free | {"super"}


def _same(mine, theirs, qualname, their_qualname):
    """Whether two code objects hold the same bytecode, names and constants
    (nested qualified names compared below `qualname` / `their_qualname`)."""
    if (mine.co_code != theirs.co_code or mine.co_names != theirs.co_names
            or mine.co_varnames != theirs.co_varnames
            or mine.co_freevars != theirs.co_freevars
            or len(mine.co_consts) != len(theirs.co_consts) or their_qualname is None):
        return False
    for a, b in zip(mine.co_consts, theirs.co_consts):
        if isinstance(a, types.CodeType):
            if not (isinstance(b, types.CodeType) and _same(a, b, qualname, their_qualname)):
                return False
        elif isinstance(a, str) and isinstance(b, str) and a.startswith(qualname + "."):
            if a[len(qualname):] != b[len(their_qualname):] or \
                    not b.startswith(their_qualname + "."):
                return False
        elif type(a) is not type(b) or _token(a) != _token(b):
            return False
    return True


def _nested(code):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from _nested(const)


def _process_start():
    """When this process started (seconds since the epoch, to a clock tick,
    never later than it did), or when d2s was imported where the system
    does not say."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])               # field 22: start time, in clock ticks after boot
        since = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - since - 0.02     # (the two clocks read apart)
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()


_STARTED = _process_start()


def _unchanged_in_this_process(filename):
    """Whether `filename` was last written before this process started: then
    every module this process imported from it was built from the text it
    holds now."""
    try:
        return os.stat(filename).st_mtime < _STARTED
    except OSError:
        return False


def check(fn, parsed):
    """Raise SourceMismatchError unless `parsed` (a ParsedFunction) is the text
    `fn` was built from. A file not written since this process started needs
    no comparison (the usual case: it costs one `stat`)."""
    if _unchanged_in_this_process(fn.__code__.co_filename) or matches(fn, parsed.node):
        return
    line = fn.__code__.co_firstlineno
    raise SourceMismatchError(
        f"cannot convert {fn.__qualname__}: its source in {fn.__code__.co_filename}, "
        f"line {line}, is no longer the text this function was built from (was the file "
        f"edited after it was imported?). Converting it would run other code than the "
        f"function called; reload the module (importlib.reload) or restart the process")
