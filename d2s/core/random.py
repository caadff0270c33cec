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
