"""The first calls of a program on xla, served by the numpy tier while XLA
compiles in the background (d2s/backends/xla/background.py), as PaddleNLP's
generation utilities write them: `paddle.topk` over logits (top-k filtering,
beam search) and int64 position ids from `paddle.arange`.

The numpy tier must read host arrays: given the device arrays the xla tier
holds, numpy's kernels ran JAX's array methods (`argsort(kind=...)` raised)
and JAX's 32-bit arithmetic (int64 position ids came back int32, and
int64 + int32 raised in `lax.add`). Deterministic: the compile worker is held
busy while the first call runs, so that call is on the numpy tier."""
import threading

import numpy as np
import pytest

pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.nn.functional as F  # noqa: E402
from d2s.backends.xla import background  # noqa: E402
from d2s.static import InputSpec  # noqa: E402


@pytest.fixture
def held_worker():
    """The compile worker busy until the test ends: compiles stay queued."""
    gate = threading.Event()
    assert background._WORKER.submit(background._Job(gate.wait))
    yield
    gate.set()
    assert background.wait_idle(120)


def top_k_filter(logits):
    values, _ = d2s.topk(logits, 3)
    kept = d2s.where(logits < values[:, -1:], d2s.full_like(logits, -1e9), logits)
    return F.log_softmax(kept, axis=-1)


def position_ids(input_ids):
    mask = (input_ids != 0).astype("int64")
    pos = (d2s.cumsum(mask, axis=-1) - 1) * mask
    seq = d2s.arange(0, input_ids.shape[1], dtype="int64").unsqueeze(0).expand_as(input_ids)
    return pos + seq, seq


def penalized_scores(logits, input_ids):
    score = d2s.take_along_axis(logits, input_ids, axis=1)
    return d2s.where(score < 0, score * 1.2, score / 1.2)


CASES = {
    "topk": (top_k_filter, lambda: [np.random.default_rng(0).normal(size=(2, 6)).astype("float32")],
             None),
    "int64_positions": (position_ids, lambda: [np.array([[3, 4, 0], [5, 0, 0]], "int64")],
                        [InputSpec([None, None], "int64")]),
    "int64_gather": (penalized_scores,
                     lambda: [np.random.default_rng(1).normal(size=(2, 7)).astype("float32"),
                              np.array([[1, 3], [0, 6]], "int64")], None),
}


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_numpy_tier_of_xla_matches_numpy_backend(held_worker, case, grad):
    fn, arrays, spec = CASES[case]
    sf_np = d2s.jit.to_static(fn, input_spec=spec, backend="numpy")
    sf_xla = d2s.jit.to_static(fn, input_spec=spec, backend="xla", compile="async")

    def run(sf):
        ins = [d2s.to_tensor(a, stop_gradient=not (grad and a.dtype.kind == "f"))
               for a in arrays()]
        if not grad:
            with d2s.no_grad():
                return sf(*ins), ins
        out = sf(*ins)
        first = out[0] if isinstance(out, tuple) else out
        if first.dtype == np.float32:
            first.sum().backward()
        return out, ins

    expect, e_ins = run(sf_np)
    got, g_ins = run(sf_xla)
    expect = expect if isinstance(expect, tuple) else (expect,)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expect):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)
    for g, e in zip(g_ins, e_ins):
        if e.grad is not None:
            np.testing.assert_allclose(g.grad.numpy(), e.grad.numpy(), rtol=1e-6)
