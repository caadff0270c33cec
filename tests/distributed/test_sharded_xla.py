"""Placements on the xla backend, on 8 simulated CPU devices: XLA's
partitioner splits the programs; the numbers equal the unsharded numpy run
(rtol 1e-5, float32), gradients included, and the compiled programs hold
the collectives the layouts call for.

Heavy: `D2S_DIST_TESTS=1 python -m pytest tests/distributed` (see conftest).
"""
import re

import numpy as np
import pytest

from dist_helpers import DEVICES, DIST_TESTS, heavy

pytestmark = heavy
if DIST_TESTS:
    pytest.importorskip("jax")

import d2s  # noqa: E402
import d2s.distributed as dist  # noqa: E402
from d2s import static  # noqa: E402
from d2s.core import dist_attr  # noqa: E402
from dist_helpers import blobs, make_mlp, megatron, train  # noqa: E402

RTOL = 1e-5
S, R = dist.Shard, dist.Replicate


def _collectives(text):
    return set(re.findall(r"\b(all-reduce|all-gather|reduce-scatter|all-to-all|"
                          r"collective-permute)(?:-start)?\(", text))


def compiled_hlo(prog, feed, fetch_list):
    """XLA's optimized HLO (after SPMD partitioning) of `prog` for these feeds."""
    from d2s.backends.xla import runner_for
    from d2s.static.executor import check_feed
    names = list(feed)
    arrays = [check_feed(prog.feed_vars[n], feed[n]) for n in names]
    runner = runner_for(prog, tuple(names), tuple(v.name for v in fetch_list))
    return runner.xla.compiled_text(arrays, [dist_attr.get(feed[n]) for n in names])


def forward_program(model, batch=16):
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [batch, 2])
        out = model(x)
    return prog, out


def test_eight_devices_are_seen():
    import jax
    assert jax.device_count() == DEVICES


# ---- data-parallel -------------------------------------------------------------------
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_data_parallel_training_equals_one_device(opt):
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    want_model = make_mlp()
    want = train(want_model, opt, steps=6)  # numpy backend, unsharded
    model = dist.shard_layer(make_mlp(), mesh)  # parameters replicated
    got = train(model, opt, steps=6, backend="xla", x_place=(mesh, [S(0)]))
    np.testing.assert_allclose(got, want, rtol=RTOL)
    assert got[-1] < got[0]  # it trained
    for (name, p), q in zip(model.named_parameters(), want_model.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=RTOL, atol=1e-6, err_msg=name)
        assert p.placements == [R()]  # a training step keeps the layout


def test_data_parallel_step_reduces_the_gradients_across_the_batch_shards():
    from dist_helpers import train_program
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    model = dist.shard_layer(make_mlp(), mesh)
    prog, loss = train_program(model, "sgd")
    x, y = blobs(16)
    feed = {"x": dist.shard_tensor(x, mesh, [S(0)]), "y": dist.shard_tensor(y, mesh, [S(0)])}
    assert "all-reduce" in _collectives(compiled_hlo(prog, feed, [loss]))
    # the same program unsharded needs no collective
    assert _collectives(compiled_hlo(prog, {"x": x, "y": y}, [loss])) == set()


def test_output_reports_the_placements_xla_gave_it():
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    model = dist.shard_layer(make_mlp(), mesh)
    prog, out = forward_program(model)
    x, _ = blobs(16)
    got = static.Executor(backend="xla").run(
        prog, {"x": dist.shard_tensor(x, mesh, [S(0)])}, [out], return_numpy=False)[0]
    want = static.Executor().run(prog, {"x": x}, [out])[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=RTOL)
    assert got.process_mesh == mesh and got.placements == [S(0)]


def test_one_dim_split_over_both_mesh_dims():
    mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], ["dp", "mp"])
    x = np.random.default_rng(2).standard_normal((16, 3)).astype(np.float32)
    prog = static.Program()
    with static.program_guard(prog):
        xv = static.data("x", [16, 3])
        out = d2s.exp(xv) - 1.0
    got = static.Executor(backend="xla").run(
        prog, {"x": dist.shard_tensor(x, mesh, [S(0), S(0)])}, [out], return_numpy=False)[0]
    np.testing.assert_allclose(got.numpy(), np.exp(x) - 1.0, rtol=RTOL)
    assert got.placements == [S(0), S(0)]  # 16 rows in 8 blocks, dp-major


