"""Placements as JAX shardings: how d2s.distributed reaches XLA's partitioner.

A value's `DistAttr` (mesh + one placement per mesh dim, `core.dist_attr`)
becomes a `NamedSharding`: mesh dim `k` named `n` with `Shard(d)` puts `n`
in the PartitionSpec entry of value dim `d` (mesh dims in order, so two
mesh dims sharding one value dim split it major-to-minor); `Replicate()`
and `Partial()` add nothing. Inputs given as `Partial` hold their whole
value (the numbers never change), so they enter replicated; a `reshard` to
`Partial` leaves the value dims free (`UNCONSTRAINED`) for XLA to choose.

A run whose inputs or parameters carry placements is a *sharded run*
(`RunLayout`): every input lives on one mesh — unannotated ones replicated
on it, as PaddlePaddle's unannotated parameters are — and XLA's SPMD
partitioner inserts the collectives. Results are read back whole (gathered
from the other processes when they span several), and report the
placements XLA gave them.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import threading

import numpy as np

from ...core.dist_attr import DistAttr, Replicate, Shard, checked
from ._jax import jax, x64

_MESHES = {}
_lock = threading.Lock()


def jax_mesh(mesh):
    """The `jax.sharding.Mesh` of a ProcessMesh: id `i` is `jax.devices()[i]`.
    A mesh needing more devices than JAX sees is a clear error naming both."""
    found = _MESHES.get(mesh)
    if found is not None:
        return found
    devices = jax.devices()
    need = max(mesh.process_ids) + 1
    if need > len(devices):
        raise ValueError(
            f"{mesh!r} needs {need} devices (ids 0..{need - 1}), but JAX sees "
            f"{len(devices)} device(s) in {jax.process_count()} process(es). Simulated CPU "
            "devices: XLA_FLAGS=--xla_force_host_platform_device_count=N (only --flags in "
            "XLA_FLAGS) or jax.config.update('jax_num_cpu_devices', N) before JAX starts; "
            "processes started by `python -m d2s.distributed.launch` join one mesh after "
            "d2s.distributed.init_parallel_env()")
    array = np.array([devices[i] for i in mesh.process_ids], dtype=object).reshape(mesh.shape)
    found = jax.sharding.Mesh(array, tuple(mesh.dim_names))
    with _lock:
        _MESHES[mesh] = found
    return found


def partition_spec(attr, ndim, free=False):
    """The PartitionSpec of `attr` for a value of rank `ndim`; `free`: value
    dims no Shard names are left for XLA to choose instead of replicated."""
    P = jax.sharding.PartitionSpec
    axes = [[] for _ in range(ndim)]
    for name, p in zip(attr.process_mesh.dim_names, attr.placements):
        if p.is_shard():
            axes[p.dim].append(name)
    rest = P.UNCONSTRAINED if free else None
    return P(*[rest if not a else a[0] if len(a) == 1 else tuple(a) for a in axes])


def named_sharding(attr, ndim, free=False):
    return jax.sharding.NamedSharding(jax_mesh(attr.process_mesh),
                                      partition_spec(attr, ndim, free))


def replicated(mesh):
    return jax.sharding.NamedSharding(jax_mesh(mesh), jax.sharding.PartitionSpec())


def constrain(x, mesh, placements):
    """`x` constrained to the placements a `reshard` op says (plain-data attrs)."""
    attr = checked(*_decoded(mesh, placements), tuple(x.shape), "reshard")
    free = any(p.is_partial() for p in attr.placements)
    return jax.lax.with_sharding_constraint(x, named_sharding(attr, x.ndim, free))


def _decoded(mesh, placements):
    attr = DistAttr.decode(mesh, placements)
    return attr.process_mesh, attr.placements


def placements_of(sharding, mesh, ndim):
    """The placements (on `mesh`) a result with `sharding` has; None when XLA
    placed it on other devices than the mesh's."""
    if isinstance(sharding, jax.sharding.NamedSharding) and \
            tuple(sharding.mesh.axis_names) == tuple(mesh.dim_names) and \
            sharding.mesh.devices.shape == tuple(mesh.shape) and \
            list(sharding.mesh.devices.flat) == list(jax_mesh(mesh).devices.flat):
        where = {}
        for d, entry in enumerate(tuple(sharding.spec) + (None,) * ndim):
            if d >= ndim or entry is None or entry is jax.sharding.PartitionSpec.UNCONSTRAINED:
                continue
            for name in (entry if isinstance(entry, tuple) else (entry,)):
                where[name] = d
        return DistAttr(mesh, tuple(Shard(where[n]) if n in where else Replicate()
                                    for n in mesh.dim_names))
    if getattr(sharding, "is_fully_replicated", False) and \
            set(sharding.device_set) == set(jax_mesh(mesh).devices.flat):
        return DistAttr(mesh, tuple(Replicate() for _ in mesh.dim_names))
    return None


