"""Weight-only quantization of embedding tables: int8 rows with one scale
per row, looked up by `gather_dequantize` (the int8 rows of the ids, then
rebuilt). Checked against numpy (the table's round trip, the gathered
product), on the numpy, xla and ONNX targets (eager vs the programs on the
same inputs), and end to end on a tied Llama, whose table also feeds the
output projection."""
import pathlib
import sys

import numpy as np
import pytest

import d2s
from d2s.core.ops.quant import gather_dequantize
from d2s.quantization import captured_bytes, quantize_table, quantize_weight, weight_only
from d2s.static import InputSpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples.llama.generate import generate  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402


def test_table_round_trip_is_within_half_a_step_per_row():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 5)).astype(np.float32) * rng.uniform(0.01, 3, size=(6, 1))
    w[3] = 0.0                                              # an all-zero row
    q, scale = quantize_table(w)
    assert q.dtype == np.int8 and q.shape == (6, 5) and scale.shape == (6, 1)
    back = q.astype(np.float32) * scale
    assert (np.abs(back - w) <= scale / 2 + 1e-7).all()
    assert (back[3] == 0).all() and np.abs(q).max() == 127
    with pytest.raises(ValueError, match="2-D float"):
        quantize_table(np.zeros(4, np.float32))


def test_gather_dequantize_checks_its_operands():
    q = d2s.to_tensor(np.zeros((4, 3), np.int8))
    s = d2s.to_tensor(np.ones((4, 1), np.float32))
    ids = d2s.to_tensor(np.array([1, 2]))
    with pytest.raises(TypeError, match="int8"):
        gather_dequantize(d2s.to_tensor(np.zeros((4, 3), np.int32)), s, ids)
    with pytest.raises(ValueError, match=r"scale \[rows, 1\]"):
        gather_dequantize(q, d2s.to_tensor(np.ones((4, 3), np.float32)), ids)
    with pytest.raises(TypeError, match="integer"):
        gather_dequantize(q, s, d2s.to_tensor(np.array([1.0])))


def _table(rows=7, dim=4, seed=1):
    rng = np.random.default_rng(seed)
    return quantize_table(rng.normal(size=(rows, dim)).astype(np.float32))


@pytest.mark.parametrize("target", ["numpy", "xla", "onnx"])
def test_gather_dequantize_on_each_target_equals_numpy(target, tmp_path):
    """ids of any shape (known at build or not), duplicates and a negative
    id: the result is the gathered int8 rows times their scales."""
    q, scale = _table()
    qt, st = d2s.to_tensor(q), d2s.to_tensor(scale)
    ids = np.array([[6, 0, 0], [2, -1, 3]])
    want = q[ids].astype(np.float32) * scale[ids]
    assert np.array_equal(gather_dequantize(qt, st, d2s.to_tensor(ids)).numpy(), want)

    def lookup(i):
        return gather_dequantize(qt, st, i)
    spec = [InputSpec([None, None], "int64", "ids")]
    if target == "onnx":
        ort = pytest.importorskip("onnxruntime")
        path = str(tmp_path / "lookup.onnx")
        d2s.onnx.export(lookup, path, input_spec=spec)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {sess.get_inputs()[0].name: ids})[0]
    else:
        if target == "xla":
            pytest.importorskip("jax")
        got = d2s.jit.to_static(lookup, backend=target, input_spec=spec)(
            d2s.to_tensor(ids)).numpy()
    assert got.dtype == np.float32 and np.array_equal(got, want)


def _tied_model():
    d2s.seed(3)
    cfg = LlamaConfig(vocab_size=48, hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=24,
                      tie_word_embeddings=True)
    return LlamaForCausalLM(cfg)


def _dequantized_copy(model):
    import copy
    ref = copy.deepcopy(model)
    for name, p in ref.named_parameters():
        if "embed" in name:
            q, s = quantize_table(p.numpy())
            p.set_value(q.astype(np.float32) * s)
        elif p.ndim == 2:
            q, s = quantize_weight(p.numpy(), 8, -1)
            p.set_value(q.astype(np.float32) * s)
    return ref


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_tied_generation_reads_int8_rows_and_equals_the_dequantized_model(backend, monkeypatch):
    """The tied table feeds both the lookups (gather_dequantize, in the
    prompt pass and in the decode loop's body) and the output projection
    (the table rebuilt once at the program's head); greedy tokens equal the
    eager model whose weights are the dequantized ones."""
    if backend == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")
    model = _tied_model()
    prompt = d2s.to_tensor(np.array([[1, 5, 9, 2], [7, 7, 0, 3]]))
    gen = weight_only(d2s.jit.to_static(generate, backend=backend), bits=8)
    with d2s.no_grad():
        got = gen(model, prompt, 6, temperature=0).numpy()
        want = generate(_dequantized_copy(model), prompt, 6, temperature=0).numpy()
    assert np.array_equal(got, want)
    program = gen.program_cache.last_program().main_program
    body_ops = [op.type for b in program.blocks[1:] for op in b.ops]
    head_ops = [op.type for op in program.global_block().ops]
    assert head_ops.count("gather_dequantize") == 1 and body_ops.count("gather_dequantize") == 1
    names = {t.name: np.asarray(t._value).dtype for t in program.captured.values()}
    assert model.embed_tokens.weight.name not in names
    assert names[model.embed_tokens.weight.name + ".quant8"] == np.int8
    # the rotary tables are buffers, not weights: they stay float
    assert np.asarray(model.rotary.cos_cached._value).dtype == np.float32
    assert any(t is model.rotary.cos_cached for t in program.captured.values())


def test_embeddings_false_keeps_the_float_table():
    model = _tied_model()
    ids = d2s.to_tensor(np.array([[1, 2, 3]]))
    sizes = {}
    for flag in (True, False):
        def forward(x):
            return model(x)
        fn = weight_only(d2s.jit.to_static(forward), bits=8, embeddings=flag)
        with d2s.no_grad():
            fn(ids)
        prog = fn.get_concrete_program(ids).main_program
        sizes[flag] = captured_bytes(prog)
        ops = [op.type for op in prog.global_block().ops]
        assert ("gather_dequantize" in ops) == flag
    v, h = model.embed_tokens.weight.shape
    assert sizes[False]["total"] - sizes[True]["total"] == 4 * v * h - (v * h + 4 * v)


def test_tied_int8_greedy_loop_exports_to_onnx_with_equal_tokens(tmp_path):
    """The whole greedy loop (an ONNX Loop) of the int8 tied model: the table
    is an int8 initializer, read by the Loop body's lookups and the head's
    projection; ONNX Runtime's tokens equal d2s's int8 program's."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from examples.llama.export_onnx import GreedyGenerator
    model = _tied_model()
    model.eval()
    prompt = np.array([[1, 5, 9, 2], [7, 7, 0, 3]])
    gen = weight_only(d2s.jit.to_static(generate), bits=8)
    with d2s.no_grad():
        want = gen(model, d2s.to_tensor(prompt), 6, temperature=0).numpy()
    path = str(tmp_path / "greedy_int8.onnx")
    d2s.onnx.export(weight_only(GreedyGenerator(model, 6), bits=8), path,
                    input_spec=[InputSpec([2, 4], "int64", "prompt_ids")])
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert np.array_equal(sess.run(None, {sess.get_inputs()[0].name: prompt})[0], want)
    inits = {i.name: i.data_type for i in onnx.load(path).graph.initializer}
    table = model.embed_tokens.weight.name
    assert inits[table + ".quant8"] == onnx.TensorProto.INT8 and table not in inits
