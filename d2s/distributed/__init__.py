"""d2s.distributed: PaddlePaddle's auto-parallel and data-parallel names.

* Auto-parallel: write single-device code, annotate values with a
  `ProcessMesh` and placements (`shard_tensor`, `reshard`, `shard_layer`).
  Eager and numpy-backend runs treat them as metadata (the unsharded
  numbers); on the xla backend they become shardings and XLA's SPMD
  partitioner splits the program and inserts the collectives.
* Data-parallel on the numpy backend: `DataParallel(layer)` averages
  gradients over MPI after each backward pass.
* Paddle's hybrid-parallel names (`fleet.init`, `fleet.meta_parallel`'s
  column/row-parallel layers) over the same placements: `d2s.distributed.fleet`.
* Processes: `python -m d2s.distributed.launch --nproc_per_node N script.py`
  starts N ranks; `spawn(func, args, nprocs)` starts them from Python;
  `get_rank()`, `get_world_size()`, `init_parallel_env()`.

Importing this package imports neither JAX nor mpi4py (they load on first
use of the xla backend or of an MPI collective).
"""
from ..core.dist_attr import Partial, Placement, ProcessMesh, Replicate, Shard
from .api import reshard, shard_layer, shard_tensor
from .collective import CollectiveTimeout, ReduceOp, all_gather, all_reduce, barrier, broadcast
from .data_parallel import DataParallel
from .env import get_rank, get_world_size, init_parallel_env
from .spawning import spawn

__all__ = ["ProcessMesh", "Placement", "Shard", "Replicate", "Partial", "shard_tensor",
           "reshard", "shard_layer", "get_rank", "get_world_size", "init_parallel_env",
           "DataParallel", "all_reduce", "all_gather", "broadcast", "barrier", "ReduceOp",
           "CollectiveTimeout", "spawn"]
