"""Values of a lowering: the environment of names, and tensor arrays.

`Env` maps a block's Variable names to traced values, chained like blocks
(a sub-block reads its parents' names, as JAX closures read outer tracers).
Names that may hold "no value yet" (see `static.definedness`) also carry a traced
flag, True where undefined.

`TensorArray` is a list appended to in a loop as XLA can carry it: a buffer
of fixed capacity along axis 0 plus the run-time length (XLA loop carries
keep one shape); ordinary ops reading one keep that form (`ragged`), the
length then possibly along another axis. `History` is what a loop keeps per trip for its gradient,
stored the same way. Both report the rows they needed: when that exceeds
the room compiled for, the host recompiles with more and runs again —
nothing is ever truncated.
"""
from __future__ import annotations

import numpy as np

from ._jax import jax, jnp
from .errors import EmptyRowShape, Unsupported


class Env:
    __slots__ = ("values", "flags", "parent")

    def __init__(self, parent=None):
        self.values = {}
        self.flags = {}     # name -> traced bool (True: undefined), for maybe-undefined names
        self.parent = parent

    def set(self, name, value, flag=None):
        self.values[name] = value
        if flag is not None:
            self.flags[name] = flag
        else:
            self.flags.pop(name, None)

    def _owner(self, name):
        env = self
        while env is not None:
            if name in env.values:
                return env
            env = env.parent
        raise KeyError(name)

    def get(self, name):
        return self._owner(name).values[name]

    def flag(self, name):
        """The name's undefined flag (a traced bool), or None if surely defined."""
        return self._owner(name).flags.get(name)


