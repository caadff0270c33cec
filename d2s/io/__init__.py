"""`d2s.io`: datasets and the DataLoader (`data`), and the pickle-free
`d2s.save` / `d2s.load` of nested state (`save_load`)."""
from .data import (BatchSampler, DataLoader, Dataset, DistributedBatchSampler,  # noqa: F401
                   IterableDataset, RandomSampler, Sampler, SequenceSampler, Subset,
                   TensorDataset, default_collate_fn, random_split)
from .data_more import (ChainDataset, ComposeDataset, SubsetRandomSampler,  # noqa: F401
                        WeightedRandomSampler, get_worker_info)
from .save_load import load, save  # noqa: F401

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "random_split", "Sampler",
           "SequenceSampler", "RandomSampler", "BatchSampler", "DistributedBatchSampler",
           "DataLoader", "default_collate_fn", "save", "load", "ComposeDataset", "ChainDataset",
           "SubsetRandomSampler", "WeightedRandomSampler", "get_worker_info"]
