"""Paddle's collectives on the numpy backend: `all_reduce` with `ReduceOp`,
`all_gather`, `broadcast`. Alone (world size 1) always; two MPI ranks
through the launcher in the heavy run (`D2S_DIST_TESTS=1`)."""
import textwrap

import numpy as np
import pytest

import d2s
import d2s.distributed as dist
from dist_helpers import heavy


def test_alone_the_collectives_see_one_rank():
    t = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
    assert dist.all_reduce(t, op=dist.ReduceOp.MAX) is t
    gathered = ["stale"]
    assert dist.all_gather(gathered, t) is gathered
    assert len(gathered) == 1 and gathered[0] is not t
    np.testing.assert_array_equal(gathered[0].numpy(), [1.0, -2.0])
    assert dist.broadcast(t, src=0) is t
    np.testing.assert_array_equal(t.numpy(), [1.0, -2.0])


def test_bad_arguments_are_clear_errors():
    t = d2s.to_tensor(np.ones(2, "float32"))
    with pytest.raises(ValueError, match=r"all_reduce: op must be a ReduceOp"):
        dist.all_reduce(t, op="mean")
    with pytest.raises(ValueError, match=r"broadcast: src must be a rank in \[0, 1\), got 1"):
        dist.broadcast(t, src=1)
    with pytest.raises(TypeError, match=r"all_gather: tensor_list must be a list"):
        dist.all_gather((), t)
    with pytest.raises(NotImplementedError, match=r"sub-groups are not built"):
        dist.all_reduce(t, group="mp")


@heavy
def test_two_ranks_reduce_gather_and_broadcast(tmp_path):
    from test_processes import LAUNCH, needs_mpi, run  # the launcher's helpers
    if needs_mpi.args[0]:
        pytest.skip(needs_mpi.kwargs["reason"])
    script = tmp_path / "collectives.py"
    script.write_text(textwrap.dedent("""
        import sys
        import numpy as np, d2s, d2s.distributed as dist

        def print(*parts):  # one write per line: the two ranks share the pipe
            sys.stdout.write(" ".join(map(str, parts)) + "\\n")
            sys.stdout.flush()

        dist.init_parallel_env(backend="numpy")
        rank = dist.get_rank()
        t = d2s.to_tensor(np.array([rank + 1.0, 10.0 * (rank + 1)], "float32"))
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        print("max", t.numpy().tolist())
        parts = []
        dist.all_gather(parts, d2s.to_tensor(np.array([rank, rank * 2], "int64")))
        print("gather", [p.numpy().tolist() for p in parts])
        b = d2s.to_tensor(np.array([float(rank)] * 3, "float32"))
        dist.broadcast(b, src=1)
        print("bcast", b.numpy().tolist())
        try:
            dist.all_gather([], d2s.to_tensor(np.zeros(rank + 1, "float32")))
        except ValueError as e:
            print("mismatch", "differ in shape" in str(e))
    """))
    proc = run([*LAUNCH, "--nproc_per_node", "2", str(script)], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines.count("max [2.0, 20.0]") == 2
    assert lines.count("gather [[0, 0], [1, 2]]") == 2
    assert lines.count("bcast [1.0, 1.0, 1.0]") == 2
    assert lines.count("mismatch True") == 2
