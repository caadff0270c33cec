"""`d2s.distributed.spawn` (PaddlePaddle's `paddle.distributed.spawn`):
ranks started from Python, each running func(*args) with the launcher's
environment; an eager all_reduce over two ranks sums their values; a rank
that raises makes join raise with its traceback; bad arguments are named."""
import os
import shutil
import sys
import textwrap

import numpy as np
import pytest

import d2s.distributed as dist
from dist_helpers import heavy


def _mpi_available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return shutil.which("mpiexec") is not None


def _rank_all_reduce(out_dir, scale):
    """One rank: all_reduce (sum) of [rank + 1, 10 * (rank + 1)] * scale, written
    with the rank and world size the rank saw."""
    import d2s
    import d2s.distributed as dist
    rank, world = dist.get_rank(), dist.get_world_size()
    x = d2s.to_tensor(np.array([rank + 1.0, 10.0 * (rank + 1)]) * scale)
    dist.all_reduce(x)
    np.save(os.path.join(out_dir, f"rank{rank}.npy"),
            np.concatenate([[rank, world], x.numpy()]))


def _rank_fails(out_dir):
    import d2s.distributed as dist
    if dist.get_rank() == 1:
        raise ValueError("rank one gives up")
    open(os.path.join(out_dir, "rank0.done"), "w").close()


@heavy
@pytest.mark.skipif(not _mpi_available(), reason="eager collectives need mpi4py and mpiexec")
def test_two_ranks_all_reduce(tmp_path):
    ctx = dist.spawn(_rank_all_reduce, args=(str(tmp_path), 2.0), nprocs=2, timeout=120)
    assert ctx.join() is True
    got = sorted((np.load(tmp_path / f"rank{r}.npy") for r in range(2)), key=lambda a: a[0])
    want = np.array([1 + 2, 10 + 20]) * 2.0                      # the sum over the ranks
    for r, row in enumerate(got):
        assert row[0] == r and row[1] == 2
        np.testing.assert_array_equal(row[2:], want)


@heavy
def test_a_failing_rank_raises_with_its_traceback(tmp_path):
    with pytest.raises(RuntimeError, match=r"(?s)rank 1 failed first.*rank one gives up"):
        dist.spawn(_rank_fails, args=(str(tmp_path),), nprocs=2, mpi="off", timeout=120)


@heavy
def test_func_from_the_main_script_and_join_later(tmp_path):
    """A script defining func under its `__main__` guard, as with
    multiprocessing; join=False returns at once and join() waits."""
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        import d2s.distributed as dist

        def work(out):
            open(os.path.join(out, f"r{{dist.get_rank()}}of{{dist.get_world_size()}}"), "w").close()

        if __name__ == "__main__":
            ctx = dist.spawn(work, args=({str(tmp_path)!r},), nprocs=3, join=False, mpi="off")
            assert ctx.join(timeout=120) is True
            print("joined")
    """))
    import subprocess
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("D2S_RANK", "D2S_WORLD", "PMI_", "OMPI_"))}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=150, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "joined" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("r")) == \
        ["r0of3", "r1of3", "r2of3"]


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(func=42), TypeError, "func must be callable"),
    (dict(args=3), TypeError, "args must be a tuple"),
    (dict(nprocs=0), ValueError, "nprocs must be"),
    (dict(nprocs=True), ValueError, "nprocs must be"),
    (dict(cores=2), TypeError, r"unknown options \['cores'\]"),
    (dict(mpi="maybe"), ValueError, "mpi must be"),
    (dict(func=lambda: None), ValueError, "picklable"),
])
def test_bad_arguments_are_named(kwargs, error, match):
    call = dict(func=_rank_fails, args=("x",), nprocs=2)
    call.update(kwargs)
    with pytest.raises(error, match=match):
        dist.spawn(call.pop("func"), **call)
