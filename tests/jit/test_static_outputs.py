"""What a static call hands back: None leaves, undefined outputs, unused outputs.

Expected values come from the eager run of the same function (or numpy).
"""
import numpy as np
import pytest

import d2s
from d2s.jit import to_static


def _returns_none_leaves(x):
    y = x * 2
    return y, None, {"a": None, "b": [y + 1, None]}


def _returns_none(x):
    y = x * 2
    return None


def _no_return(x):
    y = x * 2


@pytest.mark.parametrize("fn", [_returns_none_leaves, _returns_none, _no_return])
def test_none_is_an_ordinary_output_leaf(fn, each_executor):
    x = d2s.to_tensor(np.array([1.0, 2.0]))
    sf = to_static(fn)
    eager, static = fn(x), sf(x)
    if eager is None:
        assert static is None
        return
    y, none, d = static
    assert none is None and d["a"] is None and d["b"][1] is None
    np.testing.assert_allclose(y.numpy(), [2.0, 4.0])
    np.testing.assert_allclose(d["b"][0].numpy(), [3.0, 5.0])
    assert y.dtype == eager[0].dtype
    assert len(sf.get_concrete_program(x).outputs) == 2  # None is no program output
    assert sf(x)[1] is None  # the cached program too


def _read_loop_target(x, n):
    for i in range(n):
        x = x + 1
    return x, i


def test_loop_target_read_after_zero_trips_is_a_name_error(each_executor):
    sf = to_static(_read_loop_target)
    x = d2s.to_tensor(np.float64(1.0))
    x_out, i_out = sf(x, d2s.to_tensor(np.int64(3)))
    assert (x_out.item(), i_out.item()) == (4.0, 2)
    with pytest.raises(NameError, match=r"'i'.*line \d+"):
        sf(x, d2s.to_tensor(np.int64(0)))
    with pytest.raises(NameError):  # as Python does
        _read_loop_target(1.0, 0)
    assert len(sf.program_cache) == 1


class _TwoHeads(d2s.nn.Layer):
    """A model returning (logits, attention); losses often use only one."""

    def __init__(self):
        super().__init__()
        self.proj = d2s.nn.Linear(3, 4)
        self.attn = d2s.nn.Linear(3, 4)

    def forward(self, x):
        logits = self.proj(x)
        attention = d2s.nn.functional.softmax(self.attn(x) * logits, axis=-1)
        return logits, attention


def _grads(layer, x_value, use, static):
    d2s.jit.enable_to_static(static)
    try:
        x = d2s.to_tensor(x_value, stop_gradient=False)
        outs = layer(x)
        loss = (outs[use] * outs[use]).sum()
        loss.backward()
        grads = [x.grad.numpy()] + [p.grad.numpy() if p.grad is not None else None
                                    for p in layer.parameters()]
        for p in layer.parameters():
            p.clear_grad()
        return grads
    finally:
        d2s.jit.enable_to_static(True)


@pytest.mark.parametrize("use", [0, 1])
def test_backward_through_some_outputs_of_a_static_call(use, each_executor):
    d2s.seed(3)
    layer = to_static(_TwoHeads())
    x_value = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    static = _grads(layer, x_value, use, True)
    eager = _grads(layer, x_value, use, False)
    for s, e in zip(static, eager):
        if e is None:  # the eager tape never reached this parameter
            assert s is None or not np.any(s)
            continue
        np.testing.assert_allclose(s, e, rtol=1e-5, atol=1e-6)
    if use == 0:  # the attention head does not feed the loss: zero gradients
        assert not np.any(static[3]) and not np.any(static[4])


def test_none_leaves_survive_save_and_load(tmp_path):
    sf = to_static(_returns_none_leaves)
    path = str(tmp_path / "none_leaves")
    d2s.jit.save(sf, path, input_spec=[d2s.static.InputSpec([2], "float64")])
    loaded = d2s.jit.load(path)
    y, none, d = loaded(d2s.to_tensor(np.array([1.0, 2.0])))
    assert none is None and d["a"] is None and d["b"][1] is None
    np.testing.assert_allclose(d["b"][0].numpy(), [3.0, 5.0])


# ---- which outputs require a gradient: as eagerly ---------------------------------------

def _mixed_outputs(x, y, lin):
    h = lin(y)                   # a trainable parameter: requires a gradient
    z = x * 1
    while z.sum() < 10:          # a loop over x: requires one (x does)
        z = z * 2
    return h, z, y + 1, (x * 2).detach(), d2s.ones([2]), x > 0


def test_outputs_require_a_gradient_exactly_when_eager_ones_do():
    from d2s import nn
    lin = nn.Linear(2, 2)
    fn = lambda x, y: _mixed_outputs(x, y, lin)  # noqa: E731
    sf = to_static(_mixed_outputs)
    for x_requires in (True, False):
        x = d2s.to_tensor(np.array([1.0, 2.0]), stop_gradient=not x_requires)
        y = d2s.to_tensor(np.array([1.0, -1.0]))
        eager = [o.stop_gradient for o in fn(x, y)]
        static = [o.stop_gradient for o in sf(x, y, lin)]
        assert static == eager
        assert eager == [False, not x_requires, True, True, True, True]