@jax.tree_util.register_pytree_node_class
class TensorArray:
    """`buf[:length]` is the array's value. It started with `base` rows and has
    room for `capacity - base` appends. A value computed from one (`ragged`:
    `stack(outs, axis=1)`, `stack(outs) * 2`) is the same with its run-time
    length along `axis`; only a list itself (axis 0) is appended to."""

    def __init__(self, buf, length, base, axis=0):
        self.buf = buf
        self.length = length
        self.base = base
        self.axis = axis

    def tree_flatten(self):
        return (self.buf, self.length), (self.base if self.axis == 0 else (self.base, self.axis))

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *(aux if isinstance(aux, tuple) else (aux,)))

    @classmethod
    def from_array(cls, x, room):
        """An array holding the rows of `x`, with `room` more rows free."""
        x = jnp.asarray(x)
        pad = jnp.zeros((room,) + tuple(x.shape[1:]), x.dtype)
        return cls(jnp.concatenate([x, pad]), jnp.asarray(x.shape[0], np.int64), x.shape[0])

    @classmethod
    def of_rows(cls, x):
        """All the rows of `x` and no room: the cotangent of a tensor array, which
        a gradient loop reads as one (it drops the last row on every trip, and
        an XLA loop carries one shape)."""
        x = jnp.asarray(x)
        n = x.shape[0]
        if n == 0:  # one row of room: indexing compiles (a gradient of no trips reads none)
            x = jnp.zeros((1,) + tuple(x.shape[1:]), x.dtype)
        return cls(x, jnp.asarray(n, np.int64), n)

    @property
    def dtype(self):
        return self.buf.dtype

    @property
    def ndim(self):
        return self.buf.ndim

    @property
    def capacity(self):
        return self.buf.shape[0]

    def append(self, value):
        """(the array with `value` appended, the rows appended so far). A row
        past the capacity lands on the last one: the caller reports the rows
        needed, and the whole run is repeated with more room."""
        self._along_rows("appending to")
        row = jnp.asarray(value).astype(self.buf.dtype)[None]
        if (self.base == 0 and row.shape[1:] != self.buf.shape[1:]
                and 0 in self.buf.shape[1:]):
            raise EmptyRowShape(row.shape[1:])   # the loop re-makes it (while_._settle)
        start = (jnp.minimum(self.length, self.capacity - 1),) + (0,) * (self.buf.ndim - 1)
        buf = jax.lax.dynamic_update_slice(self.buf, row, start)
        out = TensorArray(buf, self.length + 1, self.base)
        return out, out.length - self.base

    def zeros(self):
        """A zero cotangent of this array: zeros of its buffer, its length."""
        return TensorArray(jnp.zeros_like(self.buf), self.length, self.base, self.axis)

    def plus(self, g, where=None):
        """This cotangent plus `g`: another of the same array (the same buffer
        shape), or a plain array of its first rows; where `where` is given,
        only where it is true."""
        other = g.buf if isinstance(g, TensorArray) else g
        if other.shape != self.buf.shape:
            if isinstance(g, TensorArray) or self.axis != 0 or other.shape[1:] != \
                    self.buf.shape[1:] or other.shape[0] > self.capacity:
                raise Unsupported("a cotangent of a tensor array shaped unlike its buffer")
            other = jnp.pad(other, [(0, self.capacity - other.shape[0])]
                            + [(0, 0)] * (other.ndim - 1))
        buf = self.buf + other.astype(self.buf.dtype)
        if where is not None:
            buf = jnp.where(where, buf, self.buf)
        return TensorArray(buf, self.length, self.base, self.axis)

    def _along_rows(self, what):
        if self.axis != 0:
            raise Unsupported(f"{what} a value whose run-time length is not along its "
                              "first dim")

    def merged_rows(self, n):
        """The array with its axis and the `n` dims after it merged (`concat` of
        its items, or a `flatten` from its axis): a prefix of the buffer
        along the axis stays the value's prefix."""
        a, shape = self.axis, tuple(self.buf.shape)
        k = int(np.prod(shape[a + 1:a + 1 + n], dtype=np.int64))
        buf = jnp.reshape(self.buf, shape[:a] + (shape[a] * k,) + shape[a + 1 + n:])
        return TensorArray(buf, self.length * k, self.base * k, a)

    def shape_vector(self):
        """The array's shape as an int64 vector (the length is a run-time value)."""
        dims = [jnp.asarray(d, np.int64) for d in self.buf.shape]
        dims[self.axis] = jnp.asarray(self.length, np.int64)
        return jnp.stack(dims)

    def rows(self):
        """The buffer with the run-time length along axis 0 (what the host slices)."""
        return jnp.moveaxis(self.buf, self.axis, 0)

    def __getitem__(self, index):
        """`arr[i]` (then any further index of the row): negative `i` counts from
        the length; or `arr[start:stop]` with integer bounds and step 1, as
        numpy clamps them (`array_append`'s gradient reads `g[:-1]`; model
        code `stack(outs)[1:]`, `stack(outs)[-k:]`). Other indexing of a
        growing array has a run-time shape."""
        self._along_rows("indexing")
        items = index if isinstance(index, tuple) else (index,)
        first = items[0] if items else None
        if isinstance(first, slice) and len(items) == 1:
            return self.sliced(first)
        if first is None or isinstance(first, (slice, type(Ellipsis))) or (
                hasattr(first, "ndim") and first.ndim != 0):
            raise Unsupported("indexing a tensor array with anything but a leading integer "
                              "or a slice with integer bounds and step 1 (its length is a "
                              "run-time value)")
        row = jax.lax.dynamic_index_in_dim(self.buf, self.row_index(first), axis=0,
                                           keepdims=False)
        return row[tuple(items[1:])] if len(items) > 1 else row

    def row_index(self, i):
        """Row `i` (negative: from the length), as a run-time index."""
        i = jnp.asarray(i)
        return jnp.where(i < 0, i + self.length, i)

    def slice_bounds(self, s):
        """(first row, length) of `arr[s]` for a slice with integer (or None)
        bounds and step 1, clamped as numpy clamps them; a static first row
        where `s.start` is not negative."""
        if s.step not in (None, 1) or not all(b is None or isinstance(b, (int, np.integer))
                                              for b in (s.start, s.stop)):
            raise Unsupported("slicing a tensor array other than with integer bounds and "
                              "step 1 (its length is a run-time value)")
        n = self.length
        if s.start is None or s.start >= 0:
            start = 0 if s.start is None else int(s.start)
            first = jnp.minimum(np.int64(start), n)
        else:
            start = first = jnp.maximum(n + int(s.start), 0)
        if s.stop is None:
            stop = n
        elif s.stop >= 0:
            stop = jnp.minimum(n, np.int64(s.stop))
        else:
            stop = jnp.maximum(n + int(s.stop), 0)
        return start, jnp.maximum(stop - first, 0)

    def reversed_rows(self):
        """`arr[::-1]` (`reversed(outs)`): the rows within the length in reverse
        order, zeros past it; its own inverse, as a cotangent too."""
        at = self.length - 1 - jnp.arange(self.capacity, dtype=np.int64)
        rows = jnp.take(self.buf, jnp.clip(at, 0, self.capacity - 1), axis=0)
        inside = (at >= 0).reshape((-1,) + (1,) * (self.buf.ndim - 1))
        return TensorArray(jnp.where(inside, rows, jnp.zeros((), rows.dtype)), self.length,
                           self.base)

    def sliced(self, s):
        """`arr[s]` (see `slice_bounds`): its rows moved to the front of a buffer
        of the same capacity; a prefix keeps the buffer as it is; `[::-1]`
        reverses them (`reversed_rows`)."""
        if s.start is None and s.stop is None and isinstance(s.step, (int, np.integer)) \
                and s.step == -1:
            return self.reversed_rows()
        start, length = self.slice_bounds(s)
        if isinstance(start, int) and start == 0:
            return TensorArray(self.buf, length, self.base)
        return TensorArray(shift_rows(self.buf, start), length, self.base)


