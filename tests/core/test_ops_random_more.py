"""randint / randperm / multinomial (d2s/core/ops/random_more.py): composed
from host-drawn uniforms, so under one seed eager, numpy-static and
xla-static give the same numbers; the laws are checked statistically."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.static.backend import BackendFallbackWarning


def _three_ways(fn, *arrays):
    """fn's outputs eagerly and converted on numpy and xla, each after seed(7)."""
    outs = []
    d2s.seed(7)
    outs.append(fn(*[d2s.to_tensor(a) for a in arrays]).numpy())
    for backend in ("numpy", "xla"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", BackendFallbackWarning)
            sf = d2s.jit.to_static(lambda *xs: fn(*xs), backend=backend)
            d2s.seed(7)
            outs.append(sf(*[d2s.to_tensor(a) for a in arrays]).numpy())
    for o in outs[1:]:
        assert o.dtype == outs[0].dtype
        np.testing.assert_array_equal(o, outs[0])
    return outs[0]


def test_randint_law_and_backends():
    x = _three_ways(lambda z: z + d2s.randint(2, 6, [4000]), np.zeros(4000, np.int64))
    assert x.dtype == np.int64 and x.min() == 2 and x.max() == 5
    counts = np.bincount(x - 2, minlength=4) / x.size
    assert np.all(np.abs(counts - 0.25) < 0.03)
    assert d2s.randint(5, shape=[3], dtype="int32").dtype == np.int32
    with pytest.raises(ValueError, match="greater than low"):
        d2s.randint(3, 3)


def test_randperm_is_a_permutation():
    p = _three_ways(lambda z: z + d2s.randperm(10), np.zeros(10, np.int64))
    assert sorted(p.tolist()) == list(range(10))
    firsts = [int(d2s.randperm(4).numpy()[0]) for _ in range(800)]
    assert np.all(np.abs(np.bincount(firsts, minlength=4) / 800 - 0.25) < 0.06)


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_multinomial_with_and_without_replacement():
    w = np.array([[0.1, 0.0, 0.9], [1.0, 1.0, 2.0]])
    s = _three_ways(lambda p: d2s.multinomial(p, 3000, replacement=True), w)
    assert s.shape == (2, 3000) and s.dtype == np.int64
    for row, weights in zip(s, w):
        freq = np.bincount(row, minlength=3) / row.size
        np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.03)
    draws = np.stack([d2s.multinomial(d2s.to_tensor(w[1]), 2).numpy() for _ in range(600)])
    assert all(a != b for a, b in draws)  # without replacement: distinct
    first = np.bincount(draws[:, 0], minlength=3) / len(draws)
    np.testing.assert_allclose(first, [0.25, 0.25, 0.5], atol=0.06)
    never = _three_ways(lambda p: d2s.multinomial(p, 2), w[:1])
    assert 1 not in never  # a zero weight is never drawn while others remain
    with pytest.raises(ValueError, match="without replacement from 3"):
        d2s.multinomial(d2s.to_tensor(w), 4)
    with pytest.raises(ValueError, match="non-negative"):
        d2s.multinomial(d2s.to_tensor(np.array([0.5, -0.1])))


def test_top_p_sampling_keeps_the_nucleus():
    import d2s.tensor
    probs = np.tile(np.array([[0.5, 0.1, 0.3, 0.1]]), (3000, 1))
    scores, ids = _three_ways_pair(lambda x, p: d2s.tensor.top_p_sampling(x, p), probs,
                                   np.full(3000, 0.7))
    assert ids.shape == (3000, 1) and ids.dtype == np.int64
    freq = np.bincount(ids[:, 0], minlength=4) / 3000
    np.testing.assert_allclose(freq, [0.625, 0, 0.375, 0], atol=0.03)  # 0.5, 0.3 renormalized
    np.testing.assert_array_equal(scores[:, 0], probs[0][ids[:, 0]])
    d2s.seed(3)  # k=1 and a tiny p: only the most probable token
    _, top = d2s.tensor.top_p_sampling(d2s.to_tensor(probs[:5]), d2s.to_tensor(np.full(5, 0.9)),
                                       k=1)
    assert top.numpy().ravel().tolist() == [0] * 5


def _three_ways_pair(fn, *arrays):
    outs = []
    d2s.seed(7)
    outs.append([o.numpy() for o in fn(*[d2s.to_tensor(a) for a in arrays])])
    for backend in ("numpy", "xla"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", BackendFallbackWarning)
            sf = d2s.jit.to_static(lambda *xs: fn(*xs), backend=backend)
            d2s.seed(7)
            outs.append([o.numpy() for o in sf(*[d2s.to_tensor(a) for a in arrays])])
    for o in outs[1:]:
        for a, b in zip(o, outs[0]):
            np.testing.assert_array_equal(a, b)
    return outs[0]
