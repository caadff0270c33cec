"""JAX's multi-process runtime: the processes of one launch join one mesh.

Each process owns its local devices (`D2S_DEVICES_PER_PROC` simulated CPU
devices when set); `jax.distributed.initialize` connects it to the
coordinator the launcher chose (`D2S_COORDINATOR`, on 127.0.0.1), after
which `jax.devices()` lists every process's devices and a program's
collectives span processes. Must run before JAX computes anything.
"""
from __future__ import annotations

import os

_JOINED = {"done": False}


def join(rank, world):
    """Connect this process (rank `rank` of `world`) to the launch's coordinator."""
    if _JOINED["done"]:
        return
    address = os.environ.get("D2S_COORDINATOR")
    if not address:
        raise RuntimeError(
            f"init_parallel_env: rank {rank} of {world} has no coordinator address "
            "(D2S_COORDINATOR): start the processes with `python -m d2s.distributed.launch "
            "--nproc_per_node N script.py`")
    from ..backends.xla._jax import jax
    devices = os.environ.get("D2S_DEVICES_PER_PROC")
    if devices:
        jax.config.update("jax_num_cpu_devices", int(devices))
    timeout = int(float(os.environ.get("D2S_COLLECTIVE_TIMEOUT", "300")))
    try:
        jax.distributed.initialize(address, num_processes=world, process_id=rank,
                                   initialization_timeout=timeout)
    except RuntimeError as e:
        raise RuntimeError(
            f"init_parallel_env: rank {rank} could not join the JAX runtime at {address}: {e} "
            "(it must be called before JAX computes anything)") from e
    _JOINED["done"] = True