def shift_rows(buf, start):
    """`buf[start:]` followed by zero rows, in a buffer shaped as `buf`
    (`start` static, or a run-time value that XLA must not clamp)."""
    cap = buf.shape[0]
    if isinstance(start, int):
        start = min(start, cap)
        zeros = jnp.zeros((start,) + tuple(buf.shape[1:]), buf.dtype)
        return jnp.concatenate([buf[start:], zeros])
    doubled = jnp.concatenate([buf, jnp.zeros_like(buf)])
    return jax.lax.dynamic_slice_in_dim(doubled, start, cap, axis=0)


def unshift_rows(rows, start, cap):
    """The inverse of `shift_rows` for a cotangent: `rows` (the sliced rows,
    zero past them) placed from row `start` of `cap` zero rows."""
    n = rows.shape[0]
    out = jnp.zeros((cap + n,) + tuple(rows.shape[1:]), rows.dtype)
    at = (jnp.asarray(start, np.int64),) + (0,) * (rows.ndim - 1)
    return jax.lax.dynamic_update_slice(out, rows, at)[:cap]


@jax.tree_util.register_pytree_node_class
class History:
    """What a forward `while` keeps per trip for its gradient: for each kept
    value a buffer `[capacity, ...]` (leaf by leaf, for structured values),
    and the number of trips recorded."""

    def __init__(self, buffers, count):
        self.buffers = buffers
        self.count = count

    def tree_flatten(self):
        return (self.buffers, self.count), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    @classmethod
    def empty(cls, avals, capacity):
        """Room for `capacity` trips of values shaped like `avals` (a pytree)."""
        buffers = jax.tree_util.tree_map(
            lambda a: jnp.zeros((capacity,) + tuple(a.shape), a.dtype), avals)
        return cls(buffers, jnp.zeros((), np.int64))

    def record(self, values):
        """(the history with this trip's `values` added, the trips recorded)."""
        def write(buf, leaf):
            at = (jnp.minimum(self.count, buf.shape[0] - 1),) + (0,) * (buf.ndim - 1)
            return jax.lax.dynamic_update_slice(buf, jnp.asarray(leaf, buf.dtype)[None], at)
        out = History(jax.tree_util.tree_map(write, self.buffers, values), self.count + 1)
        return out, out.count

    def trip(self, k):
        """The values recorded at trip `k`."""
        return jax.tree_util.tree_map(
            lambda buf: jax.lax.dynamic_index_in_dim(buf, k, axis=0, keepdims=False),
            self.buffers)
