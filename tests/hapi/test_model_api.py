"""d2s.Model (Paddle's paddle.Model): fit / evaluate / predict / save / load
against hand-written eager loops and numpy references, eager and converted
(inputs=[InputSpec]) on the numpy and xla backends."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec


def _data(n=16, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 4).astype("float32")
    y = (x[:, :1] + x[:, 1:2] > 0).astype("int64")  # separable
    return x, y


class _DS(d2s.io.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def _net(seed=1):
    d2s.seed(seed)
    return d2s.nn.Sequential(d2s.nn.Linear(4, 8), d2s.nn.Tanh(), d2s.nn.Linear(8, 2))


def _model(net, inputs=None, lr=0.1, metrics=None):
    m = d2s.Model(net, inputs=inputs)
    m.prepare(d2s.optimizer.SGD(learning_rate=lr, parameters=net.parameters()),
              d2s.nn.CrossEntropyLoss(), metrics)
    return m


def _state(net):
    return {k: v.numpy().copy() for k, v in net.state_dict().items()}


@pytest.fixture(params=["numpy", "xla"])
def backend(request, monkeypatch):
    if request.param == "xla":
        pytest.importorskip("jax")
        monkeypatch.setenv("D2S_XLA_SYNC", "1")  # the first call runs the compiled program
    saved = d2s.jit.get_backend()
    d2s.jit.set_backend(request.param)
    yield request.param
    d2s.jit.set_backend(saved)


@pytest.mark.parametrize("converted", [False, True])
def test_fit_matches_hand_loop_and_lowers_loss(converted, backend):
    if backend == "xla" and not converted:
        pytest.skip("eager runs the same on every backend")
    x, y = _data()
    net = _net()
    ref = _net()
    ref.set_state_dict(_state(net))
    inputs = [InputSpec([None, 4], "float32", "x")] if converted else None
    model = _model(net, inputs)
    before = model.evaluate(_DS(x, y), batch_size=16, verbose=0)["loss"][0]
    model.fit(_DS(x, y), batch_size=4, epochs=3, shuffle=False, verbose=0)
    after = model.evaluate(_DS(x, y), batch_size=16, verbose=0)["loss"][0]
    assert after < before

    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())
    loss_fn = d2s.nn.CrossEntropyLoss()
    for _ in range(3):
        for s in range(0, 16, 4):
            loss = loss_fn(ref(d2s.to_tensor(x[s:s + 4])), d2s.to_tensor(y[s:s + 4]))
            loss.backward()
            opt.step()
            opt.clear_grad()
    got, want = _state(net), _state(ref)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_converted_forward_equals_eager(backend):
    x, _ = _data(8)
    net = _net()
    eager = net(d2s.to_tensor(x)).numpy()
    model = d2s.Model(net, inputs=[InputSpec([None, 4], "float32", "x")])
    from d2s.jit.static_function import StaticFunction
    assert isinstance(model._forward, StaticFunction)
    out = model.predict_batch([x])
    np.testing.assert_allclose(out[0], eager, rtol=1e-5, atol=1e-6)


def test_evaluate_metric_and_loss_equal_hand_computation():
    x, y = _data(10, seed=3)
    net = _net(2)
    model = _model(net, metrics=d2s.metric.Accuracy())
    res = model.evaluate(_DS(x, y), batch_size=4, verbose=0)
    logits = net(d2s.to_tensor(x)).numpy()
    acc = float(np.mean(logits.argmax(1) == y[:, 0]))
    assert res["acc"] == pytest.approx(acc)
    # the loss reported is the last batch's (Paddle's): samples 8..9
    z = logits[8:] - logits[8:].max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    want = -np.mean(logp[np.arange(2), y[8:, 0]])
    assert res["loss"][0] == pytest.approx(want, rel=1e-5)


def test_train_batch_returns_loss_and_metrics():
    x, y = _data(4)
    model = _model(_net(), metrics=d2s.metric.Accuracy())
    losses, metrics = model.train_batch([x], [y])
    assert len(losses) == 1 and np.asarray(losses[0]).size == 1
    assert len(metrics) == 1
    model2 = _model(_net())
    out = model2.train_batch([x], [y])
    assert isinstance(out, list) and len(out) == 1


def test_predict_shapes():
    x, y = _data(10)
    model = _model(_net())
    out = model.predict(_DS(x, y), batch_size=4)
    assert len(out) == 1 and [o.shape for o in out[0]] == [(4, 2), (4, 2), (2, 2)]
    stacked = model.predict(_DS(x, y), batch_size=4, stack_outputs=True)
    assert stacked[0].shape == (10, 2)
    np.testing.assert_allclose(stacked[0], np.concatenate(out[0]), rtol=0, atol=0)


def test_save_load_round_trip(tmp_path):
    x, y = _data()
    net = _net()
    model = _model(net)
    model.fit(_DS(x, y), batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(str(tmp_path / "ckpt"))
    assert (tmp_path / "ckpt.pdparams").exists() and (tmp_path / "ckpt.pdopt").exists()
    other = _model(_net(seed=7))
    other.load(str(tmp_path / "ckpt"))
    for k, v in _state(net).items():
        np.testing.assert_array_equal(_state(other.network)[k], v)
    np.testing.assert_array_equal(other.predict_batch([x])[0], model.predict_batch([x])[0])


def test_save_inference_model(tmp_path):
    x, _ = _data(4)
    net = _net()
    model = d2s.Model(net, inputs=[InputSpec([None, 4], "float32", "x")])
    model.save(str(tmp_path / "infer"), training=False)
    loaded = d2s.jit.load(str(tmp_path / "infer"))
    np.testing.assert_allclose(loaded(d2s.to_tensor(x)).numpy(), net(d2s.to_tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="InputSpec"):
        d2s.Model(net).save(str(tmp_path / "x"), training=False)


def test_callbacks_protocol_early_stopping_checkpoint_lr(tmp_path):
    x, y = _data()
    net = _net()
    sched = d2s.optimizer.lr.StepDecay(learning_rate=0.1, step_size=1, gamma=0.5)
    model = d2s.Model(net)
    model.prepare(d2s.optimizer.SGD(learning_rate=sched, parameters=net.parameters()),
                  d2s.nn.CrossEntropyLoss())
    seen = []

    class Rec(d2s.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen.append("train_begin")

        def on_epoch_begin(self, epoch, logs=None):
            seen.append(("epoch", epoch))

        def on_train_batch_end(self, step, logs=None):
            seen.append(("batch", step, "loss" in logs))

        def on_train_end(self, logs=None):
            seen.append("train_end")

    model.fit(_DS(x, y), batch_size=8, epochs=2, shuffle=False, verbose=0,
              save_dir=str(tmp_path), callbacks=[Rec(), d2s.callbacks.LRScheduler(
                  by_step=False, by_epoch=True)])
    assert seen == ["train_begin", ("epoch", 0), ("batch", 0, True), ("batch", 1, True),
                    ("epoch", 1), ("batch", 0, True), ("batch", 1, True), "train_end"]
    assert sched.last_lr == pytest.approx(0.025)  # stepped once per epoch
    assert (tmp_path / "0.pdparams").exists() and (tmp_path / "final.pdparams").exists()

    # patience 0 and a learning rate of 0: the loss never improves after the first eval
    net2 = _net()
    model2 = _model(net2, lr=0.0)
    epochs = []

    class Ep(d2s.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            epochs.append(epoch)

    model2.fit(_DS(x, y), _DS(x, y), batch_size=8, epochs=5, verbose=0,
               callbacks=[Ep(), d2s.callbacks.EarlyStopping(patience=0, verbose=0)])
    assert epochs == [0, 1]
    with pytest.raises(TypeError, match="Callback"):
        model2.fit(_DS(x, y), epochs=1, verbose=0, callbacks=[object()])


def test_summary_parameters_dataloader_and_errors(capsys):
    net = _net()
    model = d2s.Model(net, inputs=[InputSpec([None, 4], "float32", "x")])
    assert model.summary() == {"total_params": 4 * 8 + 8 + 8 * 2 + 2,
                               "trainable_params": 58}
    assert [p.shape for p in model.parameters()] == [p.shape for p in net.parameters()]
    with pytest.raises(RuntimeError, match="prepare"):
        model.train_batch([np.zeros((1, 4), "float32")], [np.zeros((1, 1), "int64")])
    with pytest.raises(NotImplementedError, match="amp_configs"):
        model.prepare(amp_configs="O2")
    with pytest.raises(TypeError, match="InputSpec"):
        d2s.Model(net, inputs=[(None, 4)])
    # a DataLoader is used as given (its batch size, not fit's)
    x, y = _data(8)
    model = _model(_net(), metrics=d2s.metric.Accuracy())
    loader = d2s.io.DataLoader(_DS(x, y), batch_size=8, shuffle=False)
    res = model.evaluate(loader, batch_size=2, verbose=0)
    logits = model.network(d2s.to_tensor(x)).numpy()
    assert res["acc"] == pytest.approx(float(np.mean(logits.argmax(1) == y[:, 0])))
    model = _model(model.network, metrics=d2s.metric.Accuracy(topk=(1, 2)))
    res = model.evaluate(loader, verbose=0)
    assert res["acc_top1"] == pytest.approx(float(np.mean(logits.argmax(1) == y[:, 0])))
    assert res["acc_top2"] == 1.0  # two classes
    with pytest.raises(TypeError, match="Dataset"):
        model.fit([(x, y)], verbose=0)


def test_accumulate_grad_batches_sums_gradients_before_a_step():
    x, y = _data(16)
    net, ref = _net(), _net()
    ref.set_state_dict(_state(net))
    _model(net).fit(_DS(x, y), batch_size=4, epochs=1, shuffle=False, verbose=0,
                    accumulate_grad_batches=2)
    opt = d2s.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())
    loss_fn = d2s.nn.CrossEntropyLoss()
    for s in range(0, 16, 4):
        loss_fn(ref(d2s.to_tensor(x[s:s + 4])), d2s.to_tensor(y[s:s + 4])).backward()
        if s % 8 == 4:
            opt.step()
            opt.clear_grad()
    for k, v in _state(ref).items():
        np.testing.assert_allclose(_state(net)[k], v, rtol=1e-5, atol=1e-6, err_msg=k)
