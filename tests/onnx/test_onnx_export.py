"""`d2s.onnx.export`: what it accepts, what the model holds, and bad input."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from onnx_helpers import assert_same, onnx, run_model, session

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.jit import InputSpec, to_static
from d2s.onnx import ExportError

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve()


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 8)
        self.fc2 = nn.Linear(8, 2)

    @to_static(input_spec=[InputSpec([None, 3], "float32", name="x")])
    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class PlainMLP(nn.Layer):
    """The same network with a forward that is not converted."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return d2s.tanh(self.fc(x))


def _x(n):
    return np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)


def test_export_uses_the_decorators_input_spec_and_returns_the_path(tmp_path):
    d2s.seed(1)
    model = MLP()
    path = tmp_path / "mlp.onnx"
    assert d2s.onnx.export(model, path) == str(path)
    for n in (1, 5):  # a None dim: any batch size
        got = run_model(str(path), [_x(n)])
        assert_same(got[0], model(d2s.to_tensor(_x(n))), f"batch {n}")


def test_unknown_dims_are_named_symbolic_dims_and_weights_are_initializers(tmp_path):
    d2s.seed(2)
    layer = MLP()
    proto = onnx.load(str(d2s.onnx.export(layer, tmp_path / "m.onnx")))
    (inp,) = proto.graph.input
    dims = inp.type.tensor_type.shape.dim
    assert inp.name == "x" and [d.dim_param or d.dim_value for d in dims] == ["x_dim0", 3]
    out_dims = proto.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in out_dims] == ["output_0_dim0", 2]
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    params = [p.numpy() for p in layer.parameters()]
    assert len(weights) == len(params) == 4
    for p in params:  # each parameter is an initializer, bit for bit
        assert any(w.shape == p.shape and np.array_equal(w, p) for w in weights.values())
    assert not any(n.op_type == "Constant" and n.output[0] in weights for n in proto.graph.node)


def test_default_opset_is_recent_and_an_older_one_can_be_asked_for(tmp_path):
    d2s.seed(3)
    layer = MLP()
    proto = onnx.load(d2s.onnx.export(layer, tmp_path / "a.onnx"))
    assert proto.opset_import[0].version >= 18
    old = onnx.load(d2s.onnx.export(layer, tmp_path / "b.onnx", opset_version=18))
    assert old.opset_import[0].version == 18
    assert_same(run_model(old, [_x(4)])[0], layer(d2s.to_tensor(_x(4))), "opset 18")
    for bad in (17, 10_000, "18"):
        with pytest.raises(ValueError, match="opset_version"):
            d2s.onnx.export(layer, tmp_path / "c.onnx", opset_version=bad)
    assert not (tmp_path / "c.onnx").exists()


@to_static
def _scaled_tanh(x, scale):
    return d2s.tanh(x) * scale


def test_a_function_with_an_input_spec_and_python_values(tmp_path):
    spec = [InputSpec([2, None], "float64"), 3]  # the Python number stays a constant
    path = d2s.onnx.export(_scaled_tanh, tmp_path / "f.onnx", input_spec=spec)
    x = np.random.default_rng(0).standard_normal((2, 7))
    (got,) = run_model(path, [x])
    assert_same(got, _scaled_tanh(d2s.to_tensor(x), 3), "scaled tanh")
    assert len(session(path).get_inputs()) == 1


