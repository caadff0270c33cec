"""examples/llama/export_onnx.py: the decode step (k/v caches in and out)
and the whole greedy loop (a `Loop`) exported to ONNX; ONNX Runtime's
tokens equal d2s's, also for an int8 weight-only model."""
import pathlib
import sys

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples.llama.export_onnx import DecodeStep, export, ort_greedy  # noqa: E402
from examples.llama.generate import generate  # noqa: E402
from examples.llama.model import LlamaConfig, LlamaForCausalLM  # noqa: E402

import d2s  # noqa: E402
from d2s.quantization import weight_only  # noqa: E402


@pytest.fixture(scope="module")
def model():
    d2s.seed(4)
    cfg = LlamaConfig(vocab_size=60, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
                      initializer_range=0.3)                 # varied tokens from random weights
    m = LlamaForCausalLM(cfg)
    m.eval()
    return m


def test_decode_step_and_greedy_loop_give_d2s_tokens(model, tmp_path):
    prompt = np.random.default_rng(0).integers(0, 60, (2, 4))
    with d2s.no_grad():
        want = generate(model, d2s.to_tensor(prompt), 6, temperature=0).numpy()
    assert len(set(want.ravel().tolist())) > 2
    step_path, loop_path = export(model, str(tmp_path), 2, 4, 6)
    assert np.array_equal(ort_greedy(step_path, model.config, prompt, 6), want)
    sess = ort.InferenceSession(loop_path, providers=["CPUExecutionProvider"])
    assert np.array_equal(sess.run(None, {sess.get_inputs()[0].name: prompt})[0], want)
    import onnx
    ops = {n.op_type for n in onnx.load(loop_path).graph.node}
    assert "Loop" in ops


def test_int8_decode_step_serves_the_quantized_tokens(model, tmp_path):
    import copy
    prompt = np.random.default_rng(1).integers(0, 60, (1, 3))
    qmodel = copy.deepcopy(model)
    step = weight_only(DecodeStep(qmodel), bits=8)
    gen = weight_only(d2s.jit.to_static(generate), bits=8)
    with d2s.no_grad():
        want = gen(qmodel, d2s.to_tensor(prompt), 5, temperature=0).numpy()
    path = str(tmp_path / "step_int8.onnx")
    d2s.onnx.export(step, path, input_spec=step.input_spec(1, 8))
    import onnx
    inits = {i.name: i.data_type for i in onnx.load(path).graph.initializer}
    # 7 Linear weights per layer, the lm head and the embedding table
    assert sum(t == onnx.TensorProto.INT8 for t in inits.values()) == 2 * 7 + 2
    assert np.array_equal(ort_greedy(path, model.config, prompt, 5), want)
