"""`range`, `enumerate`, `zip` as seen by converted code.

With Python (or eager) arguments they are the builtins.  With a static
bound they return a `StaticIterable`, which `convert_for` turns into a
`while` op over an int64 counter (`static_iteration_plan`).  Outside a `for`
such an object can only be iterated statically, so other uses fail clearly.
"""
import builtins
from collections import namedtuple

from d2s.core.ops.run_time_pieces import RunTimePieces

from .dispatch import _any_static, _is_static

__all__ = ["convert_range", "convert_enumerate", "convert_zip", "StaticIterable",
           "static_iteration_plan", "is_static_iterable"]


class StaticIterable:
    """A range / enumerate / zip involving static Variables."""

    def __iter__(self):
        """Outside a converted `for` (a comprehension, unpacking): unrolled while
        tracing when the number of items is known then, else a clear error."""
        n = _length(self)
        if _is_static(n):
            raise TypeError(f"cannot iterate over {self!r} here: it involves static Variables "
                            "and its length is unknown until run time; only a converted `for` "
                            "loop can (it becomes a while op)")
        return (_item(self, i) for i in builtins.range(n))


class StaticRange(StaticIterable):
    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def __repr__(self):
        return f"range({self.start}, {self.stop}, {self.step})"

    def __reversed__(self):
        """`reversed(range(n))` with `n` known at run time (a backward pass
        over time steps: GAE, Viterbi backtracking): the same items last
        first, as Python's `range(start + (n-1)*step, start - step, -step)`."""
        n = _length(self)
        return StaticRange(self.start + (n - 1) * self.step, self.start - self.step, -self.step)


class StaticEnumerate(StaticIterable):
    def __init__(self, iterable, start):
        self.iterable, self.start = iterable, start

    def __repr__(self):
        return f"enumerate({self.iterable!r})"


class StaticZip(StaticIterable):
    def __init__(self, iterables):
        self.iterables = iterables

    def __repr__(self):
        return f"zip({', '.join(repr(i) for i in self.iterables)})"


def convert_range(*args):
    if _any_static(args):
        for a in args:
            _check_integer_bound(a)
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            tuple(args) + (1,) if len(args) == 2 else tuple(args))
        return StaticRange(start, stop, step)
    if any(isinstance(a, _eager_tensor_class()) for a in args):
        return TensorBoundRange(builtins.range(*args))
    return builtins.range(*args)


def _eager_tensor_class():
    from d2s.core.tensor import Tensor
    return Tensor


class TensorBoundRange:
    """`range(t)` in converted code, `t` an eager Tensor (PaddlePaddle's
    `for i in range(paddle.to_tensor(max_len))`): its bound is known while the
    program is built, so the loop is unrolled with Python ints, as `range(n)`
    is. Should a `break` on a tensor stop it, the trips left become one
    `while` op (`rest`), as the author of such a loop meant, instead of one
    guarded copy of the body per trip: state whose shape changes per trip (a
    decoder's growing caches) cannot merge across such a guard. Otherwise it
    is the range (iteration, len, indexing, `in`)."""

    __slots__ = ("range",)

    def __init__(self, r):
        self.range = r

    def __iter__(self):
        return iter(self.range)

    def __len__(self):
        return len(self.range)

    def __getitem__(self, index):
        return self.range[index]

    def __contains__(self, value):
        return value in self.range

    def __reversed__(self):
        return reversed(self.range)

    def __eq__(self, other):
        return self.range == (other.range if isinstance(other, TensorBoundRange) else other)

    def __hash__(self):
        return hash(self.range)

    def __repr__(self):
        return repr(self.range)

    def rest(self, iterator):
        """The items `iterator` (over this range) has not given yet, as a range
        with a static start: a `for` over it is a `while` op."""
        from d2s.core.ops import constant
        left = self.range[len(self.range) - iterator.__length_hint__():]
        return StaticRange(python_int(constant(left.start)), left.stop, left.step)


