"""A classifier training script as the Paddle tutorials write it: a
`Dataset` and `DataLoader`, a model with BatchNorm and Dropout, Momentum
with weight decay on a `LinearWarmup(CosineAnnealingDecay)` schedule stepped
per batch inside the train step (`opt.get_lr()` after it returned),
`clip_grad_norm_`, `paddle.metric.accuracy` in the train step,
and an eval step that feeds `paddle.metric.Accuracy(topk=(1, 2))` —
`metric.update(metric.compute(logits, y))` inside the converted function,
whose running totals are then effects of the program, replayed per run
(the last batch is smaller: a second program adds to the same totals) —
`ReduceOnPlateau` on the summed validation loss, and a checkpoint of model
and optimizer saved after the first epoch and restored. Eager and converted
steps agree on numpy and xla; the metric matches a numpy reference."""
import numpy as np
import pytest

import d2s as paddle
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.io import DataLoader, Dataset

from harness import BACKENDS, assert_no_variables_left


class RandomDataset(Dataset):
    def __init__(self, n, seed):
        rng = np.random.RandomState(seed)
        self.x = rng.randn(n, 6).astype("float32")
        self.y = rng.randint(0, 3, (n, 1)).astype("int64")

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.bn = nn.BatchNorm1D(8)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        return self.out(self.drop(F.relu(self.bn(self.fc(x)))))


def numpy_topk_hits(logits, y, topk):
    order = np.argsort(-logits, axis=1, kind="stable")
    return np.stack([(order[:, :k] == y.reshape(-1, 1)).any(1) for k in topk], 1)


def script(backend, convert, tmp_path):
    paddle.seed(0)
    np.random.seed(0)  # the DataLoader's shuffle
    model = Net()
    sched = paddle.optimizer.lr.LinearWarmup(
        paddle.optimizer.lr.CosineAnnealingDecay(0.1, T_max=4), warmup_steps=2,
        start_lr=0.0, end_lr=0.1)
    opt = paddle.optimizer.Momentum(learning_rate=sched, momentum=0.9,
                                    parameters=model.parameters(), weight_decay=1e-4)
    train_loader = DataLoader(RandomDataset(12, 0), batch_size=4, shuffle=True)
    val_loader = DataLoader(RandomDataset(7, 1), batch_size=4)   # batches of 4 and 3

    def train_step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        paddle.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        sched.step()        # per batch, inside the step: stepped on every run
        opt.clear_grad()
        return loss, paddle.metric.accuracy(logits, y), opt.get_lr()

    def eval_step(x, y, metric):
        logits = model(x)
        metric.update(metric.compute(logits, y))
        return F.cross_entropy(logits, y, reduction="sum"), logits

    if convert:
        train_step = paddle.jit.to_static(train_step, backend=backend)
        eval_step = paddle.jit.to_static(eval_step, backend=backend)
    record = []
    plateau = paddle.optimizer.lr.ReduceOnPlateau(learning_rate=1.0, patience=0)
    for epoch in range(2):
        model.train()
        for x, y in train_loader:
            loss, acc, lr = train_step(x, y)
            record += [loss.numpy(), acc.numpy(), float(lr), sched.last_epoch]
        model.eval()
        metric = paddle.metric.Accuracy(topk=(1, 2))
        total, hits = 0.0, []
        with paddle.no_grad():
            for x, y in val_loader:
                loss, logits = eval_step(x, y, metric)
                total += loss.item()
                hits.append(numpy_topk_hits(logits.numpy(), y.numpy(), (1, 2)))
                if convert:
                    assert_no_variables_left(("model", model), ("metric", metric))
        expected = np.concatenate(hits).mean(0)
        np.testing.assert_allclose(metric.accumulate(), expected, rtol=1e-12)
        record += [total, np.array(metric.accumulate())]
        plateau.step(total)
        record.append(plateau.last_lr)
        if epoch == 0:
            paddle.save(model.state_dict(), str(tmp_path / "ck.pdparams"))
            paddle.save(opt.state_dict(), str(tmp_path / "ck.pdopt"))
    model.set_state_dict(paddle.load(str(tmp_path / "ck.pdparams")))
    opt.set_state_dict(paddle.load(str(tmp_path / "ck.pdopt")))
    model.train()
    for x, y in train_loader:
        record.append(train_step(x, y)[0].numpy())
    return record + [v.numpy() for v in model.state_dict().values()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_classifier_script_matches_eager(backend, tmp_path):
    expected = script(backend, False, tmp_path)
    actual = script(backend, True, tmp_path)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6, err_msg=f"record {i}")


def test_accuracy_metric_converted_counts_every_run():
    """The metric's totals grow per run of the same program (not once per
    trace), and a batch of another size adds through its own program."""
    @paddle.jit.to_static
    def update(logits, y, metric):
        return metric.update(metric.compute(logits, y))

    rng = np.random.RandomState(3)
    metric = paddle.metric.Accuracy(topk=(1, 3))
    hits = []
    for n in (5, 5, 5, 2):
        logits, y = rng.randn(n, 4).astype("float32"), rng.randint(0, 4, (n, 1))
        batch = update(paddle.to_tensor(logits), paddle.to_tensor(y), metric)
        hits.append(numpy_topk_hits(logits, y, (1, 3)))
        np.testing.assert_allclose(batch.numpy(), hits[-1].mean(0), rtol=1e-6)
    assert int(metric.count) == 17
    np.testing.assert_allclose(metric.accumulate(), np.concatenate(hits).mean(0), rtol=1e-12)
