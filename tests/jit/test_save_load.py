"""jit.save / jit.load: versioned JSON + npz, a fresh process, bad files."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import d2s
from d2s.jit import InputSpec, ProgramFormatError, to_static


class LoopNet(d2s.nn.Layer):
    """A data-dependent loop and a branch around two Linear layers."""

    def __init__(self):
        super().__init__()
        self.fc1 = d2s.nn.Linear(3, 4)
        self.fc2 = d2s.nn.Linear(4, 2)

    def forward(self, x, n):
        h = d2s.relu(self.fc1(x))
        i = 0
        while i < n:
            h = d2s.tanh(h) * 1.1
            i += 1
        if h.sum() > 0:
            return self.fc2(h)
        return -self.fc2(h)


SPEC = [InputSpec([None, 3], "float32"), InputSpec([], "int64")]


@pytest.fixture()
def saved(tmp_path):
    d2s.seed(1)
    net = to_static(LoopNet())
    path = str(tmp_path / "loopnet")
    d2s.jit.save(net, path, input_spec=SPEC)
    return net, path


def test_files_are_versioned_json_and_npz(saved):
    net, path = saved
    doc = json.load(open(path + ".json"))
    assert doc["version"] == 1 and doc["format"] == "d2s.program"
    x_var = next(v for v in doc["blocks"][0]["vars"] if v["name"] == "x")
    assert x_var["shape"] == [None, 3]  # None dims preserved
    ops = {op["type"] for b in doc["blocks"] for op in b["ops"]}
    assert {"while", "cond", "matmul"} <= ops
    with np.load(path + ".npz", allow_pickle=False) as z:
        assert len(z.files) >= 4


def test_loaded_model_runs_in_a_fresh_process_without_the_model_code(saved, tmp_path):
    net, path = saved
    rng = np.random.default_rng(0)
    for batch, n in ((5, 3), (2, 0)):
        x = rng.normal(size=(batch, 3)).astype(np.float32)
        ref = net(d2s.to_tensor(x), d2s.to_tensor(n)).numpy()
        np.save(tmp_path / "x.npy", x)
        script = textwrap.dedent(f"""
            import sys, numpy as np
            import d2s
            m = d2s.jit.load({path!r})
            x = np.load({str(tmp_path / 'x.npy')!r})
            np.save({str(tmp_path / 'out.npy')!r}, m(x, np.array({n})).numpy())
            assert 'test_save_load' not in sys.modules
        """)
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), ref)


def test_loaded_model_can_be_fine_tuned(saved):
    net, path = saved
    loaded = d2s.jit.load(path)
    x = d2s.to_tensor(np.ones((4, 3), np.float32))
    n = d2s.to_tensor(2)
    loss = (loaded(x, n) ** 2).mean()
    loss.backward()
    ref_loss = (net(x, n) ** 2).mean()
    ref_loss.backward()
    ref = {p.name: p.grad.numpy() for p in net.parameters()}
    assert len(loaded.parameters()) == 4
    for p in loaded.parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref[p.name], rtol=1e-5)
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=loaded.parameters())
    before = loss.item()
    for _ in range(5):
        opt.clear_grad()
        loss = (loaded(x, n) ** 2).mean()
        loss.backward()
        opt.step()
    assert loss.item() < before


def test_input_mismatch_names_the_input(saved):
    _, path = saved
    m = d2s.jit.load(path)
    with pytest.raises(ValueError, match="feed 'x': expected shape"):
        m(np.ones((2, 4), np.float32), np.array(1))
    with pytest.raises(ValueError, match="feed 'x': expected dtype float32"):
        m(np.ones((2, 3), np.float64), np.array(1))


def _rewrite_json(path, change):
    doc = json.load(open(path + ".json"))
    change(doc)
    json.dump(doc, open(path + ".json", "w"))


@pytest.mark.parametrize("corrupt, message", [
    (lambda p: _truncate(p + ".json"), "not valid JSON"),
    (lambda p: _truncate(p + ".npz"), "not a valid weights file"),
    (lambda p: _rewrite_json(p, lambda d: d.update(version=99)), "version 99 is not supported"),
    (lambda p: _rewrite_json(p, lambda d: d["blocks"][0]["ops"][0].update(type="evil")),
     "unknown op type 'evil'"),
    (lambda p: _rewrite_json(p, lambda d: d["blocks"][0]["ops"][-1]["inputs"].append("ghost")),
     "ghost"),
    (lambda p: _pickle_npz(p), "refused to load"),
    (lambda p: _rewrite_json(p, lambda d: d["params"][0].update(key="nope")), "are missing"),
    (lambda p: _swap_weights(p), "the program expects float32"),
])
def test_bad_files_raise_clear_errors(saved, corrupt, message):
    _, path = saved
    corrupt(path)
    with pytest.raises(ProgramFormatError, match=message):
        d2s.jit.load(path)


def _truncate(file):
    data = open(file, "rb").read()
    open(file, "wb").write(data[: len(data) // 2])


def _pickle_npz(path):
    arrays = dict(np.load(path + ".npz"))
    arrays["param_0"] = np.array([{"evil": 1}], dtype=object)
    np.savez(path + ".npz", **arrays)


def _swap_weights(path):
    arrays = dict(np.load(path + ".npz"))
    arrays["param_0"] = np.zeros((7,), np.float64)
    np.savez(path + ".npz", **arrays)


def test_save_a_plain_function_and_reload(tmp_path):
    def f(x):
        out = []
        for row in x:
            out.append(row * 2.0)
        return d2s.stack(out)

    path = str(tmp_path / "f")
    d2s.jit.save(to_static(f), path, input_spec=[InputSpec([None, 2], "float32")])
    m = d2s.jit.load(path)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(m(x).numpy(), x * 2)


def _checked_double(x):
    if x.sum() < 0:
        raise ValueError("negative input")   # LOC: raise
    return x * 2.0


def test_loaded_program_raises_with_the_original_line(tmp_path):
    path = str(tmp_path / "checked")
    d2s.jit.save(to_static(_checked_double), path, input_spec=[InputSpec([None], "float32")])
    m = d2s.jit.load(path)
    np.testing.assert_array_equal(m(np.ones(2, np.float32)).numpy(), [2, 2])
    import inspect
    lines, start = inspect.getsourcelines(_checked_double)
    line = start + next(i for i, l in enumerate(lines) if "LOC: raise" in l)
    with pytest.raises(ValueError, match=rf"negative input .*test_save_load.py, line {line}: "
                                         r"raise ValueError"):
        m(-np.ones(2, np.float32))


def _scaled_rows(x):
    return x * d2s.arange(1, x.shape[0] + 1).astype("float32").unsqueeze(1)


def test_save_without_input_spec_uses_the_one_given_to_the_decorator(tmp_path):
    sf = to_static(_scaled_rows, input_spec=[InputSpec([None, 2], "float32")])
    sf(d2s.to_tensor(np.ones((3, 2), "float32")))  # the last program built is also for [None, 2]
    never_called = to_static(_scaled_rows, input_spec=[InputSpec([None, 2], "float32")])
    for fn, name in ((sf, "called"), (never_called, "never_called")):
        path = str(tmp_path / name)
        d2s.jit.save(fn, path)
        loaded = d2s.jit.load(path)
        for n in (1, 4):  # the saved program serves every size of the None dim
            x = np.arange(2 * n, dtype="float32").reshape(n, 2)
            np.testing.assert_allclose(loaded(d2s.to_tensor(x)).numpy(),
                                       x * np.arange(1, n + 1)[:, None])


def test_save_of_a_function_without_input_spec_uses_the_last_program(tmp_path):
    sf = to_static(_scaled_rows)
    sf(d2s.to_tensor(np.ones((3, 2), "float32")))
    d2s.jit.save(sf, str(tmp_path / "last"))
    loaded = d2s.jit.load(str(tmp_path / "last"))
    x = np.arange(6, dtype="float32").reshape(3, 2)
    np.testing.assert_allclose(loaded(d2s.to_tensor(x)).numpy(), x * np.arange(1, 4)[:, None])
    with pytest.raises(ValueError, match="'x'"):  # that program is for [3, 2] only
        loaded(d2s.to_tensor(np.ones((4, 2), "float32")))
