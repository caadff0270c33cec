"""Which process this is, in how many, and joining them.

A process learns its rank and the world size from its environment: the
launcher's (`D2S_RANK`, `D2S_WORLD_SIZE`), else the MPI launcher's (MPICH's
`PMI_RANK`/`PMI_SIZE`, Open MPI's `OMPI_COMM_WORLD_*`); a process started
alone is rank 0 of 1. Reading them imports nothing: `import d2s` never
imports JAX or mpi4py.

`init_parallel_env()` joins the processes for the backend that will run
the programs: on xla, JAX's distributed runtime (one mesh of every
process's devices, coordinator from the launcher); on numpy, the MPI world
(`DataParallel` averages gradients over it).
"""
from __future__ import annotations

import os

from .. import backends as backend_state

_RANK_VARS = ("D2S_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
_SIZE_VARS = ("D2S_WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")  # (core.ops.collective_ops too)


def _env_int(names, default):
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"environment variable {name}={value!r} is not an integer") \
                    from None
    return default


def get_rank():
    """This process's rank (0 when started alone)."""
    return _env_int(_RANK_VARS, 0)


def get_world_size():
    """The number of processes started together (1 when started alone)."""
    return _env_int(_SIZE_VARS, 1)


def launched_by_mpi():
    """True when an MPI launcher (mpiexec) started this process."""
    return any(os.environ.get(n) for n in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"))


def init_parallel_env(backend=None):
    """Join this process to the others started with it, for `backend` ("numpy"
    or "xla"; None: the global default, see `d2s.jit.set_backend`).

    xla: JAX's distributed runtime — call before JAX computes anything; the
    mesh ids then index every process's devices. numpy: the MPI world. One
    process alone: nothing to join. Returns the world size."""
    world = get_world_size()
    if world == 1:
        return 1
    name = backend_state.resolve(backend)
    if name == "xla":
        from . import xla_processes
        xla_processes.join(get_rank(), world)
    else:
        from . import collective
        collective.world()
    return world