# ---- tensor-parallel -----------------------------------------------------------------
def test_tensor_parallel_mlp_one_all_reduce_equal_numbers_and_gradients():
    mesh = dist.ProcessMesh([0, 1, 2, 3], ["mp"])
    ref = make_mlp()
    model = dist.shard_layer(make_mlp(), mesh, megatron(mesh, "mp"))
    assert model.fc1.weight.placements == [S(1)] and model.fc2.weight.placements == [S(0)]
    assert model.fc2.bias.placements == [R()]
    x, y = blobs(16)

    def build(m):
        prog = static.Program()
        with static.program_guard(prog):
            xv = static.data("x", [16, 2])
            yv = static.data("y", [16], "int64")
            logits = m(xv)
            loss = d2s.nn.functional.cross_entropy(logits, yv)
            grads = static.gradients([loss], m.parameters())
        return prog, [logits, loss] + grads

    prog, fetch = build(model)
    got = static.Executor(backend="xla").run(prog, {"x": x, "y": y}, fetch)
    ref_prog, ref_fetch = build(ref)
    want = static.Executor().run(ref_prog, {"x": x, "y": y}, ref_fetch)
    for g, w, what in zip(got, want, ["logits", "loss", "fc1.w", "fc1.b", "fc2.w", "fc2.b"]):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-7, err_msg=what)
    fwd_prog, out = forward_program(model)
    hlo = compiled_hlo(fwd_prog, {"x": x}, [out])
    # column- then row-parallel: the partial sums of fc2 are reduced once
    assert _collectives(hlo) == {"all-reduce"}
    assert len(re.findall(r"\ball-reduce(?:-start)?\(", hlo)) == 1


def test_two_d_mesh_data_and_tensor_parallel_training():
    mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], ["dp", "mp"])
    want = train(make_mlp(), "sgd", steps=5)
    model = dist.shard_layer(make_mlp(), mesh, megatron(mesh, "mp"))
    got = train(model, "sgd", steps=5, backend="xla", x_place=(mesh, [S(0), R()]))
    np.testing.assert_allclose(got, want, rtol=RTOL)
    assert model.fc1.weight.placements == [R(), S(1)]
    x, _ = blobs(16)
    prog, out = forward_program(model)
    xs = dist.shard_tensor(x, mesh, [S(0), R()])
    out_t = static.Executor(backend="xla").run(prog, {"x": xs}, [out], return_numpy=False)[0]
    assert out_t.placements[0] == S(0)  # rows stay split over dp
    assert "all-reduce" in _collectives(compiled_hlo(prog, {"x": xs}, [out]))


# ---- reshard inside a program ----------------------------------------------------------
def test_reshard_in_a_program_is_a_constraint_that_gathers():
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    x = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    prog = static.Program()
    with static.program_guard(prog):
        xv = static.data("x", [16, 4])
        h = d2s.tanh(xv) * 2.0
        whole = dist.reshard(h, mesh, [R()])
        out = whole.sum(axis=0)
    assert [op.type for op in prog.global_block().ops].count("reshard") == 1
    assert whole.placements == [R()]
    feed = {"x": dist.shard_tensor(x, mesh, [S(0)])}
    got = static.Executor(backend="xla").run(prog, feed, [whole, out], return_numpy=False)
    np.testing.assert_allclose(got[0].numpy(), np.tanh(x) * 2.0, rtol=RTOL)
    np.testing.assert_allclose(got[1].numpy(), (np.tanh(x) * 2.0).sum(0), rtol=RTOL)
    assert got[0].placements == [R()]
    assert _collectives(compiled_hlo(prog, feed, [whole])) == {"all-gather"}  # rows gathered


# ---- converted code with data-dependent control flow -----------------------------------
class _to_static_off:
    def __enter__(self):
        d2s.jit.enable_to_static(False)

    def __exit__(self, *exc):
        d2s.jit.enable_to_static(True)


