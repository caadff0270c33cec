"""Compiled executables stored with their lowered program (`lowered_cache`).

A second process that finds a program's lowered module still had to wrap
it in a `jax.jit`, lower that (JAX's first lowering in a process also
builds its MLIR context and imports its dialects: 25-80 ms), and hand the
module to JAX's compilation cache, which hashes it before it loads the
executable. Storing the executable itself lets that process load it
directly (`jax.experimental.serialize_executable`): no MLIR, no lowering,
no hashing of the module.

An executable is machine code for one backend and one compiler
configuration: it is stored with `environment()`, a text naming what JAX's
own compilation-cache key names beside the module (the backend and its
version, the device (kind, id, process), the XLA flags, the compile options
JAX reads from its configuration) and the host CPU's instruction-set features (a folder
shared between machines must not hand one machine's vector instructions to
another), and loaded only where that text is the same; anywhere else the
stored module is compiled as before. Loading runs pickled JAX
objects and native code from d2s's cache folder: the trust the JAX
compilation cache in the same folder already asks for (a per-user folder,
see `d2s.cache_dir`).
"""
from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys

from ._jax import jax

__all__ = ["environment", "serialize", "load"]

# JAX options that go into its compile options (`jax._src.compiler`), read
# through the public `jax.config` (an option this JAX lacks reads as None).
_COMPILE_OPTIONS = ("jax_use_shardy_partitioner", "jax_exec_time_optimization_effort",
                    "jax_memory_fitting_effort", "jax_optimization_level",
                    "jax_memory_fitting_level", "jax_enable_remat_opt_pass",
                    "jax_xla_profile_version", "jax_disable_most_optimizations",
                    "jax_default_matmul_precision", "jax_default_device")


def _option(name):
    try:
        return getattr(jax.config, name)
    except AttributeError:
        return None


@functools.lru_cache(maxsize=None)
def _host_cpu():
    """The machine and a hash of the CPU features NumPy detected at run time
    (its SIMD dispatch: SSE..AVX512 and AMX on x86, NEON/SVE on ARM; reading
    them is free, where /proc/cpuinfo costs a process ~20 ms on a VM)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - NumPy 1
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            features = {"processor": platform.processor()}
    text = " ".join(sorted(str(k) for k, on in features.items() if on))
    return f"{platform.machine()} {hashlib.sha256(text.encode()).hexdigest()[:16]}"


def environment():
    """What an executable compiled here depends on beside its module (see
    the module docstring); a stored one loads only where this is equal."""
    device = jax.local_devices()[0]  # where an unsharded program runs
    client = device.client
    flags = sorted((os.environ.get("XLA_FLAGS", "") + " "
                    + os.environ.get("LIBTPU_INIT_ARGS", "")).split()
                   + [a for a in sys.argv if a.startswith("--xla")])
    options = [f"{name}={_option(name)!r}" for name in _COMPILE_OPTIONS]
    return "\n".join([f"platform {client.platform} {client.platform_version}",
                      f"host {_host_cpu()}",
                      # its id and process: in a multi-process run, each process
                      # runs its own device, never another process's
                      f"device {device.device_kind} #{device.id} of {len(jax.devices())}, "
                      f"process {jax.process_index()} of {jax.process_count()}",
                      "flags " + " ".join(flags), "options " + " ".join(options)])


def _trees(specs, results):
    """The argument and result trees of the cache's jitted call: positional
    arguments `specs`, results shaped as `results` (any leaves)."""
    tree = jax.tree_util.tree_structure
    return tree((tuple(specs), {})), tree(results)


def serialize(compiled, specs, results):
    """`compiled` as bytes, or None when JAX cannot serialize it (or it does
    not take and return what `load` will rebuild from `specs` and `results`)."""
    from jax.experimental import serialize_executable
    try:
        data, in_tree, out_tree = serialize_executable.serialize(compiled)
    except (ValueError, NotImplementedError, TypeError, AttributeError):
        return None
    if (in_tree, out_tree) != _trees(specs, results):
        return None
    return data


def load(data, specs, results):
    """The `jax.stages.Compiled` stored as `data` (taking `specs`, returning
    results shaped as `results`), or None when it does not load (another JAX,
    a damaged entry): the caller compiles instead."""
    from jax.experimental import serialize_executable
    in_tree, out_tree = _trees(specs, results)
    try:
        return serialize_executable.deserialize_and_load(data, in_tree, out_tree)
    except Exception:  # noqa: BLE001 - any failure to load only means: compile it
        return None
