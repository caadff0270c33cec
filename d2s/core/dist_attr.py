"""Placement metadata: which devices a value is spread over, and how.

PaddlePaddle's auto-parallel vocabulary, as plain data (no backend
library): a `ProcessMesh` is an n-d array of process (device) ids with a
name per dim; a value's `placements` say, per mesh dim, whether the value
is split along one of its own dims there (`Shard(dim)`), copied whole
(`Replicate()`), or held as partial values whose sum is the value
(`Partial()`).

Why in `core`: every layer reads it — a Tensor reports its placements, a
program's `reshard` op keeps them as attributes, the xla backend turns them
into shardings — and none of those may import `d2s.distributed` (which
re-exports these names as the public API).

Placements never change numbers (DESIGN §11): eager and numpy-backend runs
compute the unsharded value; only the xla backend acts on them. They are
kept beside a value in a side table keyed by the value's identity, so a
Tensor pays nothing for the feature unless it is sharded.
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np


class ProcessMesh:
    """`ProcessMesh(mesh, dim_names=None)`: `mesh` is a nested list (or array)
    of distinct non-negative ids; `dim_names` names its dims (default
    "d0", "d1", ...). On the xla backend an id is an index into
    `jax.devices()` (all processes' devices, in order)."""

    __slots__ = ("_ids", "_dim_names")

    def __init__(self, mesh, dim_names=None):
        ids = np.array(mesh.mesh if isinstance(mesh, ProcessMesh) else mesh)
        if ids.ndim == 0 or ids.size == 0:
            raise ValueError(f"ProcessMesh: the mesh must be a non-empty list of ids, got {mesh!r}")
        if ids.dtype.kind not in "iu" and not (ids.dtype.kind == "f" and np.all(ids == ids.round())):
            raise ValueError(f"ProcessMesh: ids must be integers, got {mesh!r}")
        ids = ids.astype(np.int64)
        if ids.min() < 0 or len(np.unique(ids)) != ids.size:
            raise ValueError(f"ProcessMesh: ids must be distinct and non-negative, got {ids.tolist()}")
        if dim_names is None:
            dim_names = [f"d{i}" for i in range(ids.ndim)]
        dim_names = tuple(dim_names)
        if len(dim_names) != ids.ndim or not all(isinstance(n, str) for n in dim_names):
            raise ValueError(f"ProcessMesh: {ids.ndim} dim names (strings) are needed for a mesh "
                             f"of shape {list(ids.shape)}, got {list(dim_names)}")
        if len(set(dim_names)) != len(dim_names):
            raise ValueError(f"ProcessMesh: dim names must be distinct, got {list(dim_names)}")
        ids.flags.writeable = False
        self._ids = ids
        self._dim_names = dim_names

    @property
    def mesh(self):
        """The ids as an (read-only) integer array shaped like the mesh."""
        return self._ids

    @property
    def shape(self):
        return list(self._ids.shape)

    @property
    def ndim(self):
        return self._ids.ndim

    @property
    def dim_names(self):
        return list(self._dim_names)

    @property
    def process_ids(self):
        """The ids in row-major order."""
        return self._ids.reshape(-1).tolist()

    @property
    def size(self):
        return int(self._ids.size)

    def get_dim_size(self, dim):
        """The size of mesh dim `dim` (a name or an index)."""
        return self.shape[self._index(dim)]

    def _index(self, dim):
        if isinstance(dim, str):
            if dim not in self._dim_names:
                raise ValueError(f"ProcessMesh has no dim named {dim!r} (dims: {self.dim_names})")
            return self._dim_names.index(dim)
        return int(dim)

    def __eq__(self, other):
        return (isinstance(other, ProcessMesh) and self._dim_names == other._dim_names
                and self._ids.shape == other._ids.shape and bool(np.all(self._ids == other._ids)))

    def __hash__(self):
        return hash((self._dim_names, self._ids.shape, tuple(self.process_ids)))

    def __repr__(self):
        return f"ProcessMesh(shape={self.shape}, process_ids={self.process_ids}, " \
               f"dim_names={self.dim_names})"

    # ---- as plain data (op attributes, saved programs) -----------------------------
    def encode(self):
        return (tuple(self._ids.shape), tuple(self.process_ids), self._dim_names)

    @classmethod
    def decode(cls, data):
        shape, ids, names = data
        return cls(np.array(ids, np.int64).reshape(shape), names)


class Placement:
    """How a value is laid out along one mesh dim."""

    __slots__ = ()

    def is_shard(self, dim=None):
        return False

    def is_replicated(self):
        return False

    def is_partial(self):
        return False

    def __hash__(self):
        return hash(self.encode())

    def __eq__(self, other):
        return isinstance(other, Placement) and self.encode() == other.encode()


class Shard(Placement):
    """Split along the value's dim `dim` over this mesh dim."""

    __slots__ = ("dim",)

    def __init__(self, dim):
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"Shard(dim): dim must be an int, got {dim!r}")
        self.dim = int(dim)

    def get_dim(self):
        return self.dim

    def is_shard(self, dim=None):
        return dim is None or dim == self.dim

    def encode(self):
        return f"S{self.dim}"

    def __repr__(self):
        return f"Shard(dim={self.dim})"


