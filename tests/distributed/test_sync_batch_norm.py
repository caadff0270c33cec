"""SyncBatchNorm across processes: two MPI ranks holding uneven parts of a
batch (5 and 3 rows) normalize with the whole batch's statistics. Each
rank checks its outputs, input gradients and running statistics, and the
all-reduced parameter gradients, against one BatchNorm over the whole
batch, eagerly and converted (numpy backend). Alone, SyncBatchNorm is
BatchNorm (no collective in its program)."""
import textwrap

import numpy as np
import pytest

import d2s
from dist_helpers import heavy


def test_alone_it_is_batch_norm_without_a_collective():
    d2s.seed(1)
    x = d2s.to_tensor(np.random.default_rng(0).standard_normal((6, 3, 2, 2)).astype("float32"))
    sbn, bn = d2s.nn.SyncBatchNorm(3), d2s.nn.BatchNorm2D(3)
    np.testing.assert_array_equal(sbn(x).numpy(), bn(x).numpy())
    d2s.jit.to_static(sbn)
    sbn(x)
    ops = [op.type for op in sbn.forward.concrete_program.main_program.global_block().ops]
    assert "batch_normalize" in ops and "c_allreduce_sum" not in ops


def test_the_collective_op_alone_and_without_a_process_group(monkeypatch):
    from d2s.core.ops import collective_ops
    x = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
    np.testing.assert_array_equal(collective_ops.c_allreduce_sum(x).numpy(), [1.0, -2.0])
    monkeypatch.setenv("D2S_WORLD_SIZE", "2")
    monkeypatch.setattr(collective_ops, "_process_sum", None)
    with pytest.raises(RuntimeError, match="init_parallel_env"):
        collective_ops.c_allreduce_sum(x)


@heavy
def test_two_ranks_normalize_with_the_whole_batch(tmp_path):
    from test_processes import LAUNCH, needs_mpi, run  # the launcher's helpers
    if needs_mpi.args[0]:
        pytest.skip(needs_mpi.kwargs["reason"])
    script = tmp_path / "sync_bn.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np, d2s, d2s.distributed as dist

        def say(*parts):  # one write per line: the two ranks share the pipe
            sys.stdout.write(" ".join(map(str, parts)) + "\\n")
            sys.stdout.flush()

        dist.init_parallel_env(backend="numpy")
        rank = dist.get_rank()
        rng = np.random.default_rng(0)
        X = rng.standard_normal((8, 3, 4, 4)).astype("float32")
        W = rng.standard_normal((8, 3, 4, 4)).astype("float32")
        part = slice(0, 5) if rank == 0 else slice(5, 8)

        def run(layer, x, w, convert):
            xt = d2s.to_tensor(x, stop_gradient=False)
            fn = d2s.jit.to_static(layer) if convert else layer
            outs = []
            for _ in range(3):  # three training calls: the running statistics move
                y = fn(xt)
            loss = (y * d2s.to_tensor(w)).sum()
            loss.backward()
            return (y.numpy(), xt.grad.numpy(), layer.weight.grad.numpy(),
                    layer.bias.grad.numpy(), layer._mean.numpy(), layer._variance.numpy())

        for convert in (False, True):
            ref = run(d2s.nn.BatchNorm2D(3), X, W, convert)
            got = run(d2s.nn.SyncBatchNorm(3), X[part], W[part], convert)
            wg = d2s.to_tensor(got[2]); dist.all_reduce(wg)
            bg = d2s.to_tensor(got[3]); dist.all_reduce(bg)
            checks = [np.allclose(got[0], ref[0][part], atol=2e-5),
                      np.allclose(got[1], ref[1][part], atol=2e-5),
                      np.allclose(wg.numpy(), ref[2], atol=2e-5),
                      np.allclose(bg.numpy(), ref[3], atol=2e-5),
                      np.allclose(got[4], ref[4], atol=1e-6),
                      np.allclose(got[5], ref[5], atol=1e-6)]
            say("convert" if convert else "eager", checks)
    """))
    proc = run([*LAUNCH, "--nproc_per_node", "2", str(script)], timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    expected = str([True] * 6)
    assert lines.count(f"eager {expected}") == 2, proc.stdout
    assert lines.count(f"convert {expected}") == 2, proc.stdout
