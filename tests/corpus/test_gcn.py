"""A graph convolutional network over a batch of small graphs (the way
PGL / PyG models are ported to PaddlePaddle): edges as `src`/`dst` id
tensors with self-loops appended, symmetric degree normalisation computed
by scattering ones onto `dst`, messages `x[src] * norm` gathered with
`index_select` and summed onto their destination with
`scatter(..., overwrite=False)` into zeros (PaddlePaddle's index-add idiom),
then a per-graph mean readout by the same scatter over `graph_id`. Node,
edge and graph counts are all `None` in the InputSpec."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, save_load_infer, t, train_and_compare
from xla_budget import for_backend

FEAT, HID, CLASSES = 3, 6, 2


def scatter_sum(values, index, num):
    """sum of `values` rows into `num` rows by `index` (duplicates add up)."""
    out = d2s.zeros([num] + list(values.shape[1:]), dtype=values.dtype)
    return d2s.scatter(out, index, values, overwrite=False)


class GCNConv(nn.Layer):
    def __init__(self, cin, cout):
        super().__init__()
        self.linear = nn.Linear(cin, cout, bias_attr=False)
        self.bias = self.create_parameter([cout], is_bias=True)

    def forward(self, x, src, dst):
        n = x.shape[0]
        loops = d2s.arange(0, n, dtype="int64")
        src, dst = d2s.concat([src, loops]), d2s.concat([dst, loops])
        deg = scatter_sum(d2s.ones([src.shape[0], 1]), dst, n)               # [N, 1]
        inv_sqrt = d2s.pow(deg, -0.5)
        norm = d2s.index_select(inv_sqrt, src) * d2s.index_select(inv_sqrt, dst)
        h = self.linear(x)
        msg = d2s.index_select(h, src) * norm
        return scatter_sum(msg, dst, n) + self.bias


class GCN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(FEAT, HID)
        self.conv2 = GCNConv(HID, HID)
        self.head = nn.Linear(HID, CLASSES)

    def forward(self, x, src, dst, graph_id, labels):
        h = F.relu(self.conv1(x, src, dst))
        h = F.relu(self.conv2(h, src, dst))
        num_graphs = labels.shape[0]
        pooled = scatter_sum(h, graph_id, num_graphs)
        counts = scatter_sum(d2s.ones([h.shape[0], 1]), graph_id, num_graphs)
        logits = self.head(pooled / counts)
        return F.cross_entropy(logits, labels)


RNG = np.random.default_rng(22)


def graph_batch(sizes):
    xs, srcs, dsts, gid, start = [], [], [], [], 0
    for g, n in enumerate(sizes):
        xs.append(RNG.normal(size=(n, FEAT)))
        e = RNG.integers(0, n, (2, n + 1))
        srcs += list(e[0] + start) + list(e[1] + start)       # undirected: both ways
        dsts += list(e[1] + start) + list(e[0] + start)
        gid += [g] * n
        start += n
    return (np.concatenate(xs), np.array(srcs), np.array(dsts), np.array(gid),
            RNG.integers(0, CLASSES, len(sizes)))


BATCHES = [graph_batch(s) for s in ((3, 4), (2, 5, 3), (3, 4))]
SPEC = [InputSpec([None, FEAT]), InputSpec([None], "int64"), InputSpec([None], "int64"),
        InputSpec([None], "int64"), InputSpec([None], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gcn_message_passing_trains_like_eager(backend):
    _, _, fn = train_and_compare(GCN, for_backend(BATCHES, backend), backend, SPEC, opt="adam", lr=0.02)
    assert len(fn.program_cache) == 1


def test_gcn_save_load_infer(tmp_path):
    save_load_infer(GCN(), SPEC, [t(b) for b in BATCHES[1]], tmp_path)


def test_scatter_sum_is_an_index_add():
    """The idiom the model relies on, against numpy's unbuffered add."""
    vals, idx = RNG.normal(size=(6, 2)).astype("float32"), np.array([0, 2, 0, 3, 2, 0])
    expected = np.zeros((4, 2), "float32")
    np.add.at(expected, idx, vals)
    got = d2s.jit.to_static(scatter_sum)(t(vals), t(idx), 4).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(scatter_sum(t(vals), t(idx), 4).numpy(), expected, rtol=1e-6)
