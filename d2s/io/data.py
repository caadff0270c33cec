"""`d2s.io`: datasets, batch samplers and the DataLoader (Paddle's classes).

Single-process and synchronous: `num_workers` and the buffering options are
accepted for compatibility and change nothing. Shuffling draws from NumPy's
global generator (`np.random.seed` makes it repeatable), as Paddle's does.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..core.tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "random_split",
           "Sampler", "SequenceSampler", "RandomSampler", "BatchSampler",
           "DistributedBatchSampler", "DataLoader", "default_collate_fn", "batch"]


class Dataset:
    """Map-style dataset: define `__getitem__(i)` and `__len__()`."""

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class IterableDataset(Dataset):
    """Stream-style dataset: define `__iter__()`."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples `i` of each tensor (all of the same length along axis 0)."""

    def __init__(self, tensors):
        tensors = list(tensors)
        lengths = {int(t.shape[0]) for t in tensors}
        if len(lengths) != 1:
            raise ValueError(f"TensorDataset: tensors differ in length along axis 0: "
                             f"{[int(t.shape[0]) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, idx):
        return tuple(t[idx] for t in self.tensors)

    def __len__(self):
        return int(self.tensors[0].shape[0])


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Disjoint random subsets of the given lengths (fractions summing to 1 also work)."""
    n = len(dataset)
    if all(0 < x < 1 for x in lengths) and math.isclose(sum(lengths), 1.0):
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError(f"random_split: lengths sum to {sum(lengths)}, the dataset has {n}")
    order = np.random.permutation(n).tolist()
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, order[start:start + size]))
        start += size
    return out


class Sampler:
    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def __len__(self):
        return len(self.data_source)


class SequenceSampler(Sampler):
    def __iter__(self):
        return iter(range(len(self.data_source)))


class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        self.replacement, self._num = replacement, num_samples

    def __len__(self):
        return self._num if self._num is not None else len(self.data_source)

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            return iter(np.random.randint(0, n, len(self)).tolist())
        return iter(np.random.permutation(n)[:len(self)].tolist())


class BatchSampler(Sampler):
    """Lists of `batch_size` indices of `dataset` (in order, or shuffled each
    epoch), or of the indices `sampler` yields; `drop_last` drops a short last batch."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1,
                 drop_last=False):
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: give exactly one of dataset and sampler")
        if int(batch_size) <= 0:
            raise ValueError(f"BatchSampler: batch_size must be positive, got {batch_size}")
        if sampler is None:
            sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        elif shuffle:
            raise ValueError("BatchSampler: shuffle applies to a dataset, not to a sampler")
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), drop_last

    def __iter__(self):
        chunk = []
        for i in self.sampler:
            chunk.append(i)
            if len(chunk) == self.batch_size:
                yield chunk
                chunk = []
        if chunk and not self.drop_last:
            yield chunk

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedBatchSampler(BatchSampler):
    """This rank's share of the batches: the (optionally shuffled, per
    `set_epoch`) indices padded to a multiple of `num_replicas`, every
    `num_replicas`-th one from `rank`."""

    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False,
                 drop_last=False):
        self.dataset, self.batch_size = dataset, int(batch_size)
        self.nranks = 1 if num_replicas is None else int(num_replicas)
        self.local_rank = 0 if rank is None else int(rank)
        self.shuffle, self.drop_last, self.epoch = shuffle, drop_last, 0
        self.num_samples = int(math.ceil(len(dataset) / self.nranks))
        self.total_size = self.num_samples * self.nranks

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __iter__(self):
        n = len(self.dataset)
        indices = np.arange(n)
        if self.shuffle:
            indices = np.random.RandomState(self.epoch).permutation(n)
        indices = indices.tolist()
        indices += indices[:self.total_size - n]
        mine = indices[self.local_rank:self.total_size:self.nranks]
        for start in range(0, len(mine), self.batch_size):
            chunk = mine[start:start + self.batch_size]
            if len(chunk) == self.batch_size or not self.drop_last:
                yield chunk

    def __len__(self):
        n = self.num_samples
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def default_collate_fn(samples):
    """Stack a list of samples field by field: arrays, numbers and Tensors become
    one Tensor with a leading batch dim; dicts and sequences are collated per
    key / position; strings stay a list."""
    first = samples[0]
    if isinstance(first, Tensor):
        return Tensor(np.stack([s.numpy() for s in samples]))
    if isinstance(first, (np.ndarray, np.generic, int, float, bool)) and \
            not isinstance(first, str):
        return Tensor(np.stack([np.asarray(s) for s in samples]))
    if isinstance(first, str):
        return list(samples)
    if isinstance(first, Mapping):
        return {k: default_collate_fn([s[k] for s in samples]) for k in first}
    if isinstance(first, Sequence):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate_fn: samples have different numbers of fields")
        return [default_collate_fn(list(field)) for field in zip(*samples)]
    raise TypeError(f"default_collate_fn: cannot batch samples of type {type(first).__name__}")


class DataLoader:
    """Batches of a dataset: `batch_size` / `shuffle` / `drop_last`, or a
    `batch_sampler`; `collate_fn` (default: `default_collate_fn`) makes each
    batch. `return_list=True` (Paddle's default) yields lists of fields."""

    def __init__(self, dataset, feed_list=None, places=None, return_list=True,
                 batch_sampler=None, batch_size=1, shuffle=False, drop_last=False,
                 collate_fn=None, num_workers=0, use_buffer_reader=True, prefetch_factor=2,
                 use_shared_memory=True, timeout=0, worker_init_fn=None,
                 persistent_workers=False):
        self.dataset, self.return_list = dataset, return_list
        self.collate_fn = collate_fn or default_collate_fn
        self._iterable = isinstance(dataset, IterableDataset)
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError("DataLoader: batch_sampler excludes batch_size, shuffle and "
                                 "drop_last")
            self.batch_sampler = batch_sampler
        elif self._iterable:
            if shuffle:
                raise ValueError("DataLoader: an IterableDataset cannot be shuffled")
            self.batch_sampler = None
        else:
            self.batch_sampler = BatchSampler(dataset, shuffle=shuffle, batch_size=batch_size,
                                              drop_last=drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last

    def __len__(self):
        if self.batch_sampler is None:
            raise TypeError("DataLoader over an IterableDataset has no length")
        return len(self.batch_sampler)

    def _out(self, batch):
        if not self.return_list and isinstance(batch, list):
            return tuple(batch)
        return batch

    def __iter__(self):
        if self.batch_sampler is None:
            chunk = []
            for sample in self.dataset:
                chunk.append(sample)
                if len(chunk) == self.batch_size:
                    yield self._out(self.collate_fn(chunk))
                    chunk = []
            if chunk and not self.drop_last:
                yield self._out(self.collate_fn(chunk))
            return
        for indices in self.batch_sampler:
            yield self._out(self.collate_fn([self.dataset[i] for i in indices]))

    def __call__(self):
        return iter(self)


def batch(reader, batch_size, drop_last=False):
    """Paddle's reader decorator: a reader (a function returning an iterable of
    samples) -> a reader of lists of `batch_size` samples."""
    batch_size = int(batch_size)
    if batch_size <= 0:
        raise ValueError(f"batch: batch_size must be positive, got {batch_size}")

    def batched():
        chunk = []
        for sample in reader():
            chunk.append(sample)
            if len(chunk) == batch_size:
                yield chunk
                chunk = []
        if chunk and not drop_last:
            yield chunk
    return batched
