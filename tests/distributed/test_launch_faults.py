"""The launcher names faults (issue 24 item 4): the rank that failed first,
with its exit code or signal, is named in the summary and decides the
launcher's exit code, even when another rank fails right after it; a
`--timeout` that is not a positive finite number is refused."""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from d2s.distributed import launch
from dist_helpers import heavy

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAUNCH = [sys.executable, "-m", "d2s.distributed.launch"]


def _mpi_available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return shutil.which("mpiexec") is not None


def _run(args, tmp_path, script):
    path = tmp_path / "rank.py"
    path.write_text(textwrap.dedent(script))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("D2S_RANK", "D2S_WORLD", "PMI_", "OMPI_", "XLA_FLAGS"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([*LAUNCH, "--nproc_per_node", "2", "--timeout", "60", *args,
                           str(path), str(tmp_path)],
                          capture_output=True, text=True, timeout=90, cwd=str(ROOT), env=env)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1"])
def test_timeout_must_be_a_positive_finite_number(value, tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("")
    with pytest.raises(SystemExit) as e:
        launch.parse_args(["--nproc_per_node", "1", f"--timeout={value}", str(script)])
    assert e.value.code == 2
    assert "--timeout must be a positive number of seconds" in capsys.readouterr().err
    assert launch.parse_args(["--nproc_per_node", "1", "--timeout", "2.5",
                              str(script)]).timeout == 2.5


@heavy
@pytest.mark.parametrize("mpi", ["off", pytest.param("on", marks=pytest.mark.skipif(
    not _mpi_available(), reason='needs pip install "d2s[dist]"'))])
def test_the_first_failing_rank_is_named_and_gives_its_exit_code(tmp_path, mpi):
    # Rank 1 exits with 3 but takes a while to end (an atexit hook); rank 0,
    # seeing it fail, dies at once with another code, without a report (as a
    # rank whose collective broke may): rank 1 is still the one named.
    proc = _run(["--mpi", mpi], tmp_path, """
        import atexit, os, sys, time
        import d2s.distributed as dist
        flag = os.path.join(sys.argv[1], "failed")
        if dist.get_rank() == 1:
            atexit.register(time.sleep, 1.5)
            open(flag, "w").close()
            sys.exit(3)
        while not os.path.exists(flag):
            time.sleep(0.01)
        time.sleep(0.3)
        os._exit(5)
    """)
    assert proc.returncode == 3, proc.stderr
    assert "rank 1 failed first (exit code 3)" in proc.stderr
    assert "---- rank 1 failed (first):\nSystemExit: 3" in proc.stderr


@heavy
def test_a_rank_ended_by_a_signal_is_named_with_the_signal(tmp_path):
    proc = _run(["--mpi", "off"], tmp_path, """
        import os, signal, time
        import d2s.distributed as dist
        if dist.get_rank() == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
    """)
    assert proc.returncode == 128 + signal.SIGKILL, proc.stderr
    assert "rank 0 failed first (killed by signal SIGKILL)" in proc.stderr


@heavy
def test_rank_output_is_whole_lines_without_runtime_banners(tmp_path):
    """Two ranks printing many lines at once never interleave inside a line;
    a runtime's start-up banner is held back, and shown when the run fails."""
    script = """
        import os, sys
        rank = int(os.environ["D2S_RANK"])
        print(f"[Gloo] Rank {rank} is connected to 1 peer ranks. Expected number of "
              "connected peer ranks is : 1")
        for i in range(200):
            print(f"rank {rank} line {i} " + "x" * 200)
        if len(sys.argv) > 2 and sys.argv[2] == "fail" and rank == 1:
            raise SystemExit(3)
    """
    proc = _run(["--mpi", "off"], tmp_path, script)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 400 and all(
        line.startswith("rank ") and line.endswith("x" * 200) for line in lines)
    assert "Gloo" not in proc.stdout + proc.stderr
    path = tmp_path / "rank.py"
    failed = subprocess.run([*LAUNCH, "--nproc_per_node", "2", "--mpi", "off", str(path),
                             str(tmp_path), "fail"], capture_output=True, text=True,
                            timeout=90, cwd=str(ROOT),
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert failed.returncode == 3
    assert "[Gloo] Rank 1 is connected" in failed.stderr
