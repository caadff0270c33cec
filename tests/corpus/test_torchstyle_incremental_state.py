"""fairseq-style incremental decoding: an attention layer keeps its keys in
a dict `incremental_state` and tests `"prev_key" in saved_state` to extend
them. In a decoding loop on a tensor, an entry first created inside the
loop cannot be tested with `in` (a static program decides the test once,
while it is built): that is a clear error naming the line and what to
write; the entry created before the loop (an empty tensor `concat` extends,
as the error says) converts and matches eager on numpy and xla, as does
the Python-unrolled loop with the entry created on its first trip. `in` on
Python values and eager Tensors keeps Python's answer."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import ControlFlowError

from harness import BACKENDS, close, t


class IncrementalAttention(nn.Layer):
    def __init__(self, d=4):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, query, saved=None):
        """`saved`: this layer's buffer of the incremental state (fairseq's
        `_get_input_buffer`), updated in place."""
        q, k, v = self.q_proj(query), self.k_proj(query), self.v_proj(query)
        if saved is not None:
            if "prev_key" in saved:
                k = d2s.concat([saved["prev_key"], k], axis=1)
                v = d2s.concat([saved["prev_value"], v], axis=1)
            saved["prev_key"] = k
            saved["prev_value"] = v
        w = F.softmax(d2s.bmm(q, k.transpose([0, 2, 1])) / 2.0, axis=-1)
        return d2s.bmm(w, v)


def _model():
    d2s.seed(0)
    return IncrementalAttention()


X = np.random.RandomState(0).randn(2, 3, 4).astype("float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_entry_created_inside_a_tensor_loop_is_a_clear_error(backend):
    model = _model()

    def decode(x, n):
        state = {}
        y, i = x[:, :1], 0
        while i < n:
            y = model(y, state)
            i += 1
        return y

    static = d2s.jit.to_static(decode, backend=backend)
    with pytest.raises(ControlFlowError) as info:
        static(t(X), t(3))
    msg = str(info.value)
    assert "'prev_key' in" in msg and "test_torchstyle_incremental_state.py" in msg
    assert "before the loop" in msg


@pytest.mark.parametrize("backend", BACKENDS)
def test_entry_created_before_the_loop_decodes_like_eager(backend):
    model = _model()

    def decode(x, n):
        empty = d2s.zeros([x.shape[0], 0, x.shape[2]])
        state = {"prev_key": empty, "prev_value": empty}
        y, i = x[:, :1], 0
        outs = []
        while i < n:
            y = model(y, state)
            outs.append(y)
            i += 1
        return d2s.concat(outs, axis=1), state["prev_key"]

    static = d2s.jit.to_static(decode, backend=backend)
    for n in (3, 1):
        got, expected = static(t(X), t(n)), decode(t(X), t(n))
        for a, e, what in zip(got, expected, ("outputs", "keys")):
            close(a.numpy(), e.numpy(), backend, f"{what} after {n} steps")


@pytest.mark.parametrize("backend", BACKENDS)
def test_unrolled_incremental_decoding(backend):
    model = _model()

    def decode(x):
        state = {}
        outs = [model(x[:, i:i + 1], state) for i in range(x.shape[1])]
        return d2s.concat(outs, axis=1), state["prev_value"]

    static = d2s.jit.to_static(decode, backend=backend)
    for a, e in zip(static(t(X)), decode(t(X))):
        close(a.numpy(), e.numpy(), backend, "unrolled")


def test_in_of_python_values_keeps_python_answers():
    @d2s.jit.to_static
    def f(x, keys):
        d = {"a": 1}
        out = x
        if "a" in d and "b" not in d:
            out = out + 1
        if 2 in keys:
            out = out * 2
        return out, "z" in d, 3 not in keys

    y, has_z, no_3 = f(t([1.0]), [1, 2])
    assert y.numpy().tolist() == [4.0] and has_z is False and no_3 is True
