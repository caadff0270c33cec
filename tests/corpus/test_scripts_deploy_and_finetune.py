"""The deploy-then-fine-tune part of the image-classification tutorials: a
small CNN trained a step, switched to `eval()`, saved with `jit.save` and
an `InputSpec([None, 1, 8, 8])`; then, in a fresh process as a deployment
script would, `jit.load` -> fine-tune two Adam steps on the loaded program
-> `jit.save(loaded, path)` again (Paddle re-saves a TranslatedLayer) ->
`jit.load` the result. The re-saved program gives the fine-tuned weights'
outputs, and those differ from the original's."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import t


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 4, 3)
        self.bn = nn.BatchNorm2D(4)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(paddle.flatten(x, 1))


FINETUNE = textwrap.dedent("""
    import sys
    import numpy as np
    import d2s as paddle
    import d2s.nn.functional as F
    src, dst = sys.argv[1], sys.argv[2]
    model = paddle.jit.load(src)
    model.train()
    opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=model.parameters())
    rng = np.random.RandomState(1)
    for _ in range(2):
        x = paddle.to_tensor(rng.rand(4, 1, 8, 8).astype("float32"))
        y = paddle.to_tensor(rng.randint(0, 3, (4,)))
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
    model.eval()
    paddle.jit.save(model, dst)
    x = paddle.to_tensor(np.random.RandomState(2).rand(2, 1, 8, 8).astype("float32"))
    np.save(dst + ".expected.npy", model(x).numpy())
""")


def test_saved_model_fine_tuned_in_a_fresh_process_saves_again(tmp_path):
    paddle.seed(0)
    model = Net()
    opt = paddle.optimizer.SGD(0.1, parameters=model.parameters())
    rng = np.random.RandomState(0)
    loss = F.cross_entropy(model(t(rng.rand(4, 1, 8, 8))), t(rng.randint(0, 3, (4,))))
    loss.backward()
    opt.step()
    model.eval()
    src, dst = str(tmp_path / "cnn"), str(tmp_path / "cnn_ft")
    paddle.jit.save(model, src, input_spec=[InputSpec([None, 1, 8, 8], "float32")])
    script = tmp_path / "finetune.py"
    script.write_text(FINETUNE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(paddle.__file__))] + sys.path))
    subprocess.run([sys.executable, str(script), src, dst], check=True, env=env, timeout=300)
    x = t(np.random.RandomState(2).rand(2, 1, 8, 8))
    tuned = paddle.jit.load(dst)(x).numpy()
    np.testing.assert_allclose(tuned, np.load(dst + ".expected.npy"), rtol=1e-6, atol=1e-7)
    assert not np.allclose(tuned, model(x).numpy(), atol=1e-4)   # the weights moved
    original = paddle.jit.load(src)
    np.testing.assert_allclose(original(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)


def test_a_loaded_program_is_saved_with_its_own_inputs(tmp_path):
    model = Net()
    model.eval()
    paddle.jit.save(model, str(tmp_path / "m"), input_spec=[InputSpec([None, 1, 8, 8])])
    loaded = paddle.jit.load(str(tmp_path / "m"))
    with pytest.raises(TypeError, match="a loaded program is saved with the inputs it was"):
        paddle.jit.save(loaded, str(tmp_path / "m2"), input_spec=[InputSpec([2, 1, 8, 8])])
