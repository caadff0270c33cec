"""d2s.quantization.weight_only: a pass on static programs that makes the
Linear matmuls read int8 / packed-int4 weights through `weight_dequantize`.
Checked against numpy references (the round trip's error bound, a model
whose weights are the dequantized ones), on the numpy, xla and ONNX
targets, for accuracy on held-out text and for the weights' memory."""
import math
import pathlib
import sys

import numpy as np
import pytest

import d2s
from d2s.core.ops.quant import weight_dequantize
from d2s.quantization import captured_bytes, quantize_table, quantize_weight, weight_only

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples.llama.generate import generate  # noqa: E402
from examples.llama.model import LlamaConfig  # noqa: E402
from examples.llama.train import Trainer  # noqa: E402


@pytest.mark.parametrize("bits, group, k", [(8, -1, 7), (8, 4, 10), (4, -1, 7), (4, 4, 9),
                                            (4, 6, 12)])
def test_round_trip_error_is_within_half_a_step(bits, group, k):
    rng = np.random.default_rng(bits * 100 + k)
    w = rng.normal(size=(k, 5)).astype(np.float32)
    w[:, 2] = 0.0                                            # an all-zero column
    q, scale = quantize_weight(w, bits, group)
    assert q.dtype == (np.int8 if bits == 8 else np.uint8)
    g = k if group == -1 else group
    g += (bits == 4 and g % 2)
    rows = math.ceil(k / g) * g
    assert q.shape == ((rows if bits == 8 else rows // 2), 5) and scale.shape == (rows // g, 5)
    back = weight_dequantize(d2s.to_tensor(q), d2s.to_tensor(scale), bits=bits, k=k).numpy()
    step = np.repeat(scale, g, axis=0)[:k]
    assert (np.abs(back - w) <= step / 2 + 1e-7).all()
    assert (back[:, 2] == 0).all()
    t = weight_dequantize(d2s.to_tensor(q), d2s.to_tensor(scale), bits=bits, k=k, transpose=True)
    assert np.array_equal(t.numpy(), back.T)


@pytest.fixture(scope="module")
def trained():
    cfg = LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    tr = Trainer(cfg, steps=60, warmup=5, lr=1e-2, batch_size=8, seq_len=16, seed=0,
                 mode="static")
    for _ in range(60):
        tr.train_step()
    tr.model.eval()
    return tr


def _windows(tr, n=8):
    from examples.llama import data
    return d2s.to_tensor(data.eval_windows(tr.held_tokens, 16, n))


def _perplexity(logits, windows):
    logits, ids = logits[:, :-1], windows[:, 1:]
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return float(np.exp(-np.take_along_axis(logp, ids[..., None], -1).mean()))


def test_program_pass_keeps_accuracy_and_shrinks_the_weights(trained):
    model, windows = trained.model, _windows(trained)
    fwd = d2s.jit.to_static(model.forward)
    with d2s.no_grad():
        ref = fwd(windows).numpy()
    program = fwd.get_concrete_program(windows).main_program
    base = captured_bytes(program)
    linear_bytes = sum(np.asarray(p._value).nbytes for n, p in model.named_parameters()
                       if p.ndim == 2)                  # the Linear weights and the embedding
    ppl = {"fp32": _perplexity(ref, windows.numpy())}
    for bits, group in [(8, -1), (4, 16)]:
        q = weight_only(program, bits=bits, group_size=group)
        assert [op.type for op in program.global_block().ops].count("weight_dequantize") == 0
        assert [op.type for op in q.global_block().ops].count("weight_dequantize") == 8   # 7 per layer + lm_head
        out, = d2s.static.Executor().run(q, feed={"ids": windows.numpy()},
                                         fetch_list=[q.global_block().ops[-1].outputs[0]])
        np.testing.assert_allclose(out, ref, atol=0.05 if bits == 8 else 0.5)
        ppl[bits] = _perplexity(out, windows.numpy())
        # each [K, N] weight is now K*N int8 values (K*N/2 bytes for 4 bits) and
        # one float32 scale per column and group; the [V, H] embedding table
        # V*H int8 values and one float32 scale per row, whatever `bits` is
        expect = sum((p.shape[0] * p.shape[1] * bits // 8
                      + 4 * p.shape[1] * (1 if group == -1 else p.shape[0] // group))
                     for n, p in model.named_parameters() if p.ndim == 2 and "embed" not in n)
        v, h = model.embed_tokens.weight.shape
        expect += v * h + 4 * v
        assert captured_bytes(q)["total"] == base["total"] - linear_bytes + expect
        assert expect / linear_bytes < (0.3 if bits == 8 else 0.25)   # (the table stays 8-bit)
    assert ppl["fp32"] < 12                                  # it learned something
    assert abs(ppl[8] / ppl["fp32"] - 1) < 0.02
    assert abs(ppl[4] / ppl["fp32"] - 1) < 0.10


def _dequantized_copy(model, bits, group):
    """The reference: the same model with each Linear weight replaced by its
    dequantized value, and the embedding table by its int8 rows times their
    scales, run eagerly."""
    import copy
    ref = copy.deepcopy(model)
    for name, p in ref.named_parameters():
        if "embed" in name:
            q, s = quantize_table(p.numpy())
            p.set_value(q.astype(np.float32) * s)
        elif p.ndim == 2:
            q, s = quantize_weight(p.numpy(), bits, group)
            p.set_value(weight_dequantize(d2s.to_tensor(q), d2s.to_tensor(s), bits=bits,
                                          k=p.shape[0]).numpy())
    return ref


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_quantized_generation_equals_the_dequantized_model(trained, backend, monkeypatch):
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    model = trained.model
    prompt = d2s.to_tensor(np.frombuffer(b"def main(", np.uint8)[None].astype(np.int64))
    gen = weight_only(d2s.jit.to_static(generate, backend=backend), bits=8)
    with d2s.no_grad():
        got = gen(model, prompt, 8, temperature=0).numpy()
        want = generate(_dequantized_copy(model, 8, -1), prompt, 8, temperature=0).numpy()
    assert np.array_equal(got, want)
    program = gen.program_cache.last_program().main_program
    ops = [op.type for op in program.global_block().ops]
    assert ops.count("while") == 1 and ops.count("weight_dequantize") == 8   # 7 per layer + lm_head


def test_saved_quantized_layer_loads_without_source(trained, tmp_path):
    """jit.save keeps the int4 weights as uint8 arrays; jit.load runs them."""
    import copy
    from d2s.static import InputSpec
    layer = weight_only(copy.deepcopy(trained.model), bits=4, group_size=8)
    windows = _windows(trained, 2)
    with d2s.no_grad():
        want = layer(windows).numpy()
    d2s.jit.save(layer, str(tmp_path / "q"), input_spec=[InputSpec([None, None], "int64")])
    arrays = np.load(tmp_path / "q.npz")
    assert sum(arrays[k].dtype == np.uint8 for k in arrays.files) == 8
    np.testing.assert_array_equal(d2s.jit.load(str(tmp_path / "q"))(windows).numpy(), want)


def test_layer_and_onnx_export(trained, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from d2s.static import InputSpec
    import copy
    layer = weight_only(copy.deepcopy(trained.model), bits=4, group_size=8)
    windows = _windows(trained, 2)
    with d2s.no_grad():
        got = layer(windows).numpy()
        want = _dequantized_copy(trained.model, 4, 8)(windows).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    d2s.onnx.export(layer, str(tmp_path / "q.onnx"), input_spec=[InputSpec([2, 17], "int64")])
    sess = ort.InferenceSession(str(tmp_path / "q.onnx"))
    out = sess.run(None, {sess.get_inputs()[0].name: windows.numpy()})[0]
    np.testing.assert_allclose(out, got, rtol=1e-5, atol=1e-6)


def test_bad_options_and_targets():
    with pytest.raises(ValueError, match="bits must be 8 or 4"):
        weight_only(d2s.static.Program(), bits=3)
    with pytest.raises(ValueError, match="group_size must be a positive int"):
        weight_only(d2s.static.Program(), group_size=0)
    with pytest.raises(ValueError, match="group_size must be even for bits=4"):
        weight_only(d2s.static.Program(), bits=4, group_size=5)
    with pytest.raises(TypeError, match="expected a Program, a to_static function or a Layer"):
        weight_only(lambda x: x)


def test_a_training_step_is_refused():
    layer = d2s.nn.Linear(3, 2)
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())

    def step(x):
        loss = layer(x).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    before = layer.weight.numpy().copy()
    fn = weight_only(d2s.jit.to_static(step), bits=8)
    with pytest.raises(RuntimeError, match="passes rewrite inference programs only"):
        fn(d2s.ones([4, 3]))
    assert layer.weight.grad is None and np.array_equal(layer.weight.numpy(), before)