def put(array, sharding):
    """A global array laid out by `sharding`, each process placing the shards
    of its own devices (every process holds the whole host value)."""
    array = np.asarray(array)
    with x64():  # int64 stays int64, as everywhere in d2s's own JAX calls
        return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])


def to_host(value):
    """A result as a numpy array: the whole value, also when its shards live
    in several processes (then every process gathers it — each runs the same
    program, so each reads the same results)."""
    if isinstance(value, jax.Array) and not value.is_fully_addressable \
            and not value.is_fully_replicated:
        from jax.experimental import multihost_utils
        return np.asarray(multihost_utils.process_allgather(value, tiled=True))
    return np.asarray(value)


# ---- several processes: one program ------------------------------------------------------
_COMPILES = itertools.count()


def agree_on_program(text):
    """With several processes, check that each compiles the same program for
    its n-th sharded executable (the SHA-256 of the StableHLO `text`, through
    JAX's coordination service). Processes running different programs would
    otherwise wait forever in mismatched collectives; here they get a clear
    error, after at most `D2S_COLLECTIVE_TIMEOUT` seconds (300) when one
    never compiles."""
    if jax.process_count() == 1:
        return
    try:
        from jax._src import distributed
        client = distributed.global_state.client
    except (ImportError, AttributeError):  # pragma: no cover - another JAX
        return
    if client is None:  # pragma: no cover - not initialized by us
        return
    n = next(_COMPILES)
    me = jax.process_index()
    digest = hashlib.sha256(text.encode()).hexdigest()
    client.key_value_set(f"d2s/program/{n}/{me}", digest)
    timeout = float(os.environ.get("D2S_COLLECTIVE_TIMEOUT", "300"))
    for other in range(jax.process_count()):
        if other == me:
            continue
        try:
            theirs = client.blocking_key_value_get(f"d2s/program/{n}/{other}",
                                                   int(timeout * 1000))
        except Exception:
            raise TimeoutError(
                f"process {me}: process {other} did not compile its sharded program #{n} "
                f"within {timeout:g} s: the processes are running different programs, or "
                "one stopped (D2S_COLLECTIVE_TIMEOUT sets the bound)") from None
        if theirs != digest:
            raise RuntimeError(
                f"process {me}: sharded program #{n} differs from process {other}'s: every "
                "process must run the same program (its collectives would never match)")


class RunLayout:
    """Where the inputs of one sharded run live: the mesh, a sharding per feed
    and per parameter, and `key` (part of the executable's cache key)."""

    def __init__(self, mesh, feed_shardings, param_shardings, key):
        self.mesh = mesh
        self.feeds = feed_shardings
        self.params = param_shardings
        self.key = key

    @classmethod
    def plan(cls, feed_names, feeds, feed_attrs, param_vars, param_attrs):
        """The layout of a run, or None when nothing in it is placed."""
        if not any(feed_attrs) and not any(param_attrs):
            return None
        mesh, first = None, None
        for name, attr in list(zip(feed_names, feed_attrs)) + \
                [(v.name, a) for v, a in zip(param_vars, param_attrs)]:
            if attr is None:
                continue
            if mesh is None:
                mesh, first = attr.process_mesh, name
            elif attr.process_mesh != mesh:
                raise ValueError(
                    f"'{name}' is placed on {attr.process_mesh!r} but '{first}' on {mesh!r}: "
                    "the inputs of one program must share one ProcessMesh")
        feed_sh = [_sharding(mesh, name, attr, np.shape(a))
                   for name, a, attr in zip(feed_names, feeds, feed_attrs)]
        param_sh = [_sharding(mesh, v.name, attr, v.shape)
                    for v, attr in zip(param_vars, param_attrs)]
        key = (mesh, tuple(None if a is None else a.placements for a in feed_attrs),
               tuple(None if a is None else a.placements for a in param_attrs))
        return cls(mesh, feed_sh, param_sh, key)


def _sharding(mesh, name, attr, shape):
    if attr is None:
        return replicated(mesh)
    checked(attr.process_mesh, attr.placements, tuple(shape), f"'{name}'")
    return named_sharding(attr, len(shape))


__all__ = ["jax_mesh", "named_sharding", "constrain", "placements_of", "put", "to_host",
           "RunLayout", "agree_on_program"]
