"""Paddle's `nn.SyncBatchNorm`: batch normalization whose batch statistics
are those of the global batch across data-parallel processes. In one
process the global batch is the local one, so it is `BatchNorm` exactly;
training across several processes would need the statistics all-reduced
inside forward, which d2s does not do yet, so it is refused rather than
silently normalizing by per-process statistics."""
from __future__ import annotations

import os

from .norm import _BatchNormBase

__all__ = ["SyncBatchNorm"]

# the process-count variables `d2s.distributed.env` reads (nn may import only core)
_SIZE_VARS = ("D2S_WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")


def _world_size():
    for name in _SIZE_VARS:
        value = os.environ.get(name)
        if value:
            try:
                return int(value)
            except ValueError:
                continue
    return 1


class SyncBatchNorm(_BatchNormBase):
    """Batch normalization over the channel axis of a 2-D to 5-D input, with the
    batch statistics of all processes (one process: `BatchNorm`)."""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None,
                 bias_attr=None, data_format="NCHW", name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format,
                         None, name)

    def forward(self, x):
        if self.training:
            n = _world_size()
            if n > 1:
                raise NotImplementedError(
                    f"SyncBatchNorm: training across {n} processes would need the batch "
                    "statistics all-reduced in forward, which d2s does not do yet; use "
                    "BatchNorm (per-process statistics) or train in one process")
        return super().forward(x)

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
