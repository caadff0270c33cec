"""Layer: registration by attribute, names, state_dict round trip and errors,
train/eval, initialization, layers in eager and static mode."""
import math

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import static


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3)
        self.scale = self.create_parameter([3], initializer=nn.initializer.Constant(2.0))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_registration_order_and_dotted_names():
    m = MLP()
    assert [n for n, _ in m.named_parameters()] == [
        "scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in m.named_sublayers()] == ["fc1", "act", "fc2"]
    assert m.parameters()[1] is m.fc1.weight
    assert list(m.state_dict()) == [n for n, _ in m.named_parameters()]
    assert all(isinstance(p, d2s.Tensor) and not p.stop_gradient for p in m.parameters())


def test_parameter_names_are_unique():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    names = [p.name for p in a.parameters() + b.parameters()]
    assert len(set(names)) == 4
    assert names[0].startswith("linear_") and names[0].endswith(".w_0")
    assert names[1].endswith(".b_0")


def test_nested_sequential_names_and_shared_parameter_once():
    shared = nn.Linear(3, 3)
    m = nn.Sequential(shared, nn.Sequential(nn.Tanh(), shared), ("head", nn.Linear(3, 1)))
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias", "head.weight",
                                                    "head.bias"]
    assert m[2] is m.head and len(m) == 3


def test_reassigning_attributes_updates_registration():
    m = MLP()
    m.fc1 = 5                    # no longer a sublayer
    assert "fc1" not in dict(m.named_sublayers())
    m.scale = None               # a registered parameter may be set to None
    assert "scale" not in dict(m.named_parameters())
    m.scale = d2s.to_tensor([1.0, 1.0, 1.0])  # stop_gradient=True, but the slot is a parameter
    assert "scale" in dict(m.named_parameters())
    m.extra = d2s.to_tensor([1.0])             # plain constant tensor: not a parameter
    assert "extra" not in dict(m.named_parameters())
    del m.fc2
    assert [n for n, _ in m.named_sublayers()] == ["act"]


def test_layer_without_super_init_fails_clearly():
    class Bad(nn.Layer):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(RuntimeError, match=r"super\(\).__init__\(\)"):
        Bad()


def test_state_dict_round_trip_gives_same_outputs():
    a, b = MLP(), MLP()
    x = d2s.to_tensor(np.random.default_rng(0).normal(size=(5, 4)).astype("float32"))
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    b.set_state_dict(a.state_dict())
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    arrays = {k: v.numpy() * 0.5 for k, v in a.state_dict().items()}
    b.set_state_dict(arrays)
    arrays["fc1.weight"][...] = 0  # values are copied, not aliased
    assert not np.all(b.fc1.weight.numpy() == 0)
    assert b.state_dict()["scale"].numpy().tolist() == [1.0, 1.0, 1.0]


def test_set_state_dict_errors_name_the_key_and_change_nothing():
    m = MLP()
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    good = {k: np.zeros_like(v) for k, v in before.items()}
    with pytest.raises(ValueError, match=r"'fc2.weight' has shape \[3, 8\]"):
        m.set_state_dict({**good, "fc2.weight": np.zeros((3, 8), "float32")})
    with pytest.raises(ValueError, match="'fc1.bias' has dtype float64"):
        m.set_state_dict({**good, "fc1.bias": np.zeros(8)})
    with pytest.raises(KeyError, match="missing keys.*scale"):
        m.set_state_dict({k: v for k, v in good.items() if k != "scale"})
    with pytest.raises(KeyError, match="unexpected keys.*fc3.weight"):
        m.set_state_dict({**good, "fc3.weight": np.zeros(1, "float32")})
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    missing, unexpected = m.set_state_dict({"scale": [3.0, 3.0, 3.0], "zzz": 1}, strict=False)
    assert "fc1.weight" in missing and unexpected == ["zzz"]
    assert m.scale.numpy().tolist() == [3.0, 3.0, 3.0]


