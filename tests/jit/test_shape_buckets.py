"""Shape buckets (`InputSpec(..., buckets=...)`, d2s.jit.buckets): padded runs
equal the eager, unpadded ones on numpy and xla, lengths of one bucket share
one program fed the bucket's shape, gradients equal eager's, programs that are
not pad-safe build per length with one warning naming the op, bad bucket lists
and too-long inputs are errors naming the InputSpec."""
import warnings

import numpy as np
import pytest

import d2s
from d2s.jit.concrete_program import ConcreteProgram
from d2s.static import InputSpec

RNG = np.random.default_rng(0)
W = RNG.standard_normal((8, 4)).astype("float32")


@pytest.fixture(params=["numpy", "xla"])
def backend(request):
    if request.param == "xla":
        pytest.importorskip("jax")
    return request.param


def pad_safe(x, w):
    h = d2s.tanh(d2s.matmul(x, w)) + 1.0
    return (h.sum(axis=1), d2s.nn.functional.softmax(h, axis=0), h.mean(axis=0),
            x[:, 1:3], h.max(axis=0), h.min(axis=0), h.sum(), h.mean(),
            d2s.matmul(d2s.log(d2s.abs(x)).transpose([1, 0]), h),  # contracts the length
            d2s.log(d2s.abs(d2s.matmul(x, w))))  # zero padding would make w.grad nan


def not_pad_safe(x, w):
    return d2s.cumsum(d2s.matmul(x, w), axis=0)


def layout(x):  # x: [batch, length (bucketed), 8]
    b = x.shape[0]
    heads = d2s.transpose(d2s.reshape(d2s.tanh(x), [b, -1, 2, 4]), [0, 2, 1, 3])
    same = d2s.squeeze(d2s.unsqueeze(d2s.reshape(x, [0, 0, 2, 4]), 0), 0)
    scores = d2s.nn.functional.softmax(heads.sum(-1), axis=-1)
    return heads, same, d2s.concat([x, x], axis=-1), x.transpose([1, 0, 2]), scores


def merges_length(x):
    return d2s.reshape(x, [0, -1])


def reads_length(x):
    return x * x.shape[1]


SEQ_SPEC = [InputSpec([None, None, 8], buckets=[8], bucket_axis=1)]


def _flat(r):
    return list(r) if isinstance(r, tuple) else [r]


def _spec(buckets=(4, 16)):
    return [InputSpec([None, 8], buckets=list(buckets)), InputSpec([8, 4])]


@pytest.fixture
def fed_shapes(monkeypatch):
    """The first input's shape of every program run."""
    shapes = []
    original = ConcreteProgram.__call__

    def spy(self, tensors, backend=None):
        shapes.append(tuple(tensors[0].shape))
        return original(self, tensors, backend)
    monkeypatch.setattr(ConcreteProgram, "__call__", spy)
    return shapes


def test_bucketed_results_equal_eager_and_one_program_per_bucket(backend, fed_shapes):
    sf = d2s.jit.to_static(pad_safe, input_spec=_spec(), backend=backend)
    w = d2s.to_tensor(W)
    for length in (5, 7, 9, 16):  # one bucket: 16
        x = d2s.to_tensor(RNG.standard_normal((length, 8)).astype("float32"))
        for got, ref in zip(_flat(sf(x, w)), _flat(pad_safe(x, w))):
            assert got.shape == ref.shape
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    assert len(sf.program_cache) == 1
    assert set(fed_shapes) == {(16, 8)}
    x = d2s.to_tensor(RNG.standard_normal((3, 8)).astype("float32"))  # bucket 4
    np.testing.assert_allclose(sf(x, w)[2].numpy(), pad_safe(x, w)[2].numpy(), rtol=1e-5)
    assert len(sf.program_cache) == 2 and fed_shapes[-1] == (4, 8)


def test_gradients_through_the_padded_program_equal_eager(backend):
    sf = d2s.jit.to_static(pad_safe, input_spec=_spec(), backend=backend)
    x0 = RNG.standard_normal((6, 8)).astype("float32")
    weights = [RNG.standard_normal(o.shape).astype("float32")
               for o in _flat(pad_safe(d2s.to_tensor(x0), d2s.to_tensor(W)))]
    grads = []
    for fn in (pad_safe, sf):
        x, w = d2s.to_tensor(x0), d2s.to_tensor(W)
        x.stop_gradient = w.stop_gradient = False
        loss = sum((o * d2s.to_tensor(k)).sum() for o, k in zip(_flat(fn(x, w)), weights))
        loss.backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    for got, ref in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_layout_ops_keeping_the_padded_dim_are_pad_safe(backend, fed_shapes):
    sf = d2s.jit.to_static(layout, input_spec=SEQ_SPEC, backend=backend)
    for length in (3, 5):
        x = d2s.to_tensor(RNG.standard_normal((2, length, 8)).astype("float32"))
        for got, ref in zip(sf(x), layout(x)):
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    assert len(sf.program_cache) == 1 and set(fed_shapes) == {(2, 8, 8)}


