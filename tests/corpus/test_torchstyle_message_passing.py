"""Graph-net message passing as PyTorch Geometric-style code ports it:
messages `lin(x)[src]` scatter-added to their destination nodes with
`x.put_along_axis(dst_index, msg, axis=0, reduce="add")` (the Tensor
method), mean-normalised by in-degree, with the node and edge counts known
only at run time. Compared with eager and a numpy `np.add.at` reference on
numpy and xla, with gradients, over graphs of two sizes."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t

D = 3


class MeanConv(nn.Layer):
    def __init__(self):
        super().__init__()
        self.msg = nn.Linear(D, D)
        self.root = nn.Linear(D, D)

    def forward(self, x, src, dst):
        messages = self.msg(x)[src]
        index = dst[:, None].expand([dst.shape[0], D])
        summed = d2s.zeros_like(x).put_along_axis(index, messages, axis=0, reduce="add")
        degree = d2s.zeros([x.shape[0], 1]).put_along_axis(
            dst[:, None], d2s.ones([dst.shape[0], 1]), axis=0, reduce="add")
        return F.relu(self.root(x) + summed / degree.clip(min=1.0))


def _graph(rng, nodes, edges):
    return (rng.randn(nodes, D).astype("float32"), rng.randint(0, nodes, edges),
            rng.randint(0, nodes, edges))


def _reference(layer, x, src, dst):
    w, b = layer.msg.weight.numpy(), layer.msg.bias.numpy()
    msg = (x @ w + b)[src]
    summed = np.zeros_like(x)
    np.add.at(summed, dst, msg)
    deg = np.maximum(np.bincount(dst, minlength=len(x)), 1)[:, None]
    root = x @ layer.root.weight.numpy() + layer.root.bias.numpy()
    return np.maximum(root + summed / deg, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scatter_add_message_passing_at_run_time_sizes(backend):
    d2s.seed(0)
    eager = MeanConv()
    model = MeanConv()
    model.set_state_dict(eager.state_dict())
    spec = [InputSpec([None, D]), InputSpec([None], "int64"), InputSpec([None], "int64")]
    static = d2s.jit.to_static(model, input_spec=spec, backend=backend)
    rng = np.random.RandomState(0)
    for nodes, edges in ((5, 8), (3, 2)):
        x, src, dst = _graph(rng, nodes, edges)
        results = []
        for m, f in ((eager, eager), (model, static)):
            out = f(t(x), t(src), t(dst))
            (out * out).sum().backward()
            results.append((out.numpy(), {k: p.grad.numpy() for k, p in m.named_parameters()}))
            m.clear_gradients()
        close(results[1][0], results[0][0], backend, f"{nodes} nodes")
        np.testing.assert_allclose(results[0][0], _reference(eager, x, src, dst), rtol=1e-5,
                                   atol=1e-6)
        for k, g in results[0][1].items():
            np.testing.assert_allclose(results[1][1][k], g, rtol=1e-5, atol=1e-6, err_msg=k)
