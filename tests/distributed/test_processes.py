"""Several processes: the launcher, data-parallel over MPI, JAX's
multi-process mesh; every run bounded in time, nothing left running.

Heavy: `D2S_DIST_TESTS=1 python -m pytest tests/distributed` (see conftest).
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from dist_helpers import heavy

pytestmark = heavy

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "parallel_train.py")
LAUNCH = [sys.executable, "-m", "d2s.distributed.launch"]


def _mpi_available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return shutil.which("mpiexec") is not None


needs_mpi = pytest.mark.skipif(not _mpi_available(), reason='needs pip install "d2s[dist]"')


def run(cmd, timeout=240, **env):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("D2S_RANK", "D2S_WORLD", "PMI_", "OMPI_", "XLA_FLAGS"))}
    clean.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT),
                          env=clean)


def losses(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = [float(v) for v in re.findall(r"^step \d+ loss (\S+)$", proc.stdout, re.M)]
    assert found, proc.stdout
    return np.array(found)


# ---- data-parallel on numpy over MPI -----------------------------------------------------
@needs_mpi
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_numpy_data_parallel_two_processes_equal_one_on_the_whole_batch(opt):
    args = [EXAMPLE, "--mode", "numpy", "--steps", "8", "--opt", opt]
    one = losses(run([sys.executable, *args]))
    two = losses(run(["mpiexec", "-n", "2", sys.executable, *args]))
    np.testing.assert_allclose(two, one, rtol=1e-6)
    assert one[-1] < one[0] * 0.8  # it trained
    launched = losses(run([*LAUNCH, "--nproc_per_node", "2", "--timeout", "120", *args]))
    np.testing.assert_allclose(launched, one, rtol=1e-6)


@needs_mpi
def test_data_parallel_averages_in_buckets_and_checks_the_models(tmp_path):
    script = tmp_path / "buckets.py"
    script.write_text(textwrap.dedent("""
        import numpy as np, d2s, d2s.distributed as dist
        from d2s import nn
        rank, world = dist.get_rank(), dist.init_parallel_env(backend="numpy")
        d2s.seed(0)
        layers = [nn.Linear(64, 64) for _ in range(3)]
        if rank == 1 and "mismatch" in __import__("sys").argv:
            layers.append(nn.Linear(64, 64))
        model = d2s.DataParallel(nn.Sequential(*layers), comm_buffer_size=0.02)
        x = d2s.to_tensor(np.full((2, 64), rank + 1.0, np.float32))
        model(x).sum().backward()
        g = model._layers[0].weight.grad.numpy()
        # one write per rank (atomic on the shared pipe): print's pieces interleave
        __import__("sys").stdout.write(f"syncs {model.syncs} grad {float(g.sum())!r}\\n")
    """))
    proc = run([*LAUNCH, "--nproc_per_node", "2", "--timeout", "60", str(script)])
    assert proc.returncode == 0, proc.stderr
    # the gradient is the mean of the ranks' gradients (inputs 1 and 2): that of 1.5
    import d2s
    from d2s import nn
    d2s.seed(0)
    ref = nn.Sequential(*[nn.Linear(64, 64) for _ in range(3)])
    ref(d2s.to_tensor(np.full((2, 64), 1.5, np.float32))).sum().backward()
    got = [float(v) for v in re.findall(r"grad (\S+)", proc.stdout)]
    assert len(got) == 2 and got[0] == got[1]
    np.testing.assert_allclose(got[0], ref[0].weight.grad.numpy().sum(), rtol=1e-5)
    assert proc.stdout.count("syncs 1") == 2
    bad = run([*LAUNCH, "--nproc_per_node", "2", "--timeout", "60", str(script), "mismatch"],
              D2S_COLLECTIVE_TIMEOUT="5")
    assert bad.returncode != 0
    assert "every process must build the same model" in bad.stderr or \
        "did not complete within 5 s" in bad.stderr, bad.stderr


# ---- xla: one mesh across processes ---------------------------------------------------------
def test_xla_two_processes_of_two_devices_equal_one_process_of_four():
    pytest.importorskip("jax")
    args = [EXAMPLE, "--mode", "xla", "--steps", "6"]
    one = losses(run([sys.executable, *args, "--devices", "4"]))
    two = run([*LAUNCH, "--nproc_per_node", "2", "--devices_per_proc", "2", "--mpi", "off",
               "--timeout", "200", *args], timeout=260)
    assert "2 process(es), 4 devices" in two.stdout, two.stdout + two.stderr
    np.testing.assert_allclose(losses(two), one, rtol=1e-5)
    assert one[-1] < one[0] * 0.8


# ---- failures: bounded, reported, cleaned up -------------------------------------------------
CRASH = """
import os, sys, time
import d2s.distributed as dist
rank = dist.get_rank()
with open(os.path.join(sys.argv[1], f"pid{rank}"), "w") as f:
    f.write(str(os.getpid()))
if rank == 1:
    time.sleep(0.5)
    raise ValueError("rank one broke")
