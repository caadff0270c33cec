"""The global random generator read by every random kernel, eager or static.

`seed(s)` resets it, so the same sequence of random ops draws the same
numbers whether they run eagerly or inside a static program.
"""
from __future__ import annotations

import numpy as np

_generator = [np.random.default_rng()]


def seed(s):
    _generator[0] = np.random.default_rng(int(s))


def generator():
    return _generator[0]


def snapshot():
    """The generator and its state now, for `restore`: a compiling backend
    draws a call's random values before running it (see `OpDef.draws`), and a
    call that does not complete puts the generator back, so that a run
    repeated on numpy draws the same numbers."""
    gen = _generator[0]
    return gen, gen.bit_generator.state


def restore(saved):
    gen, state = saved
    gen.bit_generator.state = state
    _generator[0] = gen