def test_plain_function_and_layer_given_an_input_spec(tmp_path):
    def affine(x, y):
        return x @ y + 1.0

    spec = [InputSpec([None, 4]), InputSpec([4, 2])]
    path = d2s.onnx.export(affine, tmp_path / "g.onnx", input_spec=spec)
    a = np.ones((3, 4), np.float32)
    b = np.arange(8, dtype=np.float32).reshape(4, 2)
    assert_same(run_model(path, [a, b])[0], affine(d2s.to_tensor(a), d2s.to_tensor(b)), "affine")

    d2s.seed(4)
    layer = PlainMLP()
    path = d2s.onnx.export(layer, tmp_path / "h.onnx", input_spec=[InputSpec([None, 3])])
    assert_same(run_model(path, [_x(6)])[0], layer(d2s.to_tensor(_x(6))), "plain layer")
    # an example array stands for its shape and dtype
    path = d2s.onnx.export(layer, tmp_path / "i.onnx", input_spec=[_x(2)])
    assert_same(run_model(path, [_x(2)])[0], layer(d2s.to_tensor(_x(2))), "example input")


def test_to_model_writes_nothing():
    d2s.seed(5)
    proto = d2s.onnx.to_model(MLP())
    assert isinstance(proto, onnx.ModelProto)
    onnx.checker.check_model(proto, full_check=True)


def test_without_any_input_spec_the_last_program_built_is_exported(tmp_path):
    @to_static
    def square(x):
        return x * x

    with pytest.raises(ValueError, match="no input_spec"):
        d2s.onnx.export(square, tmp_path / "s.onnx")
    assert not (tmp_path / "s.onnx").exists()
    square(d2s.to_tensor(np.arange(3.0)))
    path = d2s.onnx.export(square, tmp_path / "s.onnx")
    assert_same(run_model(path, [np.arange(3.0)])[0], np.arange(3.0) ** 2, "square")


def _example_module(name):
    spec = importlib.util.spec_from_file_location(f"_example_{name}",
                                                  ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_examples_models_export(tmp_path):
    train, demo = _example_module("train"), _example_module("demo")
    rng = np.random.default_rng(0)
    d2s.seed(0)
    mlp, rnn = train.MLP(), train.SequenceRNN()
    for model, x in ((mlp, rng.standard_normal((9, 2))),
                     (rnn, rng.standard_normal((6, 4)))):  # decorator specs: [None, 2], [None, 4]
        x = x.astype(np.float32)
        path = d2s.onnx.export(model, tmp_path / f"{type(model).__name__}.onnx")
        assert_same(run_model(path, [x])[0], model(d2s.to_tensor(x)), type(model).__name__)
    # demo's Sequential, converted as an instance: to_static(layer, input_spec)
    seq = to_static(demo.make_mlp(), input_spec=[InputSpec([None, 32])])
    x = rng.standard_normal((4, 32)).astype(np.float32)
    path = d2s.onnx.export(seq, tmp_path / "demo.onnx")
    assert_same(run_model(path, [x])[0], seq(d2s.to_tensor(x)), "demo model")


# ---- bad input ------------------------------------------------------------------------
def _prints(x):
    print("value:", x)
    return x + 1


def _asserts(x):
    assert x.sum() > 0, "needs a positive sum"
    return x + 1


def _raises(x):
    if x.sum() > 0:
        raise ValueError("positive")
    return x + 1


def _draws(x):
    return x + d2s.rand([3])


@pytest.mark.parametrize("fn,op", [(_prints, "print"), (_asserts, "assert"),
                                   (_raises, "raise"), (_draws, "uniform")])
def test_ops_with_no_onnx_form_name_the_op_and_line_and_write_nothing(tmp_path, fn, op):
    path = tmp_path / "bad.onnx"
    with pytest.raises(ExportError) as info:
        d2s.onnx.export(fn, path, input_spec=[InputSpec([3])])
    message = str(info.value)
    assert f"'{op}'" in message and str(HERE) in message, message
    line = {"print": "print(", "assert": "assert x.sum()", "raise": "raise ValueError",
            "uniform": "d2s.rand"}[op]
    assert line in message, message
    assert not path.exists()


def test_a_failed_export_leaves_an_existing_file_alone(tmp_path):
    path = tmp_path / "keep.onnx"
    path.write_bytes(b"previous model")
    with pytest.raises(ExportError):
        d2s.onnx.export(_prints, path, input_spec=[InputSpec([3])])
    assert path.read_bytes() == b"previous model"


def test_dropout_in_training_mode_is_refused_and_eval_mode_exports(tmp_path):
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(self.fc(x))

    net = Net()
    spec = [InputSpec([None, 3])]
    with pytest.raises(ExportError, match=r"'dropout'.*\.eval\(\)"):
        d2s.onnx.export(net, tmp_path / "d.onnx", input_spec=spec)
    net.eval()
    path = d2s.onnx.export(net, tmp_path / "d.onnx", input_spec=spec)
    assert_same(run_model(path, [_x(2)])[0], net(d2s.to_tensor(_x(2))), "eval dropout")


def test_an_unwritable_path_raises_the_os_error(tmp_path):
    layer = MLP()
    with pytest.raises(IsADirectoryError):
        d2s.onnx.export(layer, tmp_path)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError):
        d2s.onnx.export(layer, blocker / "m.onnx")
    with pytest.raises(FileNotFoundError):
        d2s.onnx.export(layer, tmp_path / "missing_dir" / "m.onnx")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(PermissionError):
            d2s.onnx.export(layer, locked / "m.onnx")


