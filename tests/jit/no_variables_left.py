"""A walk that finds static Variables left in user objects after a converted call.

DESIGN §4: a static `Variable` never stays in an object that outlives a
`to_static` call. `variables_left(*roots)` walks Layers (their sublayers,
attributes, parameters and buffers), lists, tuples, dicts and plain
objects' attributes reachable from `roots` and returns the path of every
Variable found; `assert_no_variables_left` fails naming them. Tests pass
the layer, the arguments and the globals a call touched.
"""
from __future__ import annotations

import types

from d2s.core.tensor import Tensor
from d2s.static.ir import Variable

__all__ = ["variables_left", "assert_no_variables_left"]

_SKIP = (Tensor, str, bytes, int, float, complex, bool, type(None), type, types.ModuleType,
         types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def variables_left(*roots, max_nodes=20000):
    """[(path, Variable)] for each Variable reachable from `roots` (each a
    value, or a (label, value) pair)."""
    found, seen = [], set()
    stack = []
    for i, root in enumerate(roots):
        label, value = root if (isinstance(root, tuple) and len(root) == 2
                                and isinstance(root[0], str)) else (f"root {i}", root)
        stack.append((label, value))
    while stack and len(seen) < max_nodes:
        path, value = stack.pop()
        if isinstance(value, Variable):
            found.append((path, value))
            continue
        if isinstance(value, _SKIP) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, dict):
            stack.extend((f"{path}[{k!r}]", v) for k, v in list(value.items()))
        else:
            attrs = getattr(value, "__dict__", None)
            module = type(value).__module__ or ""
            if isinstance(attrs, dict) and (not module.startswith("d2s.")
                                            or hasattr(type(value), "named_sublayers")):
                stack.extend((f"{path}.{k}", v) for k, v in list(attrs.items()))
    return found


def assert_no_variables_left(*roots):
    found = variables_left(*roots)
    assert not found, "static Variables left in user objects: " + ", ".join(
        f"{path} ({var.name})" for path, var in found)