@d2s.jit.to_static
def halving_then_branch(x, w):
    h = x @ w
    s = h.abs().sum()
    while s > 4.0:                 # trip count depends on the data
        h = h * 0.5
        s = h.abs().sum()
    if h.mean() > 0.0:             # so does the branch
        out = d2s.tanh(h) * 3.0
    else:
        out = h * h
    return (out * out).sum()


@pytest.mark.parametrize("scale", [1.0, -1.0])  # scale picks the branch
def test_converted_while_and_cond_on_sharded_inputs(scale):
    mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], ["dp", "mp"])
    rng = np.random.default_rng(3)
    x = (rng.uniform(0.5, 1.5, (8, 4)) * scale).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (4, 8)).astype(np.float32)
    prog = static.Program()
    with static.program_guard(prog):
        xv = static.data("x", [8, 4])
        wv = static.data("w", [4, 8])
        xv.stop_gradient = wv.stop_gradient = False
        loss = halving_then_branch(xv, wv)
        gx, gw = static.gradients([loss], [xv, wv])
    types = [op.type for op in prog.global_block().ops]
    assert "while" in types and "cond" in types  # really built, not unrolled
    want = static.Executor().run(prog, {"x": x, "w": w}, [loss, gx, gw])
    feed = {"x": dist.shard_tensor(x, mesh, [S(0), R()]),
            "w": dist.shard_tensor(w, mesh, [R(), S(1)])}
    got = static.Executor(backend="xla").run(prog, feed, [loss, gx, gw])
    for g, wv_, what in zip(got, want, ["loss", "dx", "dw"]):
        np.testing.assert_allclose(g, wv_, rtol=RTOL, atol=1e-6, err_msg=what)
    # called on the sharded eager Tensors (numpy backend): placements are metadata
    eager = halving_then_branch(feed["x"], feed["w"])
    np.testing.assert_array_equal(eager.numpy(), want[0])
    with _to_static_off():  # the original Python, eagerly
        np.testing.assert_allclose(halving_then_branch(feed["x"], feed["w"]).numpy(), want[0],
                                   rtol=RTOL)