time.sleep(120)
"""


def _gone(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" in f.read()  # a zombie has ended
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("mpi", ["off", pytest.param("on", marks=needs_mpi)])
def test_a_failing_rank_stops_the_others_and_its_error_is_reported(tmp_path, mpi):
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    t0 = time.monotonic()
    proc = run([*LAUNCH, "--nproc_per_node", "2", "--mpi", mpi, "--timeout", "100",
                str(script), str(tmp_path)], timeout=120)
    assert time.monotonic() - t0 < 60
    assert proc.returncode != 0
    assert "---- rank 1 failed" in proc.stderr and "ValueError: rank one broke" in proc.stderr
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in range(2)]
    deadline = time.monotonic() + 10
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(p) for p in pids), "a rank outlived the launcher"


@needs_mpi
def test_mismatched_collectives_time_out_with_a_clear_error(tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text(textwrap.dedent("""
        import time, numpy as np, d2s, d2s.distributed as dist
        dist.init_parallel_env(backend="numpy")
        t = d2s.to_tensor(np.ones(3))
        if dist.get_rank() == 0:
            dist.all_reduce(t)      # rank 1 runs another program: no collective
        else:
            time.sleep(60)
    """))
    t0 = time.monotonic()
    proc = run([*LAUNCH, "--nproc_per_node", "2", "--timeout", "100", str(script)],
               timeout=120, D2S_COLLECTIVE_TIMEOUT="2")
    assert time.monotonic() - t0 < 40
    assert proc.returncode != 0
    assert "rank 0: all_reduce did not complete within 2 s" in proc.stderr
    assert "mismatched collectives" in proc.stderr


def test_the_launcher_stops_a_run_past_its_timeout(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(120)\n")
    t0 = time.monotonic()
    proc = run([*LAUNCH, "--nproc_per_node", "2", "--mpi", "off", "--timeout", "2",
                str(script)], timeout=60)
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 124
    assert "timed out after 2 s" in proc.stderr


DIFFERENT_XLA = """
import sys, numpy as np, d2s, d2s.distributed as dist
from d2s import static
dist.init_parallel_env(backend="xla")
mesh = dist.ProcessMesh(list(range(4)), ["dp"])
rank = dist.get_rank()
if rank == 1 and sys.argv[1] == "absent":  # joins the mesh, then runs no program
    import jax, time
    jax.devices()
    time.sleep(60)
prog = static.Program()
with static.program_guard(prog):
    x = static.data("x", [8, 4])
    out = (x * x).sum() if rank == 0 or sys.argv[1] != "different" else (x + 1.0).sum()
x = dist.shard_tensor(np.ones((8, 4), np.float32), mesh, [dist.Shard(0)])
print("result", static.Executor(backend="xla").run(prog, {"x": x}, [out])[0])
"""


@pytest.mark.parametrize("case,message", [
    ("different", "sharded program #0 differs from process"),
    ("absent", "did not compile its sharded program #0 within 3 s"),
])
def test_xla_processes_running_different_programs_get_a_clear_error(tmp_path, case, message):
    pytest.importorskip("jax")
    script = tmp_path / "different.py"
    script.write_text(DIFFERENT_XLA)
    t0 = time.monotonic()
    proc = run([*LAUNCH, "--nproc_per_node", "2", "--devices_per_proc", "2", "--mpi", "off",
                "--timeout", "100", str(script), case], timeout=120, D2S_COLLECTIVE_TIMEOUT="3")
    assert time.monotonic() - t0 < 60
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr[-3000:]


def test_xla_processes_running_the_same_program_agree(tmp_path):
    pytest.importorskip("jax")
    script = tmp_path / "same.py"
    script.write_text(DIFFERENT_XLA)
    proc = run([*LAUNCH, "--nproc_per_node", "2", "--devices_per_proc", "2", "--mpi", "off",
                "--timeout", "100", str(script), "same"], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("32.0") == 2  # both ranks (their lines may interleave)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_ranks_die_with_a_killed_launcher(tmp_path):
    script = tmp_path / "sleepy.py"
    script.write_text("import os, sys, time\nimport d2s.distributed as dist\n"
                      "path = os.path.join(sys.argv[1], f'pid{dist.get_rank()}')\n"
                      "open(path + '.tmp', 'w').write(str(os.getpid()))\n"
                      "os.replace(path + '.tmp', path)\ntime.sleep(120)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("D2S_RANK", "D2S_WORLD"))}
    env["PYTHONPATH"] = str(ROOT)
    launcher = subprocess.Popen([*LAUNCH, "--nproc_per_node", "2", "--mpi", "off",
                                 "--timeout", "100", str(script), str(tmp_path)], env=env)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("pid?"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = [int(p.read_text()) for p in sorted(tmp_path.glob("pid?"))]
        assert len(pids) == 2
    finally:
        launcher.kill()  # SIGKILL: no chance to clean up
        launcher.wait()
    deadline = time.monotonic() + 10
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(p) for p in pids), "a rank outlived its killed launcher"
