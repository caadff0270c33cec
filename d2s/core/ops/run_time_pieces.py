"""The pieces of `split(x, n, axis)` / `unbind(x, axis)` when their number is
known only when the program runs.

A time-series script walks the steps of a batch with `for x_t in
x.split(x.shape[1], axis=1)` (or `x.unbind(1)`); with the time dim a `None`
in the InputSpec the number of pieces is a value of the program, so no
Python list can hold them. Eagerly the loop sees each piece in turn, and so
can a loop op: the converted `for` asks this object for its `count` and
for the piece at its counter (a slice read at run time). Every other use
needs the list itself and fails here with a message saying how to write it.
"""
from __future__ import annotations

import builtins

__all__ = ["RunTimePieces"]


class RunTimePieces:
    """`count` pieces of `x` along `axis`, each `shape(x)[axis] // count` long
    (`squeeze`: without that axis, as `unbind` gives them). Where `count` is
    that dim itself (`x.split(x.shape[1], axis=1)`) each piece is one step:
    read with an index, not a slice with run-time bounds, so its shape is
    known while building (XLA needs that)."""

    __slots__ = ("x", "axis", "count", "squeeze", "unit", "what")

    def __init__(self, x, axis, count, squeeze, what):
        from .shape_args import dim_source
        self.x, self.axis, self.squeeze, self.what = x, axis, squeeze, what
        source = dim_source(count)
        self.unit = squeeze or (source is not None and source[0] is x
                                and source[1] % len(x.shape) == axis)
        self.count = count.reshape([]) if tuple(count.shape) else count

    def piece(self, i):
        """The `i`-th piece (`i` an int or an int64 value of the program)."""
        from .indexing import getitem
        before = (builtins.slice(None),) * self.axis
        if self.unit:
            step = getitem(self.x, before + (i,))
            return step if self.squeeze else step.unsqueeze(self.axis)
        from .search import _dim
        size = _dim(self.x, self.axis) // self.count
        return getitem(self.x, before + (builtins.slice(i * size, (i + 1) * size),))

    def _refuse(self, use):
        raise TypeError(
            f"{self.what}: the number of pieces is the size of axis {self.axis} of a tensor of "
            f"shape {tuple(self.x.shape)}, known only when the program runs, so {use} cannot "
            "have them as a Python list; loop over them with a `for` in converted code (it "
            "becomes a loop op), index them with `x[:, i]` in a `for i in range(x.shape[axis])`"
            " loop, or give that dim a fixed size in the InputSpec")

    def __iter__(self):
        self._refuse("iterating them outside a converted `for` loop")

    def __len__(self):
        self._refuse("len()")

    def __getitem__(self, i):
        if isinstance(i, builtins.slice):
            self._refuse("a slice of the pieces")
        return self.piece(i)

    def __repr__(self):
        return f"<{self.what}: pieces counted at run time>"
