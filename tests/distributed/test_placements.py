"""Placements as metadata: eager and numpy-backend runs give exactly the
unsharded numbers; the API's names, semantics and bad input (main run)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import d2s
import d2s.distributed as dist
from d2s import static
from d2s.core import autograd
from d2s.core.registry import OpDef
from dist_helpers import make_mlp

S, R, P = dist.Shard, dist.Replicate, dist.Partial
MESH = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])


# ---- ProcessMesh and placements -------------------------------------------------------
def test_process_mesh_api():
    assert MESH.shape == [2, 4] and MESH.ndim == 2 and MESH.size == 8
    assert MESH.dim_names == ["dp", "mp"]
    assert MESH.process_ids == list(range(8))
    assert MESH.get_dim_size("mp") == 4 and MESH.get_dim_size(0) == 2
    assert MESH == dist.ProcessMesh(np.arange(8).reshape(2, 4), ["dp", "mp"])
    assert MESH != dist.ProcessMesh(np.arange(8).reshape(2, 4), ["x", "y"])
    assert dist.ProcessMesh([3, 1]).dim_names == ["d0"]
    assert dist.ProcessMesh.decode(MESH.encode()) == MESH


@pytest.mark.parametrize("mesh,names,match", [
    ([0, 0, 1], None, "distinct"),
    ([0, -1], None, "distinct and non-negative"),
    ([[0, 1], [2, 3]], ["x"], "2 dim names"),
    ([0, 1], ["x"], None),  # a good one, for contrast
    ([[0, 1], [2, 3]], ["x", "x"], "dim names must be distinct"),
    ([], None, "non-empty"),
    ([0.5, 1], None, "integers"),
])
def test_bad_meshes_are_clear_errors(mesh, names, match):
    if match is None:
        dist.ProcessMesh(mesh, names)
        return
    with pytest.raises(ValueError, match=match):
        dist.ProcessMesh(mesh, names)


def test_placements_api():
    assert S(1).is_shard() and S(1).is_shard(1) and not S(1).is_shard(0)
    assert S(1).get_dim() == 1 and repr(S(1)) == "Shard(dim=1)"
    assert R().is_replicated() and not R().is_shard() and repr(R()) == "Replicate()"
    assert P().is_partial() and P().reduce_type == "sum" and P("max") != P()
    assert S(0) == S(0) and S(0) != S(1) and R() == R() and len({S(0), S(0), R()}) == 2
    with pytest.raises(ValueError, match="reduce_type"):
        P("mean")
    with pytest.raises(TypeError, match="must be an int"):
        S("0")


# ---- shard_tensor / reshard in eager mode ----------------------------------------------
def test_shard_tensor_is_metadata_on_the_same_numbers():
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    t = dist.shard_tensor(x, MESH, [S(0), R()])
    np.testing.assert_array_equal(t.numpy(), x)
    assert t.process_mesh == MESH and t.placements == [S(0), R()]
    assert t.stop_gradient
    y = d2s.tanh(t) * 2.0  # ops compute the unsharded result
    np.testing.assert_array_equal(y.numpy(), np.tanh(x) * 2.0)
    assert y.placements is None and y.process_mesh is None  # results are not annotated
    plain = d2s.to_tensor(x)
    assert plain.placements is None


def test_shard_tensor_of_a_tensor_shares_its_array_and_keeps_the_original_plain():
    base = d2s.to_tensor(np.ones((4, 4), np.float32))
    t = dist.shard_tensor(base, MESH, [R(), S(-1)])
    assert t is not base and t.numpy() is base.numpy()
    assert t.placements == [R(), S(1)]  # negative dims normalized
    assert base.placements is None


def test_shard_tensor_annotates_a_parameter_in_place():
    model = make_mlp()
    w = model.fc1.weight
    assert dist.shard_tensor(w, MESH, [R(), S(1)]) is w
    assert model.fc1.weight.placements == [R(), S(1)]


def test_reshard_eager_is_a_differentiable_identity():
    x = d2s.to_tensor(np.linspace(-1, 1, 8).reshape(4, 2), stop_gradient=False)
    h = dist.reshard(x * 3.0, MESH, [S(0), P()])
    assert h.placements == [S(0), P()]
    np.testing.assert_array_equal(h.numpy(), x.numpy() * 3.0)
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 18.0 * x.numpy())


@pytest.mark.parametrize("shape,placements,match", [
    ((5, 3), [S(0), R()], r"'x'.*dim 0 \(size 5.*into 2 shards"),
    ((8, 6), [S(0), S(1)], r"dim 1 \(size 6.*into 4 shards"),
    ((8, 12), [S(1), S(1)], r"dim 1 \(size 12.*into 8 shards"),
    ((8, 3), [S(2), R()], r"Shard\(2\).*'dp'.*2 dim"),
    ((8, 3), [S(0)], r"1 placements for a mesh of 2 dim"),
])
def test_placements_that_do_not_fit_name_the_tensor_and_dim(shape, placements, match):
    t = d2s.to_tensor(np.zeros(shape, np.float32))
    t.name = "x"
    with pytest.raises(ValueError, match=match):
        dist.shard_tensor(t, MESH, placements)
    with pytest.raises(ValueError, match=match.replace("'x'", "")):
        dist.reshard(t, MESH, placements)
    assert t.placements is None  # nothing half-done


def test_wrong_kinds_of_arguments():
    with pytest.raises(TypeError, match="ProcessMesh"):
        dist.shard_tensor(np.zeros(4), [0, 1], [S(0)])
    with pytest.raises(TypeError, match="placement #0"):
        dist.shard_tensor(np.zeros(4), dist.ProcessMesh([0, 1]), ["S0"])
    with pytest.raises(TypeError, match="reshard: expected a d2s Tensor"):
        dist.reshard(np.zeros(4), dist.ProcessMesh([0, 1]), [R()])


# ---- shard_layer ------------------------------------------------------------------------
def test_shard_layer_replicates_what_shard_fn_leaves():
    seen = []

    def shard_fn(name, layer, mesh):
        seen.append(name)
        if name == "fc2":
            layer.weight = dist.shard_tensor(layer.weight, mesh, [R(), S(0)])

    model = dist.shard_layer(make_mlp(), MESH, shard_fn)
    assert seen == ["", "fc1", "fc2"]
    placed = {n: p.placements for n, p in model.named_parameters()}
    assert placed == {"fc1.weight": [R(), R()], "fc1.bias": [R(), R()],
                      "fc2.weight": [R(), S(0)], "fc2.bias": [R(), R()]}


def test_shard_layer_refuses_a_parameter_on_another_mesh():
    other = dist.ProcessMesh([0, 1], ["x"])
    model = make_mlp()
    dist.shard_tensor(model.fc1.weight, other, [R()])
    with pytest.raises(ValueError, match="'fc1.weight' is placed on"):
        dist.shard_layer(model, MESH)


# ---- programs on the numpy backend ---------------------------------------------------------
def _program():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [8, 4])
        h = dist.reshard(d2s.tanh(x), MESH, [S(0), R()])
        out = (h * 2.0).sum(axis=1)
    return prog, h, out


def test_reshard_in_a_program_is_one_op_and_metadata_on_numpy():
    prog, h, out = _program()
    ops = [op.type for op in prog.global_block().ops]
    assert ops.count("reshard") == 1
    assert "reshard" in str(prog)
    assert h.placements == [S(0), R()]  # the Variable reports them too
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    fed = dist.shard_tensor(x, MESH, [S(0), R()])
    for feed in (x, fed):  # a sharded feed is metadata on numpy
        got = static.Executor().run(prog, {"x": feed}, [h, out], return_numpy=False)
        np.testing.assert_array_equal(got[0].numpy(), np.tanh(x))
        np.testing.assert_array_equal(got[1].numpy(), (np.tanh(x) * 2.0).sum(1))
        assert got[0].placements == [S(0), R()] and got[1].placements is None
    plain = static.Executor().run(prog, {"x": x}, [out])
    assert isinstance(plain[0], np.ndarray)


def test_a_converted_function_with_reshard_saves_and_loads(tmp_path):
    mesh = dist.ProcessMesh([0, 1], ["dp"])

    @d2s.jit.to_static(input_spec=[static.InputSpec([4, 3], "float32")])
    def f(x):
        return dist.reshard(x * x, mesh, [S(0)]) + 1.0

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    want = x * x + 1.0
    np.testing.assert_array_equal(f(d2s.to_tensor(x)).numpy(), want)
    d2s.jit.save(f, str(tmp_path / "f"))
    loaded = d2s.jit.load(str(tmp_path / "f"))
    np.testing.assert_array_equal(loaded(d2s.to_tensor(x)).numpy(), want)


# ---- ranks, DataParallel alone, import hygiene ------------------------------------------
def test_rank_and_world_size_from_the_environment(monkeypatch):
    for var in ("D2S_RANK", "D2S_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    assert dist.init_parallel_env() == 1  # alone: nothing to join
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("PMI_SIZE", "4")
    assert (dist.get_rank(), dist.get_world_size()) == (3, 4)
    monkeypatch.setenv("D2S_RANK", "1")  # the launcher's variables win
    assert dist.get_rank() == 1
    monkeypatch.setenv("D2S_WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="D2S_WORLD_SIZE='two'"):
        dist.get_world_size()


def test_data_parallel_alone_is_the_plain_layer():
    x = d2s.to_tensor(np.random.default_rng(0).standard_normal((8, 2)).astype(np.float32))
    plain, wrapped = make_mlp(), d2s.DataParallel(make_mlp())
    d2s.nn.functional.cross_entropy(plain(x), d2s.to_tensor(np.arange(8) % 3)).backward()
    d2s.nn.functional.cross_entropy(wrapped(x), d2s.to_tensor(np.arange(8) % 3)).backward()
    assert wrapped.syncs == 0
    assert list(wrapped.state_dict()) == list(plain.state_dict())
    for p, q in zip(plain.parameters(), wrapped.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    with pytest.raises(TypeError, match="expected a d2s.nn.Layer"):
        d2s.DataParallel(lambda x: x)


def test_data_parallel_refuses_to_be_traced_into_a_program_with_several_processes():
    wrapped = d2s.DataParallel(make_mlp())
    wrapped._world = 2  # as if started as one of two processes (no MPI needed here)
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [4, 2])
        with pytest.raises(RuntimeError, match="would not be averaged"):
            wrapped(x)


def test_queue_callback_runs_after_every_gradient_is_accumulated():
    w = d2s.to_tensor(np.ones(3), stop_gradient=False)
    seen = []

    def vjp(g, out, x):
        autograd.queue_callback(lambda: seen.append(None if w.grad is None else
                                                    w.grad.numpy().copy()))
        return (g,)
    mark = OpDef("probe", lambda x: x, None, vjp=vjp)
    y = d2s.Tensor._from_array((w * 2.0)._value, stop_gradient=False)
    autograd.record(mark, [w * 2.0], {}, [y], [y._value])
    (y.sum() + (w * 5.0).sum()).backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.full(3, 7.0))  # both paths were summed first
    with pytest.raises(RuntimeError, match="no backward pass"):
        autograd.queue_callback(lambda: None)


def test_import_d2s_imports_neither_jax_nor_mpi4py():
    code = ("import sys, d2s, d2s.distributed as dist\n"
            "dist.shard_tensor([1.0, 2.0], dist.ProcessMesh([0, 1]), [dist.Shard(0)])\n"
            "d2s.DataParallel(d2s.nn.Linear(2, 2))\n"
            "print(sorted(m for m in ('jax', 'mpi4py') if m in sys.modules))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("D2S_WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_launcher_refuses_bad_arguments(tmp_path):
    from d2s.distributed import launch
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    for argv, match in [(["--nproc_per_node", "0", str(script)], "must be >= 1"),
                        (["--nproc_per_node", "2", str(tmp_path / "none.py")], "no script"),
                        (["--nproc_per_node", "2", "--devices_per_proc", "0", str(script)],
                         "devices_per_proc")]:
        proc = subprocess.run([sys.executable, "-m", "d2s.distributed.launch", *argv],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and match in proc.stderr
    assert launch.free_port() > 0


def test_parallel_example_runs_alone_on_numpy():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items()
           if k not in ("D2S_WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")}
    proc = subprocess.run([sys.executable, os.path.join(root, "examples", "parallel_train.py"),
                           "--mode", "numpy", "--steps", "3"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "mode numpy: 1 process(es)" in proc.stdout
    assert len([ln for ln in proc.stdout.splitlines() if ln.startswith("step ")]) == 3


def test_only_the_distributed_package_imports_mpi4py():
    import ast
    import pathlib
    pkg = pathlib.Path(d2s.__file__).resolve().parent
    offenders = []
    for path in pkg.rglob("*.py"):
        if path.is_relative_to(pkg / "distributed"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(pkg)}:{node.lineno}" for n in names
                          if n.split(".")[0] == "mpi4py"]
    assert not offenders, offenders
