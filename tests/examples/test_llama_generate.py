"""examples/llama/generate.py: generation written as eager Python (a tensor
`while`, per-layer k/v caches written by item assignment, sampling) and
converted whole by to_static into one program per (batch, prompt length):
greedy and seeded sampled tokens equal eager's on numpy and xla, finished
rows emit only padding, and bad arguments are refused by name."""
import pathlib
import sys
import warnings

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples.llama.generate import generate  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402

import d2s  # noqa: E402

BACKENDS = ["numpy", pytest.param("xla", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("jax") is None, reason="jax not installed"))]


@pytest.fixture(scope="module")
def model():
    d2s.seed(1)
    m = LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=24,
                                     num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, max_position_embeddings=16))
    m.eval()
    return m


def prompt(batch, length, seed=0):
    return d2s.to_tensor(np.random.default_rng(seed).integers(0, 40, (batch, length)))


def reference_greedy(model, ids, n):
    """Greedy decoding by re-running the whole sequence (no cache): what the
    cached loop must reproduce."""
    seq = ids.numpy()
    with d2s.no_grad():
        for _ in range(n):
            logits = model(d2s.to_tensor(seq)).numpy()[:, -1]
            seq = np.concatenate([seq, logits.argmax(-1)[:, None]], axis=1)
    return seq[:, ids.shape[1]:]


@pytest.mark.parametrize("backend", BACKENDS)
def test_converted_generation_equals_eager(model, backend, monkeypatch):
    monkeypatch.setenv("D2S_XLA_SYNC", "1")
    gen = d2s.jit.to_static(generate, backend=backend)
    ids = prompt(2, 5)
    with d2s.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")                  # no fallback to numpy on xla
        greedy = generate(model, ids, 6, temperature=0).numpy()
        assert np.array_equal(greedy, reference_greedy(model, ids, 6))
        assert np.array_equal(gen(model, ids, 6, temperature=0).numpy(), greedy)
        d2s.seed(7)
        sampled = generate(model, ids, 6, temperature=0.8, top_k=12, top_p=0.9).numpy()
        d2s.seed(7)
        assert np.array_equal(gen(model, ids, 6, temperature=0.8, top_k=12, top_p=0.9).numpy(),
                              sampled)
        assert not np.array_equal(sampled, greedy)
        # one program per (batch, prompt length): other prompt values reuse it
        gen(model, prompt(2, 5, seed=3), 6, temperature=0)
        assert len(gen.program_cache) == 2
        program = gen.get_concrete_program(model, ids, 6, temperature=0).main_program
    assert [op.type for op in program.blocks[0].ops].count("while") == 1


def test_finished_rows_emit_only_padding(model):
    ids = prompt(2, 5)
    with d2s.no_grad():
        greedy = generate(model, ids, 8, temperature=0).numpy()
        eos = int(greedy[0, 1])                         # row 0 ends at its second token
        expected = greedy.copy()
        for row in expected:
            hits = np.flatnonzero(row == eos)
            if hits.size:
                row[hits[0] + 1:] = 39
        gen = d2s.jit.to_static(generate)
        for fn in (generate, gen):
            out = fn(model, ids, 8, temperature=0, eos_id=eos, pad_id=39).numpy()
            assert np.array_equal(out, expected)
            assert (out[0, 2:] == 39).all()
        # every row finished: the loop stops, the rest is padding
        both = d2s.to_tensor(np.repeat(ids.numpy()[:1], 2, axis=0))
        out = gen(model, both, 8, temperature=0, eos_id=eos, pad_id=39).numpy()
        assert (out[:, 2:] == 39).all() and (out[:, 1] == eos).all()


@pytest.mark.parametrize("kwargs, match", [
    (dict(ids=(1, 12), max_new_tokens=5), "prompt.*max_new_tokens.*max_position_embeddings"),
    (dict(top_k=0), "top_k must be a positive int"),
    (dict(top_k=-2), "top_k must be a positive int"),
    (dict(top_p=0.0), r"top_p must be in \(0, 1\]"),
    (dict(top_p=1.5), r"top_p must be in \(0, 1\]"),
    (dict(max_new_tokens=0), "max_new_tokens must be a positive int"),
    (dict(temperature=-1.0), "temperature must be >= 0"),
])
def test_bad_arguments_are_named(model, kwargs, match):
    shape = kwargs.pop("ids", (1, 3))
    args = dict(max_new_tokens=4)
    args.update(kwargs)
    for fn in (generate, d2s.jit.to_static(generate)):
        with pytest.raises(ValueError, match=match):
            fn(model, prompt(*shape), **args)
