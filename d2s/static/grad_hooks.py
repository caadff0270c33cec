"""`v.register_hook(fn)` on a program's value (converted code: a gradient
reversal or scaling hook on an activation, `h.register_hook(lambda g: -g)`).

Eagerly the hook rewrites the gradient reaching the tensor. In a program the
value is passed through a `py_layer` op (static.control_ops.py_layer) whose
backward calls the hook on the cotangent while the backward is built, and
the Variable is rebound to that op's output (static.rebinding), so every
later read goes through it. A value already read by ops before the hook is
registered would send part of its gradient around the hook: an error that
says to register it where the value is made.
"""
from __future__ import annotations

from contextlib import contextmanager

from .control_ops.py_layer import append_py_layer
from .origins import user_origin
from .rebinding import latest, supersede


class _HookContext:
    """What the py_layer op's backward gets as `ctx` (nothing to map)."""

    @contextmanager
    def _values_of(self, program):
        yield


class _Hook:
    """The op's `cls` (named in messages) and the handle `register_hook`
    returns: `remove()` before the backward is built drops the hook."""

    __qualname__ = "register_hook"

    def __init__(self, hook):
        self.hook = hook
        self.removed = False

    def remove(self):
        self.removed = True

    def backward(self, ctx, g):
        if self.removed:
            return g
        new = self.hook(g)
        return g if new is None else new


def register_hook(var, hook):
    """Route every later read of `var` (a Variable of a `to_static` trace)
    through an op whose gradient is `hook`'s rewrite of the cotangent."""
    builder = var.block.program._builder
    if builder.overlay is None:
        raise TypeError(f"register_hook on the program value '{var.name}' works in converted "
                        "code (to_static); in a program built by hand, write the gradient "
                        "rule with d2s.autograd.PyLayer")
    if var.stop_gradient:
        raise RuntimeError("register_hook: the tensor does not require grad "
                           "(stop_gradient=True); no gradient will reach it")
    var = latest(var)
    for block in var.block.program.blocks:
        for op in block.ops:
            if any(v is var for v in op.inputs):
                where = user_origin()
                at = f" ({where[0]}, line {where[1]})" if where else ""
                raise RuntimeError(
                    f"register_hook{at} on '{var.name}' after ops already read it: in the "
                    "program part of its gradient would go around the hook. Register the hook "
                    "right where the value is computed, before any use of it")
    handle = _Hook(hook)
    (out,) = append_py_layer(builder.program.current_block(), _Hook, _HookContext(), [var],
                             [var], handle.backward)
    out.stop_gradient = False
    supersede(var, out)
    return handle
