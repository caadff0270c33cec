"""More of Paddle's `paddle.io` data helpers: `ComposeDataset` (fields of
several datasets side by side), `ChainDataset` (iterable datasets one after
another), `SubsetRandomSampler`, `WeightedRandomSampler`, and
`get_worker_info` (None: the DataLoader runs in the calling process).
Sampling draws from NumPy's global generator, as the other samplers."""
from __future__ import annotations

import numpy as np

from .data import Dataset, IterableDataset, Sampler

__all__ = ["ComposeDataset", "ChainDataset", "SubsetRandomSampler", "WeightedRandomSampler",
           "get_worker_info"]


def _fields(sample):
    return list(sample) if isinstance(sample, (tuple, list)) else [sample]


class ComposeDataset(Dataset):
    """Sample `i` is the fields of sample `i` of every dataset, concatenated
    into one tuple; the datasets must be map-style and of one length."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ComposeDataset: no datasets given")
        for k, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ComposeDataset: datasets[{k}] is an IterableDataset; "
                                "compose map-style datasets (ChainDataset chains iterables)")
        lengths = {len(d) for d in self.datasets}
        if len(lengths) != 1:
            raise ValueError(f"ComposeDataset: the datasets differ in length: "
                             f"{[len(d) for d in self.datasets]}")

    def __len__(self):
        return len(self.datasets[0])

    def __getitem__(self, idx):
        out = []
        for d in self.datasets:
            out.extend(_fields(d[idx]))
        return tuple(out)


class ChainDataset(IterableDataset):
    """The samples of each iterable dataset in turn."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        for k, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset: datasets[{k}] is not an IterableDataset")

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):  # TypeError, as for any unsized iterable: list(chain) works
        raise TypeError("ChainDataset has no length; iterate over it")


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        if not self.indices:
            raise ValueError("SubsetRandomSampler: indices is empty")

    def __len__(self):
        return len(self.indices)

    def __iter__(self):
        return iter([self.indices[i] for i in np.random.permutation(len(self.indices))])


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to
    `weights` (with replacement, or each at most once)."""

    def __init__(self, weights, num_samples, replacement=True):
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, np.float64)
        if w.ndim != 1 or w.size == 0 or np.any(w < 0) or not np.all(np.isfinite(w)) \
                or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be a non-empty 1-D sequence "
                             "of finite non-negative numbers, not all zero")
        if isinstance(num_samples, bool) or int(num_samples) != num_samples or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples must be a positive int, got "
                             f"{num_samples!r}")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"WeightedRandomSampler: {num_samples} samples without "
                             f"replacement from {np.count_nonzero(w)} non-zero weights")
        self.weights, self.num_samples, self.replacement = w, int(num_samples), replacement

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        p = self.weights / self.weights.sum()
        return iter(np.random.choice(len(p), self.num_samples, self.replacement, p).tolist())


def get_worker_info():
    """Information about the DataLoader worker process running the caller:
    always None, as d2s's DataLoader loads in the calling process."""
    return None
