"""Keeping the corpus cheap on xla: XLA compiles one executable per concrete
input shape (seconds each on a CI core), while the point of varying batch
and sequence sizes, that one program serves them all, is checked on numpy.
So on xla a model trains on the batches shaped like its first one."""
from __future__ import annotations

import numpy as np


def for_backend(batches, backend):
    """`batches` on numpy; on xla those whose arrays have the first batch's shapes."""
    if backend == "numpy":
        return list(batches)
    first = [np.shape(a) for a in batches[0]]
    same = [b for b in batches if [np.shape(a) for a in b] == first]
    assert len(same) >= 2, "the corpus batches need two of the first batch's shape for xla"
    return same
