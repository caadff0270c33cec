"""A tensor `while` loop for library code below the static layer (nn's RNN
over a time axis unknown until run time).

Layers may import only the core, but a loop over a run-time count must be a
`while` op of the program being built. The program's builder provides it
(`Builder.while_loop`, duck-typed here as `effects` does with the state
overlay); with no program being built it is a Python loop.
"""
from __future__ import annotations

from . import state
from .dispatch import Symbolic


def _leaves(values):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _leaves(v)
    else:
        yield values


def while_loop(cond, body, loop_vars):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`; returns
    the final loop values (a list). `loop_vars` may nest tuples of tensors."""
    builder = state.current_builder()
    if builder is None:
        for v in _leaves(loop_vars):
            if isinstance(v, Symbolic):
                builder = v._owning_builder()
                break
    if builder is None:
        loop_vars = list(loop_vars)
        while bool(cond(*loop_vars)):
            loop_vars = list(body(*loop_vars))
        return loop_vars
    return builder.while_loop(cond, body, list(loop_vars))
