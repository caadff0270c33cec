"""Values of a lowering: the environment of names, and tensor arrays.

`Env` maps a block's Variable names to traced values, chained like blocks
(a sub-block reads its parents' names, as JAX closures read outer tracers).
Names that may hold "no value yet" (see `static.definedness`) also carry a traced
flag, True where undefined.

`TensorArray` is a list appended to in a loop as XLA can carry it: a buffer
of fixed capacity along axis 0 plus the run-time length (XLA loop carries
keep one shape). `History` is what a loop keeps per trip for its gradient,
stored the same way. Both report the rows they needed: when that exceeds
the room compiled for, the host recompiles with more and runs again —
nothing is ever truncated.
"""
from __future__ import annotations

import numpy as np

from ._jax import jax, jnp
from .errors import Unsupported


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
    room for `capacity - base` appends."""

    def __init__(self, buf, length, base):
        self.buf = buf
        self.length = length
        self.base = base

    def tree_flatten(self):
        return (self.buf, self.length), self.base

    @classmethod
    def tree_unflatten(cls, base, children):
        return cls(*children, base)

    @classmethod
    def from_array(cls, x, room):
        """An array holding the rows of `x`, with `room` more rows free."""
        x = jnp.asarray(x)
        pad = jnp.zeros((room,) + tuple(x.shape[1:]), x.dtype)
        return cls(jnp.concatenate([x, pad]), jnp.asarray(x.shape[0], np.int64), x.shape[0])

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
        row = jnp.asarray(value).astype(self.buf.dtype)[None]
        start = (jnp.minimum(self.length, self.capacity - 1),) + (0,) * (self.buf.ndim - 1)
        buf = jax.lax.dynamic_update_slice(self.buf, row, start)
        out = TensorArray(buf, self.length + 1, self.base)
        return out, out.length - self.base

    def merged_rows(self, stop):
        """The array with dims 0..`stop` merged (`concat` of its rows, or a
        `flatten` from dim 0): a prefix of the buffer stays the value's prefix."""
        rest = tuple(self.buf.shape[1:])
        k = int(np.prod(rest[:stop], dtype=np.int64))
        buf = jnp.reshape(self.buf, (self.capacity * k,) + rest[stop:])
        return TensorArray(buf, self.length * k, self.base * k)

    def shape_vector(self):
        """The array's shape as an int64 vector (the length is a run-time value)."""
        rest = jnp.asarray(self.buf.shape[1:], np.int64)
        return jnp.concatenate([self.length[None], rest])

    def __getitem__(self, index):
        """`arr[i]` (then any further index of the row): negative `i` counts from
        the length. Other indexing of a growing array has a run-time shape."""
        items = index if isinstance(index, tuple) else (index,)
        first = items[0] if items else None
        if first is None or isinstance(first, (slice, type(Ellipsis))) or (
                hasattr(first, "ndim") and first.ndim != 0):
            raise Unsupported("indexing a tensor array with anything but a leading integer "
                              "(its length is a run-time value)")
        i = jnp.asarray(first)
        i = jnp.where(i < 0, i + self.length, i)
        row = jax.lax.dynamic_index_in_dim(self.buf, i, axis=0, keepdims=False)
        return row[tuple(items[1:])] if len(items) > 1 else row


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