@pytest.mark.parametrize("fn, op, why", [
    (merges_length, "reshape", "merges or splits the padded dim"),
    (reads_length, "getitem", "reads the padded length"),
])
def test_layout_ops_changing_the_padded_dim_are_not(fn, op, why, fed_shapes):
    sf = d2s.jit.to_static(fn, input_spec=SEQ_SPEC)
    x = d2s.to_tensor(RNG.standard_normal((2, 3, 8)).astype("float32"))
    with pytest.warns(UserWarning, match=f"'{op}' at .*test_shape_buckets.py:[0-9]+ {why}"):
        got = sf(x)
    np.testing.assert_allclose(got.numpy(), fn(x).numpy(), rtol=1e-6)
    assert fed_shapes == [(2, 3, 8)]


def test_not_pad_safe_warns_once_naming_the_op_and_builds_per_length(backend, fed_shapes):
    sf = d2s.jit.to_static(not_pad_safe, input_spec=_spec(), backend=backend)
    w = d2s.to_tensor(W)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for length in (5, 7):
            x = d2s.to_tensor(RNG.standard_normal((length, 8)).astype("float32"))
            np.testing.assert_allclose(sf(x, w).numpy(), not_pad_safe(x, w).numpy(),
                                       rtol=1e-5, atol=1e-6)
    messages = [str(c.message) for c in caught if "buckets" in str(c.message)]
    assert len(messages) == 1
    assert "'cumsum'" in messages[0] and "test_shape_buckets.py" in messages[0]
    assert fed_shapes[-2:] == [(5, 8), (7, 8)]  # unpadded


def test_pow2_policy_pads_to_the_next_power_of_two(fed_shapes):
    spec = InputSpec([None, 8], buckets="pow2")
    assert [spec.bucket_for(n) for n in (1, 2, 3, 5, 8, 9)] == [1, 2, 4, 8, 8, 16]
    sf = d2s.jit.to_static(pad_safe, input_spec=[spec, InputSpec([8, 4])])
    x = d2s.to_tensor(RNG.standard_normal((5, 8)).astype("float32"))
    w = d2s.to_tensor(W)
    np.testing.assert_allclose(sf(x, w)[0].numpy(), pad_safe(x, w)[0].numpy(), rtol=1e-5)
    assert fed_shapes == [(8, 8)]


@pytest.mark.parametrize("buckets, match", [
    ([16, 8, 32], "not increasing"),
    ([16, 16], "not increasing"),
    ([0, 4], "positive"),
    ("linear", "not a policy"),
])
def test_bad_bucket_lists_name_the_input_spec(buckets, match):
    with pytest.raises(ValueError, match=match) as info:
        InputSpec([None, 8], buckets=buckets)
    assert "InputSpec(shape=[None, 8]" in str(info.value)


def test_a_length_above_the_largest_bucket_names_the_input_spec():
    sf = d2s.jit.to_static(pad_safe, input_spec=_spec((4, 16)))
    x = d2s.to_tensor(np.zeros((17, 8), "float32"))
    with pytest.raises(ValueError, match=r"InputSpec\(shape=\[None, 8\].*length 17.*largest"):
        sf(x, d2s.to_tensor(W))


def test_buckets_need_one_none_dim_or_an_axis():
    with pytest.raises(ValueError, match="bucket_axis"):
        InputSpec([None, None], buckets=[4])
    assert InputSpec([None, None], buckets=[4], bucket_axis=1).bucket_axis == 1
    with pytest.raises(ValueError, match="not a None dim"):
        InputSpec([None, 8], buckets=[4], bucket_axis=1)


def test_numpy_array_inputs_are_bucketed_too(fed_shapes):
    sf = d2s.jit.to_static(pad_safe, input_spec=_spec())
    x = RNG.standard_normal((6, 8)).astype("float32")
    got = sf(x, d2s.to_tensor(W))[2]
    np.testing.assert_allclose(got.numpy(), pad_safe(d2s.to_tensor(x), d2s.to_tensor(W))[2].numpy(),
                               rtol=1e-5)
    assert fed_shapes == [(16, 8)]


def test_a_training_step_is_not_padded_and_says_why():
    def make():
        d2s.seed(3)
        layer = d2s.nn.Linear(8, 4)
        opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())

        def step(x):
            loss = layer(x).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return layer, step

    x = d2s.to_tensor(RNG.standard_normal((5, 8)).astype("float32"))
    ref_layer, ref_step = make()
    ref_loss = ref_step(x)
    layer, step = make()
    sf = d2s.jit.to_static(step, input_spec=[InputSpec([None, 8], buckets=[16])])
    with pytest.warns(UserWarning, match="writes state"):
        loss = sf(x)
    np.testing.assert_allclose(loss.numpy(), ref_loss.numpy(), rtol=1e-5)
    np.testing.assert_allclose(layer.weight.numpy(), ref_layer.weight.numpy(), rtol=1e-5)


def test_an_unpadded_input_on_the_padded_dim_is_not_pad_safe():
    def add(x, y):
        return x + y

    sf = d2s.jit.to_static(add, input_spec=[InputSpec([None, 8], buckets=[16]),
                                            InputSpec([None, 8])])
    x = d2s.to_tensor(RNG.standard_normal((5, 8)).astype("float32"))
    y = d2s.to_tensor(RNG.standard_normal((5, 8)).astype("float32"))
    with pytest.warns(UserWarning, match="'add' .* meets the unpadded 'y'"):
        got = sf(x, y)
    np.testing.assert_allclose(got.numpy(), (x + y).numpy())