class Replicate(Placement):
    """A whole copy on every process of this mesh dim."""

    __slots__ = ()

    def is_replicated(self):
        return True

    def encode(self):
        return "R"

    def __repr__(self):
        return "Replicate()"


REDUCE_TYPES = ("sum", "avg", "max", "min", "prod")


class Partial(Placement):
    """Each process of this mesh dim holds a partial value; the value is their
    reduction (`reduce_type`, "sum" by default)."""

    __slots__ = ("reduce_type",)

    def __init__(self, reduce_type="sum"):
        if reduce_type not in REDUCE_TYPES:
            raise ValueError(f"Partial: reduce_type must be one of {list(REDUCE_TYPES)}, "
                             f"got {reduce_type!r}")
        self.reduce_type = reduce_type

    def is_partial(self):
        return True

    def encode(self):
        return f"P:{self.reduce_type}"

    def __repr__(self):
        return f"Partial(reduce_type={self.reduce_type!r})"


def decode_placement(code):
    if code == "R":
        return Replicate()
    if code.startswith("P:"):
        return Partial(code[2:])
    return Shard(int(code[1:]))


class DistAttr(NamedTuple):
    """A value's mesh and its placements (one per mesh dim)."""
    process_mesh: ProcessMesh
    placements: tuple

    def encode(self):
        """(mesh, placements) as attribute data (tuples of ints and strings)."""
        return self.process_mesh.encode(), tuple(p.encode() for p in self.placements)

    @classmethod
    def decode(cls, mesh, placements):
        return cls(ProcessMesh.decode(mesh), tuple(decode_placement(p) for p in placements))


def checked(mesh, placements, shape, what):
    """`DistAttr(mesh, placements)` for a value of `shape` (None: unknown dims),
    or a clear error naming `what` (the tensor) and the offending dim."""
    if not isinstance(mesh, ProcessMesh):
        raise TypeError(f"{what}: the mesh must be a d2s.distributed.ProcessMesh, "
                        f"got {type(mesh).__name__}")
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"{what}: {len(placements)} placements for a mesh of {mesh.ndim} "
                         f"dim(s) {mesh.dim_names}: give one placement per mesh dim")
    ndim = len(shape)
    parts = [1] * ndim
    normalized = []
    for mesh_dim, p in enumerate(placements):
        if not isinstance(p, Placement):
            raise TypeError(f"{what}: placement #{mesh_dim} must be Shard(dim), Replicate() "
                            f"or Partial(), got {p!r}")
        if p.is_shard():
            d = p.dim + ndim if p.dim < 0 else p.dim
            if not 0 <= d < ndim:
                raise ValueError(f"{what}: Shard({p.dim}) on mesh dim "
                                 f"'{mesh.dim_names[mesh_dim]}' names dim {p.dim}, but the "
                                 f"tensor has {ndim} dim(s) (shape {_fmt(shape)})")
            parts[d] *= mesh.shape[mesh_dim]
            p = Shard(d)
        normalized.append(p)
    for d, n in enumerate(parts):
        size = shape[d]
        if n > 1 and size is not None and size % n:
            raise ValueError(f"{what}: dim {d} (size {size}, shape {_fmt(shape)}) does not split "
                             f"evenly into {n} shards; choose a size divisible by {n}")
    return DistAttr(mesh, tuple(normalized))


def _fmt(shape):
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


# ---- the side table -----------------------------------------------------------------
_ATTRS = {}  # id(value) -> DistAttr; an entry leaves with its value


def get(value):
    """The value's DistAttr, or None when it is not sharded."""
    return _ATTRS.get(id(value))


def any_placed():
    """False while no live value has placements: runs can skip looking."""
    return bool(_ATTRS)


def placed_values():
    """The table `any_placed` reads (a dict, never rebound): code that inlines
    the check reads its truth itself."""
    return _ATTRS


def attach(value, attr):
    """Record `attr` (a DistAttr, or None to clear) as `value`'s placements."""
    key = id(value)
    if attr is None:
        _ATTRS.pop(key, None)
        return value
    if key not in _ATTRS:
        weakref.finalize(value, _ATTRS.pop, key, None)
    _ATTRS[key] = attr
    return value