def test_train_eval_propagate_to_sublayers():
    m = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Dropout(0.5)))
    x = d2s.ones([64, 4])
    assert m.eval() is m
    assert all(not l.training for l in m.sublayers(include_self=True))
    np.testing.assert_array_equal(m(x).numpy(), m[0](x).numpy())
    m.train()
    assert m[1][0].training
    assert np.any(m(x).numpy() == 0)


def test_seed_makes_initialization_reproducible():
    d2s.seed(3)
    a = nn.Linear(5, 7)
    d2s.seed(3)
    b = nn.Linear(5, 7)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())


def test_linear_initialization():
    d2s.seed(0)
    lin = nn.Linear(30, 20)
    bound = math.sqrt(6 / 50)
    w = lin.weight.numpy()
    assert w.shape == (30, 20) and w.dtype == np.float32
    assert np.all(np.abs(w) <= bound) and np.abs(w).max() > 0.9 * bound
    np.testing.assert_array_equal(lin.bias.numpy(), 0)
    assert nn.Linear(3, 2, bias_attr=False).bias is None
    custom = nn.Linear(3, 2, weight_attr=nn.initializer.Constant(0.5))
    np.testing.assert_array_equal(custom.weight.numpy(), 0.5)
    k = nn.initializer.KaimingUniform()([100, 10], "float32").numpy()
    assert np.abs(k).max() <= math.sqrt(6 / 100)


def test_layers_built_while_building_a_program_have_eager_parameters():
    prog = static.Program()
    with static.program_guard(prog):
        lin = nn.Linear(3, 2)
    assert isinstance(lin.weight, d2s.Tensor) and not prog.global_block().ops
    n_ops = len(static.default_main_program().global_block().ops)
    d2s.enable_static()
    try:
        emb = nn.Embedding(4, 2)
    finally:
        d2s.disable_static()
    assert isinstance(emb.weight, d2s.Tensor)
    assert len(static.default_main_program().global_block().ops) == n_ops


def test_layers_match_functional_in_both_modes():
    d2s.seed(1)
    ln, emb, lin = nn.LayerNorm(6), nn.Embedding(10, 6), nn.Linear(6, 2)
    ln.weight._value = np.linspace(0.5, 1.5, 6).astype("float32")
    ids = np.array([[1, 2, 3], [9, 0, 3]], dtype=np.int64)

    def model(ids):
        return lin(F.gelu(ln(emb(ids))))

    eager = model(d2s.to_tensor(ids)).numpy()
    e = emb.weight.numpy()[ids]
    mu, var = e.mean(-1, keepdims=True), e.var(-1, keepdims=True)
    h = (e - mu) / np.sqrt(var + 1e-5) * ln.weight.numpy()
    erf = np.vectorize(math.erf)
    ref = (0.5 * h * (1 + erf(h / math.sqrt(2)))) @ lin.weight.numpy() + lin.bias.numpy()
    np.testing.assert_allclose(eager, ref, rtol=1e-5, atol=1e-6)
    prog = static.Program()
    with static.program_guard(prog):
        out = model(static.data("ids", [None, 3], "int64"))
    res, = static.Executor().run(prog, {"ids": ids}, [out])
    np.testing.assert_allclose(res, eager, rtol=1e-6, atol=1e-7)
    assert {p.name for p in (ln.weight, emb.weight, lin.weight)} <= set(prog.captured)


def test_layer_list_and_repr():
    blocks = nn.LayerList([nn.Linear(2, 2) for _ in range(2)])
    blocks.append(nn.Tanh())
    blocks.insert(0, nn.ReLU())
    assert [type(b).__name__ for b in blocks] == ["ReLU", "Linear", "Linear", "Tanh"]
    assert [n for n, _ in blocks.named_parameters()] == ["1.weight", "1.bias", "2.weight",
                                                         "2.bias"]
    assert len(blocks) == 4 and isinstance(blocks[-1], nn.Tanh)
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert "(0): Linear(in_features=2, out_features=3)" in text and "(1): ReLU()" in text


def test_forward_not_defined():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Layer()(1)
