"""`d2s.distributed.fleet`: PaddlePaddle's hybrid-parallel names over d2s's
placements.

Paddle's fleet runs one program per process and hand-partitions each
model-parallel layer's weights (each rank holds `out_features / mp_degree`
columns and calls the collectives itself). d2s is single-controller (DESIGN
§11): every layer holds its whole weight, annotated with placements on a
`ProcessMesh`, and XLA's partitioner splits the program and inserts the
collectives. So the names a PaddleNLP model calls are thin:

* `fleet.init(is_collective=True, strategy=s)` with
  `s.hybrid_configs = {"dp_degree": d, "mp_degree": m}` makes the hybrid
  mesh: `ProcessMesh` of shape `[d, m]`, dims `["dp", "mp"]`, over devices
  `0 .. d*m-1`.
* `fleet.meta_parallel.ColumnParallelLinear` / `RowParallelLinear` /
  `VocabParallelEmbedding` / `ParallelCrossEntropy` place their parameters
  on that mesh's `"mp"` dim (column: weight `Shard(1)`; row: `Shard(0)`;
  vocabulary: `Shard(0)`).
* `fleet.distributed_model(model)` replicates every parameter left
  unannotated; `fleet.distributed_optimizer(opt)` returns `opt` (the update
  is part of the same partitioned program).

Numbers never depend on the placements: eager and numpy-backend runs
compute the unsharded model; state dicts hold whole (not per-rank) weights.
Without `fleet.init` (or with `mp_degree` 1) the layers are plain
`Linear`/`Embedding` layers.
"""
from __future__ import annotations

from ...core.dist_attr import ProcessMesh
from . import meta_parallel, utils
from .hybrid import (DistributedStrategy, HybridCommunicateGroup, distributed_model,
                     distributed_optimizer, get_hybrid_communicate_group, init, worker_index,
                     worker_num)

__all__ = ["init", "DistributedStrategy", "HybridCommunicateGroup",
           "get_hybrid_communicate_group", "distributed_model", "distributed_optimizer",
           "worker_index", "worker_num", "meta_parallel", "utils", "ProcessMesh"]
