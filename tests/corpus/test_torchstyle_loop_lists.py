"""A Python list filled in a tensor loop and returned, as decoding loops in
PyTorch-style model code do (RNN-T / CTC greedy decoders collecting the
emitted frames, a generate loop collecting per-step logits): the converted
function returns a Python list of Tensors, as eager does, its length known
once the program has run; `d2s.stack(outs)` of the same list is one Tensor.
Compared eagerly and converted on numpy and xla, with gradients through the
returned items and through `jit.save` -> `jit.load`."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS, close, t


def collect(x):
    outs = []
    i = 0
    while i < x.shape[0] and x.sum() > 0:
        outs.append(x[i] * 2)
        i += 1
    return outs


def collect_in_tuple(x):
    outs, steps = [], 0
    while x.sum() > steps:
        outs.append(x * (steps + 1))
        steps += 1
    return {"frames": outs, "n": steps}, x.sum()


def collect_reversed(x):
    outs = []
    for i in range(x.shape[0]):
        if x[i].sum() > 0:
            outs.append(x[i] + 1)
    return outs[::-1]


def collect_stacked(x):
    outs = []
    i = 0
    while i < x.shape[0]:
        outs.append(x[i] * 3)
        i += 1
    return d2s.stack(outs), outs


CASES = {"while": collect, "dict_and_tuple": collect_in_tuple,
         "reversed_slice": collect_reversed, "stacked_and_list": collect_stacked}


def _tree(v):
    if isinstance(v, (list, tuple)):
        return type(v), [_tree(x) for x in v]
    if isinstance(v, dict):
        return {k: _tree(x) for k, x in v.items()}
    return v.numpy() if isinstance(v, d2s.Tensor) else v


def _same(actual, expected, backend, what="out"):
    if isinstance(expected, tuple) and len(expected) == 2 and isinstance(expected[0], type):
        assert actual[0] is expected[0], f"{what}: {actual[0]} returned, eager {expected[0]}"
        assert len(actual[1]) == len(expected[1]), f"{what}: length"
        for i, (a, e) in enumerate(zip(actual[1], expected[1])):
            _same(a, e, backend, f"{what}[{i}]")
    elif isinstance(expected, dict):
        assert set(actual) == set(expected)
        for k in expected:
            _same(actual[k], expected[k], backend, f"{what}[{k}]")
    elif isinstance(expected, np.ndarray):
        close(actual, expected, backend, what)
    else:
        assert actual == expected, what


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
def test_list_filled_in_tensor_loop_comes_back_as_list(case, backend):
    fn = CASES[case]
    static = d2s.jit.to_static(fn, backend=backend)
    for rows in ([[1.0, 2.0], [0.5, -3.0], [2.0, 1.0]], [[1.0, 1.0], [2.0, 0.5]]):
        x = np.asarray(rows, "float32")
        _same(_tree(static(t(x))), _tree(fn(t(x))), backend)


class Decoder(nn.Layer):
    """A greedy RNN decoder collecting each step's logits in a list."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(3, 4)
        self.out = nn.Linear(4, 3)

    def forward(self, x, h):
        logits = []
        step = 0
        while step < x.shape[1] and h.abs().sum() < 100:
            y, h = self.cell(x[:, step], h)
            logits.append(self.out(y))
            step += 1
        return logits


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_list_items_carry_gradients(backend):
    d2s.seed(0)
    eager = Decoder()
    model = Decoder()
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model.forward, backend=backend)
    rng = np.random.RandomState(0)
    x, h = rng.randn(2, 3, 3).astype("float32"), rng.randn(2, 4).astype("float32")
    results = []
    for m, f in ((eager, eager), (model, static)):
        outs = f(t(x), t(h))
        assert type(outs) is list and len(outs) == 3
        loss = sum((o * (i + 1)).sum() for i, o in enumerate(outs))
        loss.backward()
        results.append(([o.numpy() for o in outs],
                        {n: p.grad.numpy() for n, p in m.named_parameters()}))
    for i, (a, e) in enumerate(zip(results[1][0], results[0][0])):
        close(a, e, backend, f"logits[{i}]")
    for n, g in results[0][1].items():
        # (a loop's gradients sum its trips in another order than eager's tape)
        np.testing.assert_allclose(results[1][1][n], g, rtol=1e-5, atol=1e-6,
                                   err_msg=f"grad of {n}")


def test_saved_program_returns_the_list(tmp_path):
    d2s.seed(0)
    model = Decoder()
    model.eval()
    rng = np.random.RandomState(1)
    x, h = rng.randn(2, 3, 3).astype("float32"), rng.randn(2, 4).astype("float32")
    expected = [o.numpy() for o in model(t(x), t(h))]
    spec = [InputSpec([None, 3, 3], "float32"), InputSpec([None, 4], "float32")]
    d2s.jit.save(model, str(tmp_path / "dec"), input_spec=spec)
    loaded = d2s.jit.load(str(tmp_path / "dec"))
    outs = loaded(t(x), t(h))
    assert type(outs) is list and len(outs) == len(expected)
    for a, e in zip(outs, expected):
        np.testing.assert_allclose(a.numpy(), e, rtol=1e-6, atol=1e-6)
