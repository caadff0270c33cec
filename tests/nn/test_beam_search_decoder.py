"""nn.BeamSearchDecoder + nn.dynamic_decode: the ids, scores, lengths and
step count of a loop-based numpy beam search over the same cell (Paddle's
rules: only beam 0 alive at first, finished beams emit end_token for free,
parents traced back); tile_beam_merge_with_batch; a converted decode
(numpy, xla) equals eager."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

V, H, E, BEAM, END, START = 7, 5, 4, 3, 1, 0
RNG = np.random.default_rng(21)
EMB = RNG.standard_normal((V, E)) * 0.8
WX, WH = RNG.standard_normal((E, H)) * 0.7, RNG.standard_normal((H, H)) * 0.7
WO = RNG.standard_normal((H, V)) * 1.5
WO[:, END] += 0.4  # sequences end within a few steps


class Cell(nn.Layer):
    def forward(self, x, h):
        h = d2s.tanh(d2s.matmul(x, d2s.to_tensor(WX)) + d2s.matmul(h, d2s.to_tensor(WH)))
        return h, h


def _decoder():
    return nn.BeamSearchDecoder(
        Cell(), START, END, BEAM,
        embedding_fn=lambda ids: d2s.gather(d2s.to_tensor(EMB), ids.reshape([-1])).reshape(
            list(ids.shape) + [E]),
        output_fn=lambda h: d2s.matmul(h, d2s.to_tensor(WO)))


def _logsoftmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _reference(h0, max_step):
    batch = h0.shape[0]
    h = np.repeat(h0[:, None], BEAM, 1)
    logp = np.full((batch, BEAM), -np.inf)
    logp[:, 0] = 0
    fin = np.zeros((batch, BEAM), bool)
    lengths = np.zeros((batch, BEAM), np.int64)
    tok = np.full((batch, BEAM), START)
    ids, parents, step = [], [], 0
    while True:
        h = np.tanh(EMB[tok] @ WX + h @ WH)
        lp = _logsoftmax(h @ WO)
        new_ids, new_par = np.zeros((batch, BEAM), int), np.zeros((batch, BEAM), int)
        new_logp = np.zeros((batch, BEAM))
        for n in range(batch):
            cand = []
            for b in range(BEAM):
                for v in range(V):
                    add = (0.0 if v == END else -np.inf) if fin[n, b] else lp[n, b, v]
                    cand.append((logp[n, b] + add, b, v))
            cand.sort(key=lambda c: -c[0])
            for k, (s, b, v) in enumerate(cand[:BEAM]):
                new_logp[n, k], new_par[n, k], new_ids[n, k] = s, b, v
        rows = np.arange(batch)[:, None]
        h = h[rows, new_par]
        lengths = lengths[rows, new_par] + (~fin[rows, new_par])
        fin = fin[rows, new_par] | (new_ids == END)
        logp, tok = new_logp, new_ids
        ids.append(new_ids)
        parents.append(new_par)
        step += 1
        if fin.all() or step > max_step:
            break
    ids, parents = np.array(ids), np.array(parents)
    out = np.zeros_like(ids)
    beam = np.tile(np.arange(BEAM), (batch, 1))
    for t in range(len(ids) - 1, -1, -1):  # follow the parents back
        out[t] = np.take_along_axis(ids[t], beam, 1)
        beam = np.take_along_axis(parents[t], beam, 1)
    return out.transpose(1, 0, 2), logp, lengths


@pytest.mark.parametrize("max_step", [2, 20])
def test_matches_numpy_beam_search(max_step):
    h0 = RNG.standard_normal((2, H)) * 0.5
    ids, states, lengths = nn.dynamic_decode(_decoder(), d2s.to_tensor(h0),
                                             max_step_num=max_step, return_length=True)
    want_ids, want_logp, want_len = _reference(h0, max_step)
    np.testing.assert_array_equal(ids.numpy(), want_ids)
    np.testing.assert_allclose(states.log_probs.numpy(), want_logp, rtol=1e-10)
    np.testing.assert_array_equal(lengths.numpy(), want_len)
    assert ids.shape[1] == (3 if max_step == 2 else want_ids.shape[1])


def test_tile_beam_merge_with_batch():
    x = d2s.to_tensor(np.arange(6.0).reshape(2, 3))
    out = nn.BeamSearchDecoder.tile_beam_merge_with_batch(x, 2).numpy()
    np.testing.assert_array_equal(out, np.repeat(np.arange(6.0).reshape(2, 3), 2, 0))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_decode_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    dec = _decoder()

    def run(h0):
        ids, states = nn.dynamic_decode(dec, h0, max_step_num=6)
        return ids, states.log_probs
    converted = to_static(run, backend=backend)
    steps = set()
    for scale in (0.5, 3.0, 0.0):  # one program; the values decide the step count
        h0 = d2s.to_tensor(np.random.default_rng(5).standard_normal((2, H)) * scale)
        eager = run(h0)
        conv = converted(h0)
        steps.add(eager[0].shape[1])
        np.testing.assert_array_equal(conv[0].numpy(), eager[0].numpy())
        np.testing.assert_allclose(conv[1].numpy(), eager[1].numpy(), rtol=1e-10)
    assert len(steps) > 1
