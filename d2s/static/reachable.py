"""What a function can reach: its closure cells, the globals it names, and
the user state (lists, dicts, objects' `__dict__`) reachable from them.

Two users diff that state: the state-that-outlives-the-call watch
(jit.outliving), around a whole trace, and a loop or `if` on a tensor
(convert.runtime.loop_items), around its body or branches, to find the
items a called function or another name wrote (a k/v cache). Python
stores into builtin lists and dicts cannot be intercepted, but every such
write ends in a container reachable from here.
"""
import types

from ..core.tensor import Tensor
from .ir import Variable

__all__ = ["LEAVES", "MAX_DEPTH", "MAX_NODES", "function_roots", "is_layer", "walkable_object"]

MAX_DEPTH = 8
MAX_NODES = 20000
# Types never walked into: values, not containers of user state.
LEAVES = (Tensor, Variable, str, bytes, int, float, complex, bool, type(None), type,
          types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
          types.MethodType, types.CodeType, property, staticmethod, classmethod)


def _is_generator(value):
    """A random generator (Python's or numpy's): a global one a function draws
    from is state the caller keeps (convert.runtime.python_random)."""
    import random
    import numpy as np
    return isinstance(value, (random.Random, np.random.RandomState, np.random.Generator))


def is_layer(obj):
    return hasattr(type(obj), "named_sublayers") and isinstance(
        getattr(obj, "__dict__", None), dict) and "_parameters" in obj.__dict__


def walkable_object(obj):
    """A plain object (or Layer) whose `__dict__` holds user state: not d2s's
    own machinery (optimizers, StaticFunctions, programs: tracked elsewhere)."""
    if is_layer(obj):
        return True
    d = getattr(obj, "__dict__", None)
    if not isinstance(d, dict):
        return False
    if getattr(type(obj), "_d2s_user_state", False):
        return True  # a d2s object holding the user's running state (a metric's totals)
    module = type(obj).__module__ or ""
    return not (module == "d2s" or module.startswith("d2s.") or module == "builtins"
                or module.startswith("numpy") or module.startswith("jax"))


def holds(value, found, objects=None, depth=0):
    """Whether `value` is, or holds in a list, tuple, dict or walkable object
    (`objects(obj)`, default `walkable_object`), a value `found` accepts."""
    if found(value):
        return True
    if depth > MAX_DEPTH or isinstance(value, LEAVES):
        return False
    if isinstance(value, (list, tuple)):
        return any(holds(v, found, objects, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(holds(v, found, objects, depth + 1) for v in value.values())
    if (objects or walkable_object)(value):
        return any(holds(v, found, objects, depth + 1) for v in vars(value).values())
    return False


def function_roots(fns, depth=3, bare=False):
    """(label, value) of the closure cells and the globals the code of `fns`
    (a function or several) names, and those of the Python functions it
    names (a helper writing a global dict), `depth` calls deep; not those of
    a `not_to_static` helper, which runs as plain Python while tracing.
    Labels say where the value comes from (`closure variable 'x'`), or are
    the bare names with `bare`."""
    roots, seen_fns, seen_roots = [], set(), set()
    pending = [(fn, 0) for fn in reversed(fns if isinstance(fns, (list, tuple)) else (fns,))]
    while pending:  # (a loop, not a recursive closure: no reference cycle per trace)
        fn, level = pending.pop()
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or id(fn) in seen_fns:
            continue
        seen_fns.add(id(fn))
        found, called = [], []
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, types.FunctionType):
                called.append(value)
            else:
                found.append((name if bare else f"closure variable '{name}'", value))
        names, stack = set(), [code]
        while stack:
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        g = getattr(fn, "__globals__", {})
        for name in sorted(names):
            if name in g and not name.startswith("__"):
                value = g[name]
                if isinstance(value, types.FunctionType):
                    called.append(value)
                elif isinstance(value, (list, dict)) or walkable_object(value) \
                        or _is_generator(value):
                    found.append((name if bare else f"global '{name}'", value))
        for label, value in found:
            if id(value) not in seen_roots:
                seen_roots.add(id(value))
                roots.append((label, value))
        if level < depth:
            for f in called:
                module = getattr(f, "__module__", "") or ""
                if not (module == "d2s" or module.startswith("d2s.")
                        or getattr(f, "_d2s_not_to_static", False)):
                    pending.append((f, level + 1))
    return roots
