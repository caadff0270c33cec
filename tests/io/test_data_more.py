"""ComposeDataset, ChainDataset, SubsetRandomSampler, WeightedRandomSampler,
get_worker_info: what each yields, through a DataLoader too; the weighted
draw's frequencies follow the weights; bad arguments are clear errors."""
import numpy as np
import pytest

import d2s
from d2s import io


class Squares(io.Dataset):
    def __init__(self, n, k=1):
        self.n, self.k = n, k

    def __getitem__(self, i):
        return np.float32(i * i * self.k), np.int64(i)

    def __len__(self):
        return self.n


class Count(io.IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(np.arange(self.lo, self.hi, dtype=np.float32))


def test_compose_and_chain():
    comp = io.ComposeDataset([Squares(4), Squares(4, k=2)])
    assert len(comp) == 4 and comp[3] == (9.0, 3, 18.0, 3)
    (a, b, c, d), = list(io.DataLoader(comp, batch_size=4))
    np.testing.assert_array_equal(c.numpy(), 2 * a.numpy())
    assert list(io.ChainDataset([Count(0, 2), Count(5, 7)])) == [0, 1, 5, 6]
    batches = [t.numpy().tolist() for t in io.DataLoader(
        io.ChainDataset([Count(0, 3), Count(10, 12)]), batch_size=2)]
    assert batches == [[0, 1], [2, 10], [11]]
    with pytest.raises(ValueError, match="differ in length"):
        io.ComposeDataset([Squares(3), Squares(4)])
    with pytest.raises(TypeError, match="IterableDataset"):
        io.ChainDataset([Squares(3)])


def test_samplers():
    np.random.seed(0)
    sub = io.SubsetRandomSampler([3, 5, 7, 9])
    first, second = list(sub), list(sub)
    assert sorted(first) == [3, 5, 7, 9] and len(sub) == 4 and first != second
    w = io.WeightedRandomSampler([0.0, 1.0, 3.0], 4000)
    counts = np.bincount(list(w), minlength=3)
    assert counts[0] == 0 and abs(counts[2] / counts[1] - 3.0) < 0.3
    once = list(io.WeightedRandomSampler([1.0, 1.0, 0.0, 2.0], 3, replacement=False))
    assert sorted(once) == [0, 1, 3]
    loader = io.DataLoader(Squares(10), batch_sampler=io.BatchSampler(
        sampler=io.SubsetRandomSampler([1, 2]), batch_size=2))
    (x, i), = list(loader)
    assert sorted(i.numpy().tolist()) == [1, 2]
    with pytest.raises(ValueError, match="without replacement"):
        io.WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        io.WeightedRandomSampler([1.0, -1.0], 2)
    assert io.get_worker_info() is None