def _check_integer_bound(value):
    """`range()` of a float tensor is a TypeError, as eager `range(t)` is (through
    `Tensor.__index__`), never a loop over a rounded bound."""
    if _is_static(value):
        import numpy as np
        if not np.issubdtype(value.dtype, np.integer):
            raise TypeError(f"range() of a {value.dtype.name} tensor: only integer tensors can "
                            f"be used as an index, not {value.dtype.name}")
    elif not isinstance(value, builtins.int):
        builtins.range(value)  # Python's own TypeError for a float, a str, ...


def is_static_iterable(iterable):
    """Iterated by a loop op: a Variable, a range/enumerate/zip over one, or
    pieces of a split whose number is known only at run time."""
    return _is_static(iterable) or isinstance(iterable, (StaticIterable, RunTimePieces))


def convert_enumerate(iterable, start=0):
    if is_static_iterable(iterable):
        return StaticEnumerate(iterable, start)
    return builtins.enumerate(iterable, start)


def convert_zip(*iterables, **kwargs):
    if any(is_static_iterable(i) for i in iterables):
        return StaticZip(iterables)
    return builtins.zip(*iterables, **kwargs)


# ---- static paths ----------------------------------------------------------

# The counter of a static `for` runs from `start` (0) up to `stop`, the number
# of items, by 1; `item_at(counter)` is the item.
Plan = namedtuple("Plan", "start stop item_at")


def _length(iterable):
    """Number of items of a static iterable, as an int or int64 Variable."""
    if isinstance(iterable, StaticRange):
        from d2s.core import ops
        start, stop, step = iterable.start, iterable.stop, iterable.step
        # ceil((stop - start) / step), clipped at 0; a static step's sign is
        # only known at run time, so both roundings are built and selected.
        if _is_static(step):
            up = (stop - start + step - 1) // step
            down = (stop - start + step + 1) // step
            n = ops.where(step > 0, up, down)
        else:
            n = (stop - start + step - (1 if step > 0 else -1)) // step
        return ops.maximum(n, ops.zeros_like(n)) if _is_static(n) else max(n, 0)
    if isinstance(iterable, StaticEnumerate):
        return _length(iterable.iterable)
    if isinstance(iterable, StaticZip):
        lengths = [_length(i) for i in iterable.iterables]
        from d2s.core import ops
        out = lengths[0]
        for n in lengths[1:]:
            out = ops.minimum(out, n) if (_is_static(out) or _is_static(n)) else min(out, n)
        return out
    if isinstance(iterable, RunTimePieces):
        return iterable.count
    if _is_static(iterable):
        from .builtins_ import convert_len
        return convert_len(iterable)
    return len(iterable)


def python_int(value):
    """A static int standing for what eager mode has as a Python int (a range
    item, an index, a length) is weakly typed: `x * i` keeps x's dtype."""
    if _is_static(value):
        value.weak = True
    return value


def _item(iterable, counter):
    if isinstance(iterable, (builtins.range, list, tuple)) and isinstance(counter, int):
        return iterable[counter]  # unrolled (see StaticIterable.__iter__)
    if isinstance(iterable, builtins.range):  # a Python range zipped with a static one
        return python_int(iterable.start + counter * iterable.step)
    if isinstance(iterable, (list, tuple)):
        from d2s.core import ops
        return ops.stack(list(iterable))[counter]
    if isinstance(iterable, StaticRange):
        return python_int(iterable.start + counter * iterable.step)
    if isinstance(iterable, StaticEnumerate):
        return (python_int(counter + iterable.start), _item(iterable.iterable, counter))
    if isinstance(iterable, StaticZip):
        return tuple(_item(i, counter) for i in iterable.iterables)
    if isinstance(iterable, RunTimePieces):
        return iterable.piece(counter)
    return iterable[counter]


def static_iteration_plan(iterable):
    """Counter from 0 to the number of items; `item_at(counter)` is the item."""
    from d2s.core.ops import constant
    n = _length(iterable)
    start = constant(0)  # weakly typed: the counter acts as the Python int it replaces
    return Plan(start, n, lambda c: _item(iterable, c))
