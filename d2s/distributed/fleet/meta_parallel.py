"""Paddle's model-parallel layers as placements on the hybrid mesh's "mp" dim.

Megatron's split, expressed as annotations (see the package doc): a
column-parallel Linear splits its weight's output columns (`Shard(1)`,
bias `Shard(0)`), a row-parallel Linear its input rows (`Shard(0)`, bias
replicated), so a column layer followed by a row layer needs one
all-reduce, which XLA's partitioner inserts. A vocabulary-parallel
Embedding splits the table's rows. `gather_output` / `input_is_parallel`
become sharding constraints on the activations where the mesh has only the
"mp" dim; on a 2-d mesh the activations' layout is left to the partitioner
(the batch dim's placement over "dp" is the caller's), which picks the same
collectives from the weights' placements.

`mp_group` takes the `ProcessMesh` (Paddle's group object is the mesh
here: `get_hybrid_communicate_group().get_model_parallel_group()`); None
uses `fleet.init`'s mesh. Where neither exists, or its "mp" dim has size
1, the layers are the plain ones.
"""
from __future__ import annotations

from ... import nn
from ...core.dist_attr import ProcessMesh, Replicate, Shard
from ...nn import functional as F
from ..api import reshard, shard_tensor
from .hybrid import hybrid_mesh

__all__ = ["ColumnParallelLinear", "RowParallelLinear", "VocabParallelEmbedding",
           "ParallelCrossEntropy"]


def _mp_mesh(mp_group, layer):
    mesh = hybrid_mesh() if mp_group is None else mp_group
    if mesh is None:
        return None
    if not isinstance(mesh, ProcessMesh):
        raise TypeError(f"{layer}: mp_group must be a ProcessMesh with an 'mp' dim (e.g. "
                        f"fleet.get_hybrid_communicate_group().get_model_parallel_group()), "
                        f"got {type(mesh).__name__}")
    if "mp" not in mesh.dim_names:
        raise ValueError(f"{layer}: mp_group {mesh!r} has no dim named 'mp'")
    return mesh if mesh.get_dim_size("mp") > 1 else None


def _on_mp(mesh, placement):
    """Placements putting `placement` on the "mp" dim, replicated elsewhere."""
    out = [Replicate()] * mesh.ndim
    out[mesh.dim_names.index("mp")] = placement
    return out


def _divisible(layer, what, size, mesh):
    degree = mesh.get_dim_size("mp")
    if size % degree:
        raise ValueError(f"{layer}: {what}={size} is not divisible by the model-parallel "
                         f"degree {degree} (the 'mp' dim of {mesh!r})")


class ColumnParallelLinear(nn.Linear):
    """`y = x @ W + b` with W's output columns split over "mp".
    `has_bias` defaults to no bias, as Paddle's; `gather_output=True` gives
    every device the whole output, False leaves it split along its last dim
    (for a following `RowParallelLinear(input_is_parallel=True)`)."""

    def __init__(self, in_features, out_features, weight_attr=None, has_bias=None,
                 gather_output=True, fuse_matmul_bias=False, mp_group=None, name=None):
        super().__init__(in_features, out_features, weight_attr,
                         bias_attr=None if has_bias else False, name=name)
        self.gather_output = bool(gather_output)
        self.mesh = _mp_mesh(mp_group, "ColumnParallelLinear")
        if self.mesh is not None:
            _divisible("ColumnParallelLinear", "out_features", self.out_features, self.mesh)
            self.weight = shard_tensor(self.weight, self.mesh, _on_mp(self.mesh, Shard(1)))
            if self.bias is not None:
                self.bias = shard_tensor(self.bias, self.mesh, _on_mp(self.mesh, Shard(0)))

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if self.mesh is not None and self.mesh.ndim == 1:
            y = reshard(y, self.mesh, [Replicate() if self.gather_output
                                       else Shard(len(y.shape) - 1)])
        return y


class RowParallelLinear(nn.Linear):
    """`y = x @ W + b` with W's input rows split over "mp": the partial
    products are summed across "mp" (one all-reduce), then the replicated
    bias is added. `input_is_parallel=True` says `x` arrives split along
    its last dim (a `ColumnParallelLinear(gather_output=False)` output)."""

    def __init__(self, in_features, out_features, weight_attr=None, has_bias=True,
                 input_is_parallel=False, fuse_matmul_bias=False, mp_group=None, name=None):
        super().__init__(in_features, out_features, weight_attr,
                         bias_attr=None if has_bias else False, name=name)
        self.input_is_parallel = bool(input_is_parallel)
        self.mesh = _mp_mesh(mp_group, "RowParallelLinear")
        if self.mesh is not None:
            _divisible("RowParallelLinear", "in_features", self.in_features, self.mesh)
            self.weight = shard_tensor(self.weight, self.mesh, _on_mp(self.mesh, Shard(0)))
            if self.bias is not None:
                self.bias = shard_tensor(self.bias, self.mesh, _on_mp(self.mesh, Replicate()))

    def forward(self, x):
        one_dim = self.mesh is not None and self.mesh.ndim == 1
        if one_dim:
            x = reshard(x, self.mesh, [Shard(len(x.shape) - 1)])
        y = F.linear(x, self.weight, self.bias)
        return reshard(y, self.mesh, [Replicate()]) if one_dim else y


class VocabParallelEmbedding(nn.Embedding):
    """An embedding table whose rows (the vocabulary) are split over "mp"."""

    def __init__(self, num_embeddings, embedding_dim, weight_attr=None, mp_group=None,
                 name=None):
        super().__init__(num_embeddings, embedding_dim, weight_attr=weight_attr, name=name)
        self.mesh = _mp_mesh(mp_group, "VocabParallelEmbedding")
        if self.mesh is not None:
            _divisible("VocabParallelEmbedding", "num_embeddings", self.num_embeddings,
                       self.mesh)
            self.weight = shard_tensor(self.weight, self.mesh, _on_mp(self.mesh, Shard(0)))


class ParallelCrossEntropy(nn.Layer):
    """Softmax cross-entropy over logits split along the vocabulary (the
    output of a `ColumnParallelLinear(gather_output=False)` head): the loss
    of each position, shape `[..., 1]` as Paddle's (0 where the label is
    `ignore_index`). The partitioner reduces the softmax's sums across "mp"."""

    def __init__(self, mp_group=None, name=None, ignore_index=-100):
        super().__init__(name)
        self.ignore_index = int(ignore_index)
        self.mesh = _mp_mesh(mp_group, "ParallelCrossEntropy")

    def forward(self, input, label):
        return F.cross_entropy(input, label, reduction="none", ignore_index=self.ignore_index)
