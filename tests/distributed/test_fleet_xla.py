"""Paddle's fleet model-parallel layers on the xla backend, 8 simulated CPU
devices: a Llama-style feed-forward LM (vocabulary-parallel embedding,
column/row-parallel SwiGLU, column-parallel head, parallel loss) gives the
unsharded numpy run's loss and gradients on a 1-d "mp" mesh and on a 2-d
dp x mp mesh, and the compiled module holds the all-reduce of the
row-parallel layer.

Heavy: `D2S_DIST_TESTS=1 python -m pytest tests/distributed` (see conftest).
"""
import re

import numpy as np
import pytest

from dist_helpers import DIST_TESTS, heavy

pytestmark = heavy
if DIST_TESTS:
    pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.distributed as dist  # noqa: E402
from d2s import static  # noqa: E402
from d2s.core import dist_attr  # noqa: E402
from d2s.distributed import fleet  # noqa: E402
from d2s.distributed.fleet import hybrid  # noqa: E402
from fleet_models import VOCAB, make_lm  # noqa: E402

RTOL = 1e-5


@pytest.fixture(params=[(1, 4), (2, 4)], ids=["mp4", "dp2xmp4"])
def degrees(request):
    dp, mp = request.param
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": dp, "mp_degree": mp}
    fleet.init(is_collective=True, strategy=strategy)
    yield dp, mp
    hybrid._state["mesh"] = None


def _batch():
    rng = np.random.default_rng(5)
    ids = rng.integers(0, VOCAB, size=(4, 6))
    return ids, np.roll(ids, -1, axis=1)[..., None]


def _program(model):
    prog = static.Program()
    with static.program_guard(prog):
        ids = static.data("ids", [4, 6], "int64")
        labels = static.data("labels", [4, 6, 1], "int64")
        loss = model(ids, labels)
        grads = static.gradients([loss], model.parameters())
    return prog, [loss] + grads


def test_sharded_lm_equals_the_unsharded_run_and_all_reduces(degrees):
    dp, mp = degrees
    model = fleet.distributed_model(make_lm())
    mesh = hybrid.hybrid_mesh()
    ids, labels = _batch()
    prog, fetch = _program(model)
    want = static.Executor().run(prog, {"ids": ids, "labels": labels}, fetch)
    batch_placement = [dist.Shard(0) if name == "dp" else dist.Replicate()
                       for name in mesh.dim_names]
    feed = {"ids": dist.shard_tensor(ids, mesh, batch_placement),
            "labels": dist.shard_tensor(labels, mesh, batch_placement)}
    got = static.Executor(backend="xla").run(prog, feed, fetch)
    names = ["loss"] + [n for n, _ in model.named_parameters()]
    for g, w, name in zip(got, want, names):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-6, err_msg=name)

    from d2s.backends.xla import runner_for
    from d2s.static.executor import check_feed
    order = list(feed)
    arrays = [check_feed(prog.feed_vars[n], feed[n]) for n in order]
    runner = runner_for(prog, tuple(order), (fetch[0].name,))
    hlo = runner.xla.compiled_text(arrays, [dist_attr.get(feed[n]) for n in order])
    assert re.search(r"\ball-reduce(?:-start)?\(", hlo), "no all-reduce in the compiled module"


def test_converted_training_step_on_xla_trains_as_on_numpy(degrees):
    ids, labels = _batch()

    def train(backend):
        model = fleet.distributed_model(make_lm())
        opt = fleet.distributed_optimizer(
            d2s.optimizer.AdamW(learning_rate=0.01, parameters=model.parameters()))

        @d2s.jit.to_static(backend=backend)
        def step(ids, labels):
            loss = model(ids, labels)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return [float(step(d2s.to_tensor(ids), d2s.to_tensor(labels))) for _ in range(4)]

    want, got = train("numpy"), train("xla")
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert got[-1] < got[0]
