"""What can go wrong on XLA, kept apart from the numbers.

* `Unsupported`: an op (or one use of it) has no XLA form; the program runs
  on the numpy backend instead (one warning).
* `LoweringError`: a lowered value disagrees with the program's Variable
  (dtype or shape) — a bug in a rule, raised loudly, never run around.
* Run-time errors (a `raise`/`assert` op firing, reading a name no path
  assigned) cannot be raised inside XLA. The lowered program carries an
  int32 *error code*: 0 while all is well, else the `ErrorSites` number of
  the first error. Loops stop when it is set (numpy would have stopped at
  the raise); the host raises the error it names after the call.
* `RaisesOnNumpy`: the error of a kernel's own check (cross_entropy's label
  range), whose message shows run-time values the error code cannot carry.
  The call is made again on the numpy backend, whose kernel raises it with
  its message; the failed XLA run wrote nothing. Such a site is the same in
  every process (no closure over the trace): a program whose every site is
  one can be stored by `lowered_cache`.
"""
from __future__ import annotations

from ..base import Unsupported as _Unsupported


class Unsupported(_Unsupported):
    """No XLA form for this op or this use of it (the message says why)."""


class EmptyRowShape(Unsupported):
    """An append to a loop-carried tensor array that started empty with
    placeholder row dims (`array_init` makes unknown dims 0): the loop
    rebuilds the empty array with the appended row's shape and traces its
    body again. Met anywhere else, it is an ordinary `Unsupported`."""

    def __init__(self, row_shape):
        super().__init__(f"an empty list's items have shape {tuple(row_shape)}, unknown "
                         "when the list was made")
        self.row_shape = tuple(row_shape)


class LoweringError(RuntimeError):
    """A lowering rule produced a value of another dtype/shape than the
    program's Variable: a bug in the rule (or in the op's shape rule)."""


class RaisesOnNumpy(Exception):
    """A kernel's check failed in an XLA run (see the module docstring): the
    caller runs the same call on the numpy backend, which raises the error."""


class ErrorSites:
    """The run-time errors one lowered program can raise, numbered from 1."""

    def __init__(self):
        self._make = []

    def add(self, make_error):
        """Register `make_error()` (-> exception to raise); returns its code."""
        self._make.append(make_error)
        return len(self._make)

    def __len__(self):
        return len(self._make)

    @property
    def only_on_numpy(self):
        """Every site is a `RaisesOnNumpy` one (a program `lowered_cache` may store)."""
        return all(make is RaisesOnNumpy for make in self._make)

    def error(self, code):
        """The exception error `code` stands for."""
        return self._make[code - 1]()