def test_an_input_spec_that_contradicts_the_function_fails_at_export(tmp_path):
    path = tmp_path / "x.onnx"
    with pytest.raises(ValueError, match="matmul"):  # Linear(3, 8) fed 5 features
        d2s.onnx.export(MLP(), path, input_spec=[InputSpec([None, 5])])
    with pytest.raises(TypeError):  # one spec too many
        d2s.onnx.export(MLP(), path, input_spec=[InputSpec([None, 3]), InputSpec([3])])
    assert not path.exists()


def test_a_training_step_is_refused_and_its_model_exports(tmp_path):
    d2s.seed(6)
    model = nn.Linear(3, 1)
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())

    @to_static
    def step(x):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    x = np.ones((2, 3), np.float32)
    step(d2s.to_tensor(x))
    with pytest.raises(TypeError, match=r"training step.*d2s\.onnx\.export\(model"):
        d2s.onnx.export(step, tmp_path / "step.onnx")
    assert not (tmp_path / "step.onnx").exists()
    path = d2s.onnx.export(model, tmp_path / "model.onnx", input_spec=[InputSpec([None, 3])])
    assert_same(run_model(path, [x])[0], model(d2s.to_tensor(x)), "the trained model")


def test_a_function_returning_no_tensor_is_refused(tmp_path):
    with pytest.raises(ExportError, match="returns no tensor"):
        d2s.onnx.export(lambda x: 3, tmp_path / "n.onnx", input_spec=[InputSpec([2])])


def test_the_default_install_never_imports_onnx(tmp_path):
    script = tmp_path / "no_onnx.py"
    script.write_text(
        "import sys\n"
        "import numpy as np\n"
        "import d2s\n"
        "@d2s.jit.to_static\n"
        "def double(x):\n"
        "    return x * 2 if x.sum() > 0 else x\n"
        "assert double(d2s.to_tensor(np.ones(3))).numpy().tolist() == [2.0, 2.0, 2.0]\n"
        "bad = [m for m in ('onnx', 'onnxruntime') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "assert issubclass(d2s.onnx.ExportError, ValueError)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_without_onnx_installed_export_says_how_to_install_it(tmp_path):
    script = tmp_path / "no_onnx_installed.py"
    script.write_text(
        "import sys\n"
        "sys.modules['onnx'] = None  # as if it were not installed\n"
        "import d2s\n"
        "from d2s.jit import InputSpec\n"
        "def f(x):\n"
        "    return x + 1\n"
        "try:\n"
        "    d2s.onnx.export(f, 'never.onnx', input_spec=[InputSpec([2])])\n"
        "except ImportError as e:\n"
        "    print(e)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'd2s[onnx]'" in proc.stdout
    assert not (tmp_path / "never.onnx").exists()