# ---- to_static(backend="xla") ------------------------------------------------------------
@pytest.mark.parametrize("scale", [1.0, -1.0])
def test_to_static_on_xla_with_sharded_inputs_values_gradients_placements(scale):
    mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], ["dp", "mp"])
    rng = np.random.default_rng(4)
    x = (rng.uniform(0.5, 1.5, (8, 4)) * scale).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (4, 8)).astype(np.float32)

    def grads_of(fn, xs, ws):
        xt, wt = (dist.shard_tensor(a, mesh, p, stop_gradient=False)
                  for a, p in ((xs, [S(0), R()]), (ws, [R(), S(1)])))
        loss = fn(xt, wt)
        loss.backward()
        return loss, xt.grad.numpy(), wt.grad.numpy()

    on_xla = d2s.jit.to_static(halving_then_branch.dygraph_function, backend="xla")
    loss, gx, gw = grads_of(on_xla, x, w)
    with _to_static_off():  # the eager reference
        want = grads_of(halving_then_branch.dygraph_function, x, w)
    np.testing.assert_allclose(loss.numpy(), want[0].numpy(), rtol=RTOL)
    np.testing.assert_allclose(gx, want[1], rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(gw, want[2], rtol=RTOL, atol=1e-6)
    assert loss.placements == [R(), R()]  # a scalar: whole on every device
    cp = on_xla.get_concrete_program(d2s.to_tensor(x), d2s.to_tensor(w))
    types = [op.type for op in cp.main_program.global_block().ops]
    assert "while" in types and "cond" in types
    # without gradients (the forward-only executable), placements reported too
    with d2s.no_grad():
        out = on_xla(dist.shard_tensor(x, mesh, [S(0), R()]), dist.shard_tensor(w, mesh, [R(), S(1)]))
    np.testing.assert_allclose(out.numpy(), want[0].numpy(), rtol=RTOL)
    assert out.placements == [R(), R()]


def test_to_static_output_reports_a_batch_sharded_result():
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    model = dist.shard_layer(make_mlp(), mesh)
    fwd = d2s.jit.to_static(model.forward, backend="xla")
    x, _ = blobs(16)
    with d2s.no_grad():
        got = fwd(dist.shard_tensor(x, mesh, [S(0)]))
        want = make_mlp()(d2s.to_tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=1e-7)
    assert got.placements == [S(0)]


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_data_parallel_with_converted_forward_and_eager_step(opt):
    """to_static(backend="xla") forward on a dp-sharded batch, eager backward
    (its gradient program runs sharded on XLA) and eager optimizer."""
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    x, y = blobs(16)

    def run(model, convert):
        params = model.parameters()
        o = d2s.optimizer.SGD(learning_rate=0.1, parameters=params) if opt == "sgd" else \
            d2s.optimizer.Adam(learning_rate=0.01, parameters=params)
        fwd = d2s.jit.to_static(model.forward, backend="xla") if convert else model
        xt = dist.shard_tensor(x, mesh, [S(0)]) if convert else d2s.to_tensor(x)
        losses = []
        for _ in range(5):
            logits = fwd(xt)
            loss = d2s.nn.functional.cross_entropy(logits, d2s.to_tensor(y))
            loss.backward()
            o.step()
            o.clear_grad()
            losses.append(loss.item())
        return np.array(losses), logits

    want, _ = run(make_mlp(), convert=False)
    got, logits = run(dist.shard_layer(make_mlp(), mesh), convert=True)
    np.testing.assert_allclose(got, want, rtol=RTOL)
    assert logits.placements == [S(0)]  # the forward ran split over dp


def test_data_parallel_whole_training_step_converted_on_xla():
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    x, y = blobs(16)

    def run(model, backend, place):
        o = d2s.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())

        @d2s.jit.to_static(backend=backend)
        def step(xb, yb):
            loss = d2s.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            o.step()
            o.clear_grad()
            return loss

        xt, yt = (dist.shard_tensor(a, mesh, [S(0)]) if place else d2s.to_tensor(a)
                  for a in (x, y))
        return np.array([step(xt, yt).item() for _ in range(5)]), model

    want, ref = run(make_mlp(), "numpy", place=False)
    from d2s.backends.xla import program as xla_program
    laid_out, put = [], xla_program.put

    def recording_put(array, sharding):  # which feeds went in split
        laid_out.append(str(sharding.spec))
        return put(array, sharding)
    xla_program.put = recording_put
    try:
        got, model = run(dist.shard_layer(make_mlp(), mesh), "xla", place=True)
    finally:
        xla_program.put = put
    assert "P('dp', None)" in laid_out  # the batch went in split over dp
    np.testing.assert_allclose(got, want, rtol=RTOL)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=RTOL, atol=1e-6)
        assert p.placements == [R()]


# ---- bad input ---------------------------------------------------------------------------
def test_mesh_larger_than_the_devices_names_both_numbers():
    mesh = dist.ProcessMesh(list(range(16)), ["dp"])
    prog, out = forward_program(make_mlp())
    x, _ = blobs(16)
    with pytest.raises(ValueError, match=r"needs 16 devices .* JAX sees 8 device"):
        static.Executor(backend="xla").run(prog, {"x": dist.shard_tensor(x, mesh, [S(0)])},
                                           [out])


def test_inputs_on_two_meshes_are_a_clear_error():
    a = dist.ProcessMesh([0, 1, 2, 3], ["dp"])
    b = dist.ProcessMesh([4, 5, 6, 7], ["dp"])
    model = dist.shard_layer(make_mlp(), b)
    prog, out = forward_program(model)
    x, _ = blobs(16)
    with pytest.raises(ValueError, match="share one ProcessMesh"):
        static.Executor(backend="xla").run(prog, {"x": dist.shard_tensor(x, a, [S(0)])}, [out])


def test_uneven_reshard_in_a_program_names_the_dim_and_line():
    mesh = dist.ProcessMesh(list(range(8)), ["dp"])
    prog = static.Program()
    with static.program_guard(prog):
        xv = static.data("x", [None, 4])  # the size is known only when fed
        out = dist.reshard(xv * 1.0, mesh, [S(0)])
    with pytest.raises(ValueError, match=r"dim 0 \(size 12.*into 8 shards"):
        static.Executor(backend="xla").run(prog, {"x": np.ones((12, 4), np.float32)}, [out])
