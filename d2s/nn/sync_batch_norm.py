"""Paddle's `nn.SyncBatchNorm`: batch normalization whose batch statistics
are those of the global batch across data-parallel processes. In one
process the global batch is the local one, so it is `BatchNorm` exactly.
Across several (the MPI world of `d2s.distributed`, numpy backend), each
mean is the all-reduced per-channel sum over the all-reduced count (two
passes: the mean, then the centered squares, as the one-process formula),
through the `c_allreduce_sum` op, so the gradient is summed across the
processes too and every process holds the same running statistics.
Processes may hold batches of different sizes."""
from __future__ import annotations

from ..core.ops import concat, ones_like, split, sum as sum_
from ..core.ops.collective_ops import c_allreduce_sum, process_count
from .norm import _BatchNormBase, _batch_norm

__all__ = ["SyncBatchNorm"]


def _global_mean(v, axes):
    """The mean over `axes` of the values every process holds: one all-reduce
    of this process's per-channel sums and counts, side by side."""
    local = sum_(v, axis=axes, keepdim=True)
    count = sum_(ones_like(v), axis=axes, keepdim=True)
    axis = next(i for i in range(len(v.shape)) if i not in axes)
    total, n = split(c_allreduce_sum(concat([local, count], axis=axis)), 2, axis=axis)
    return total / n


class SyncBatchNorm(_BatchNormBase):
    """Batch normalization over the channel axis of a 2-D to 5-D input, with the
    batch statistics of all processes (one process: `BatchNorm`)."""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCHW", name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         None, name)

    def forward(self, x):
        if not self.training or process_count() == 1:
            return super().forward(x)
        return _batch_norm(x, self._mean, self._variance, self.weight, self.bias, True,
                           self._momentum, self._epsilon, self._data_format,
                           self._use_global_stats, mean_of=_global_mean)

    @classmethod
    def convert_sync_batchnorm(cls, layer):
        """`layer` with every BatchNorm sublayer (and `layer` itself, if one)
        replaced by a SyncBatchNorm holding the same parameters and statistics."""
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, SyncBatchNorm):
            new = cls(layer._num_features, layer._momentum, layer._epsilon,
                      weight_attr=False if layer.weight is None else None,
                      bias_attr=False if layer.bias is None else None,
                      data_format=layer._data_format)
            new.weight, new.bias = layer.weight, layer.bias
            new._mean, new._variance = layer._mean, layer._variance
            new.training = layer.training
            return new
        for name, sub in list(layer.named_children()):
            converted = cls.convert_sync_batchnorm(sub)
            if converted is not sub:
                setattr(layer, name, converted)
        return layer
