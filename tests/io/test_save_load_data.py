"""`d2s.save` / `d2s.load` (pickle-free nested state), `d2s.io` datasets and the
DataLoader, `d2s.batch`, `d2s.metric.accuracy`."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s import io, optimizer


def test_save_load_round_trips_a_model_and_optimizer_checkpoint(tmp_path):
    d2s.seed(0)
    model = nn.Sequential(nn.Conv2D(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    opt = optimizer.AdamW(optimizer.lr.StepDecay(0.01, 2), parameters=model.parameters())
    model(d2s.randn([2, 1, 6, 6])).sum().backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3,
            "note": "résumé", "loss": float("nan"), "sizes": (1, [2.5, None, True]),
            "big": 2 ** 70, "arr": np.arange(3, dtype=np.int16)}
    path = tmp_path / "sub" / "ckpt.pdparams"
    d2s.save(ckpt, path)
    assert path.exists() and not (tmp_path / "sub" / "ckpt.pdparams.npz").exists()
    got = d2s.load(path)
    assert got["epoch"] == 3 and got["note"] == "résumé" and np.isnan(got["loss"])
    assert got["sizes"] == (1, [2.5, None, True]) and got["big"] == 2 ** 70
    assert got["arr"].dtype == np.int16 and got["arr"].tolist() == [0, 1, 2]
    assert list(got["model"]) == list(model.state_dict())
    for k, v in model.state_dict().items():
        assert isinstance(got["model"][k], d2s.Tensor)
        np.testing.assert_array_equal(got["model"][k].numpy(), v.numpy())
        assert got["model"][k].dtype == v.dtype
    fresh = nn.Sequential(nn.Conv2D(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    fresh.set_dict(got["model"])
    np.testing.assert_array_equal(fresh[0].weight.numpy(), model[0].weight.numpy())
    as_numpy = d2s.load(path, return_numpy=True)
    assert isinstance(as_numpy["model"]["0.weight"], np.ndarray)
    assert as_numpy["opt"]["LR_Scheduler"] == {"last_epoch": 0, "last_lr": 0.01}


def test_save_refuses_what_would_need_pickle_and_load_checks_the_file(tmp_path):
    with pytest.raises(TypeError, match=r"obj\['f'\] is a function"):
        d2s.save({"f": lambda: 1}, tmp_path / "x")
    with pytest.raises(TypeError, match="object array"):
        d2s.save({"o": np.array([1, "a"], dtype=object)}, tmp_path / "x")
    (tmp_path / "junk").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a file d2s.save wrote"):
        d2s.load(tmp_path / "junk")
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(ValueError, match="no d2s.save structure"):
        d2s.load(tmp_path / "plain.npz")


class Squares(io.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return np.array([i, i * i], np.float32), np.int64(i % 3)


def test_dataloader_batches_shuffles_and_drops_last():
    batches = list(io.DataLoader(Squares(), batch_size=4))
    assert [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert batches[0][1].dtype == np.int64 and batches[2][0].numpy()[1].tolist() == [9, 81]
    assert len(io.DataLoader(Squares(), batch_size=4, drop_last=True)) == 2
    np.random.seed(0)
    seen = np.concatenate([b[0].numpy()[:, 0] for b in
                           io.DataLoader(Squares(), batch_size=3, shuffle=True)])
    assert sorted(seen.tolist()) == list(range(10)) and seen.tolist() != list(range(10))
    x = d2s.to_tensor(np.arange(12.0).reshape(6, 2))
    ds = io.TensorDataset([x, d2s.to_tensor(np.arange(6))])
    (xb, yb), = list(io.DataLoader(ds, batch_sampler=io.BatchSampler(ds, batch_size=6)))
    np.testing.assert_array_equal(xb.numpy(), x.numpy())
    with pytest.raises(ValueError, match="differ in length"):
        io.TensorDataset([x, d2s.to_tensor(np.arange(5))])
    shards = [list(io.DistributedBatchSampler(Squares(), 2, num_replicas=3, rank=r))
              for r in range(3)]
    flat = sorted(i for s in shards for b in s for i in b)
    assert flat == sorted(list(range(10)) + [0, 1])  # padded to a multiple of 3


def test_batch_reader_decorator():
    reader = d2s.batch(lambda: iter(range(7)), 3)
    assert list(reader()) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(d2s.batch(lambda: iter(range(7)), 3, drop_last=True)()) == [[0, 1, 2],
                                                                           [3, 4, 5]]


def test_accuracy_top_k():
    scores = np.array([[0.1, 0.5, 0.4], [0.8, 0.1, 0.1], [0.3, 0.3, 0.4], [0.2, 0.5, 0.3]],
                      np.float32)
    labels = np.array([[2], [0], [0], [0]])
    top1 = d2s.metric.accuracy(d2s.to_tensor(scores), d2s.to_tensor(labels))
    top2 = d2s.metric.accuracy(d2s.to_tensor(scores), d2s.to_tensor(labels), k=2)
    assert top1.dtype == np.float32 and float(top1) == 0.25
    assert float(top2) == 0.75
    conv = d2s.jit.to_static(lambda s, y: d2s.metric.accuracy(s, y, k=2))
    assert float(conv(d2s.to_tensor(scores), d2s.to_tensor(labels))) == 0.75


def test_initializers_and_create_parameter():
    d2s.seed(2)
    init = nn.initializer
    t = init.TruncatedNormal(1.0, 0.5)([4000], "float32").numpy()
    assert t.min() >= 0.0 and t.max() <= 2.0 and abs(t.mean() - 1.0) < 0.02
    assert abs(t.std() - 0.5 * 0.8796) < 0.02  # a normal truncated at 2 std
    xn = init.XavierNormal()([200, 300], "float64").numpy()
    assert abs(xn.std() - np.sqrt(2 / 500)) < 0.003
    kn = init.KaimingNormal()([64, 32, 3, 3], "float32").numpy()
    assert abs(kn.std() - np.sqrt(2 / (32 * 9))) < 0.005
    a = init.Assign(np.arange(6.0).reshape(2, 3))([2, 3], "float32")
    assert a.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="does not match"):
        init.Assign([1.0, 2.0])([3], "float32")
    p = d2s.create_parameter([3, 2], "float32", attr=d2s.ParamAttr(
        name="w", initializer=init.Constant(2.0), learning_rate=0.1))
    assert p.name == "w" and not p.stop_gradient and (p.numpy() == 2).all()
    frozen = d2s.create_parameter([2], "float32", attr=d2s.ParamAttr(trainable=False))
    assert frozen.stop_gradient

    class Holder(nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([2], attr=d2s.ParamAttr(trainable=False))
    assert [n for n, _ in Holder().named_parameters()] == ["w"]
