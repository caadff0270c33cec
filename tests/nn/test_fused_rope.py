"""`d2s.incubate.nn.functional.fused_rotary_position_embedding` against a
numpy reference of Paddle's documented rule (its own test's reference:
adjacent-pair or half rotation, sin/cos per position, position_ids,
time-major, fewer k/v heads), gradients against finite differences, and
converted on the numpy and xla backends."""
import numpy as np
import pytest

import d2s
from d2s.incubate.nn.functional import fused_rotary_position_embedding as rope
from d2s.jit import to_static

from nn_helpers import numeric_grads

RNG = np.random.default_rng(21)


def _sin_cos(seq_len, head_dim, base=10000.0):
    angle = np.zeros((seq_len, head_dim))
    for p in range(seq_len):
        for i in range(head_dim // 2):
            angle[p, 2 * i] = angle[p, 2 * i + 1] = p / base ** (2 * i / head_dim)
    return np.sin(angle), np.cos(angle)


def _ref(x, sin, cos, neox, position_ids=None):
    """x [b, s, h, d]; sin/cos [s, d]."""
    b, s, h, d = x.shape
    out = np.zeros_like(x)
    for bi in range(b):
        for si in range(s):
            p = si if position_ids is None else position_ids[bi][si]
            for hi in range(h):
                v = x[bi, si, hi]
                if neox:
                    rot = np.empty(d)
                    rot[0::2], rot[1::2] = -v[1::2], v[0::2]
                else:
                    rot = np.concatenate([-v[d // 2:], v[:d // 2]])
                out[bi, si, hi] = v * cos[p] + rot * sin[p]
    return out


@pytest.mark.parametrize("neox", [True, False])
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("with_ids", [False, True])
def test_matches_reference(neox, time_major, with_ids):
    q = RNG.standard_normal((2, 5, 3, 8))
    k = RNG.standard_normal((2, 5, 1, 8))  # multi-query: one k head
    sin, cos = _sin_cos(6, 8)
    ids = np.array([[4, 2, 0, 1, 3], [5, 1, 2, 0, 4]]) if with_ids else None
    sin_in, cos_in = (sin, cos) if with_ids else (sin[:5].reshape(1, 5, 1, 8),
                                                  cos[:5].reshape(1, 5, 1, 8))
    tm = (lambda a: a.transpose(1, 0, 2, 3)) if time_major else (lambda a: a)
    out_q, out_k, out_v = rope(d2s.to_tensor(tm(q)), d2s.to_tensor(tm(k)), None,
                               d2s.to_tensor(sin_in), d2s.to_tensor(cos_in),
                               position_ids=None if ids is None else d2s.to_tensor(ids),
                               use_neox_rotary_style=neox, time_major=time_major)
    assert out_v is None
    np.testing.assert_allclose(tm(out_q.numpy()), _ref(q, sin, cos, neox, ids), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(tm(out_k.numpy()), _ref(k, sin, cos, neox, ids), rtol=1e-12,
                               atol=1e-12)


def test_default_sin_cos_and_base():
    q = RNG.standard_normal((1, 4, 2, 6))
    for base in (10000.0, 500.0):
        sin, cos = _sin_cos(4, 6, base)
        (got, _, _) = rope(d2s.to_tensor(q), rotary_emb_base=base)
        np.testing.assert_allclose(got.numpy(), _ref(q, sin, cos, True), rtol=1e-12)


@pytest.mark.parametrize("neox", [True, False])
def test_gradients_match_finite_differences(neox):
    q = RNG.standard_normal((1, 3, 2, 4))
    sin, cos = _sin_cos(3, 4)
    w = RNG.standard_normal(q.shape)

    def f(x):
        return rope(x, sin=d2s.to_tensor(sin), cos=d2s.to_tensor(cos),
                    use_neox_rotary_style=neox)[0] * d2s.to_tensor(w)
    x = d2s.to_tensor(q, stop_gradient=False)
    f(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grads(f, q)[0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_converted_equals_eager(backend):
    if backend == "xla":
        pytest.importorskip("jax")
    q = RNG.standard_normal((2, 4, 2, 8)).astype(np.float32)
    ids = np.array([[3, 2, 1, 0], [0, 1, 2, 3]])
    sin, cos = (a.astype(np.float32) for a in _sin_cos(4, 8))

    def f(x, p):
        return rope(x, x * 2.0, sin=d2s.to_tensor(sin), cos=d2s.to_tensor(cos),
                    position_ids=p)[:2]
    want = f(d2s.to_tensor(q), d2s.to_tensor(ids))
    got = to_static(f, backend=backend)(d2s.to_tensor(q), d2s.to_tensor(ids))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="4-D"):
        rope(d2s.to_tensor(np.zeros((2, 3, 4))))
    with pytest.raises(ValueError, match="even"):
        rope(d2s.to_tensor(np.zeros((1, 2, 1, 5))))
    with pytest.raises(ValueError, match="both sin and cos"):
        rope(d2s.to_tensor(np.zeros((1, 2, 1, 4))), sin=d2s.to_tensor(np.zeros((2, 4))))
