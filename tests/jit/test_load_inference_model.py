"""`d2s.static.load_inference_model` on what `d2s.jit.save` wrote: the
program runs in `static.Executor` with the returned feed names and fetch
targets and gives the saved layer's outputs."""
import numpy as np
import pytest

import d2s
from d2s import nn, static
from d2s.static import InputSpec


def test_saved_layer_runs_through_the_executor(tmp_path):
    d2s.seed(2)
    net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3))
    net.eval()
    prefix = str(tmp_path / "model")
    d2s.jit.save(net, prefix, input_spec=[InputSpec([None, 4], "float32", name="x")])
    exe = static.Executor()
    program, feed_names, fetch_targets = static.load_inference_model(prefix, exe)
    assert len(feed_names) == 1 and len(fetch_targets) == 1
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    (out,) = exe.run(program, feed={feed_names[0]: x}, fetch_list=fetch_targets)
    np.testing.assert_allclose(out, net(d2s.to_tensor(x)).numpy(), rtol=1e-6, atol=1e-6)


def test_missing_model_and_unsupported_keywords_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="d2s.jit.save"):
        static.load_inference_model(str(tmp_path / "none"), static.Executor())
    with pytest.raises(NotImplementedError, match="model_filename"):
        static.load_inference_model(str(tmp_path / "none"), None, model_filename="a.pdmodel")
