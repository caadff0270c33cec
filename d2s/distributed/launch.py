"""`python -m d2s.distributed.launch --nproc_per_node N script.py [args]`.

Starts N ranks of `script.py` on this host and watches them:

* Each rank learns who it is from its environment (`D2S_RANK`,
  `D2S_WORLD_SIZE`) and where the others meet: `D2S_COORDINATOR`
  (127.0.0.1 and a free port) for JAX's distributed runtime
  (`init_parallel_env()` on the xla backend), `D2S_DEVICES_PER_PROC` for
  its simulated CPU devices. When mpi4py and `mpiexec` are installed the
  ranks start under `mpiexec` (`--mpi auto`, the default), so that they
  also form one MPI world (`DataParallel`); `--mpi off` starts them
  directly.
* A rank that fails stops the run: the launcher ends every other rank
  (each rank's process group, so nothing is orphaned), names the rank that
  failed first with its exit code or the signal that ended it, prints the
  ranks' errors (that rank's first) and exits with that rank's exit code
  (128 + the signal's number for a signal). Which rank came first is read
  from when each rank wrote its failure (the worker's report), so a rank
  that failed only because another one had (a collective left waiting) is
  not the one blamed. A run past
  `--timeout` seconds is stopped the same way (exit code 124). Ending the
  launcher (Ctrl-C, SIGTERM) ends the ranks; on Linux so does its death by
  SIGKILL (each rank, or mpiexec, is told to die with its parent).
* The ranks' standard output reaches the launcher's line by line, whole
  lines only (two ranks never interleave inside a line), without the
  banners of the runtimes underneath (Gloo's "Rank 0 is connected to 1
  peer ranks" from JAX's collectives): those are kept and printed with the
  errors when a run fails.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import re
import tempfile
import threading
import time

TIMEOUT_EXIT = 124


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m d2s.distributed.launch",
        description="Start N ranks of a d2s script on this host, joined into one mesh "
                    "(xla backend) or one MPI world (DataParallel).")
    p.add_argument("--nproc_per_node", type=int, required=True, help="ranks to start")
    p.add_argument("--devices_per_proc", type=int, default=None,
                   help="simulated CPU devices per rank for JAX (default: JAX's own)")
    p.add_argument("--master_port", type=int, default=None,
                   help="coordinator port on 127.0.0.1 (default: a free one)")
    p.add_argument("--timeout", type=float, default=None,
                   help="stop every rank after this many seconds (exit code 124)")
    p.add_argument("--mpi", choices=("auto", "on", "off"), default="auto",
                   help="start the ranks under mpiexec (one MPI world); auto: when mpi4py "
                        "and mpiexec are installed")
    p.add_argument("script", help="the Python script every rank runs")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nproc_per_node < 1:
        p.error(f"--nproc_per_node must be >= 1, got {args.nproc_per_node}")
    if args.devices_per_proc is not None and args.devices_per_proc < 1:
        p.error(f"--devices_per_proc must be >= 1, got {args.devices_per_proc}")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        p.error(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if not os.path.isfile(args.script):
        p.error(f"no script at {args.script!r}")
    return args


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():  # pragma: no cover - runs in the child, between fork and exec
    """Linux: ask for SIGKILL when the launcher dies, however it dies."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _use_mpi(choice):
    if choice == "off":
        return None
    import importlib.util
    mpiexec = shutil.which("mpiexec")
    available = mpiexec is not None and importlib.util.find_spec("mpi4py") is not None
    if choice == "on" and not available:
        raise SystemExit('d2s.distributed.launch: --mpi on needs mpi4py and mpiexec: '
                         'pip install "d2s[dist]"')
    return mpiexec if available else None


class Ranks:
    """The processes of one launch, each in its own process group."""

    def __init__(self, args, workdir, extra_env=None):
        self.n = args.nproc_per_node
        self.workdir = workdir
        port = args.master_port or free_port()
        env = dict(os.environ, **(extra_env or {}), D2S_WORLD_SIZE=str(self.n),
                   D2S_COORDINATOR=f"127.0.0.1:{port}", D2S_LAUNCH_DIR=workdir)
        if args.devices_per_proc:
            env["D2S_DEVICES_PER_PROC"] = str(args.devices_per_proc)
        rank_cmd = [sys.executable, "-m", "d2s.distributed.worker", args.script,
                    *args.script_args]
        mpiexec = _use_mpi(args.mpi)
        self.under_mpi = bool(mpiexec)
        if mpiexec:  # one process manager for all ranks: one MPI world
            env.pop("D2S_RANK", None)
            self.procs = [_start([mpiexec, "-n", str(self.n), *rank_cmd], env)]
        else:
            self.procs = [_start(rank_cmd, dict(env, D2S_RANK=str(r))) for r in range(self.n)]
        self.failures = {}  # rank (None: mpiexec itself) -> (when, exit code or -signal)

    def poll(self):
        """(True once a rank failed, True when all ended well). Failures are
        recorded with their time: a rank's own report (written by the worker
        before it exits) counts from when it was written, a process that
        ended otherwise (a signal) from when it was seen."""
        codes = [p.poll() for p in self.procs]
        now = time.time()
        for name in os.listdir(self.workdir):
            if name.startswith("rank") and name.endswith(".code"):
                rank = int(name[4:-5])
                if rank not in self.failures:
                    path = os.path.join(self.workdir, name)
                    with open(path) as f:
                        self.failures[rank] = (os.stat(path).st_mtime, int(f.read()))
        for i, code in enumerate(codes):
            if code not in (None, 0):
                rank = None if self.under_mpi else i
                if rank not in self.failures:
                    self.failures[rank] = (now, code)
        if self.failures:
            return True, False
        return False, all(c == 0 for c in codes)

    def first_failure(self):
        """(rank or None, exit code or -signal) of the failure that came first:
        the ranks' own failures before mpiexec's, which only echoes one."""
        ranked = {r: f for r, f in self.failures.items() if r is not None}
        rank, (_, code) = min((ranked or self.failures).items(),
                              key=lambda item: (item[1][0], item[0] if item[0] is not None else -1))
        return rank, code

    def errors(self):
        """(rank, error text) of the ranks that reported a failure."""
        found = []
        for name in sorted(os.listdir(self.workdir)):
            if name.startswith("rank") and name.endswith(".err"):
                with open(os.path.join(self.workdir, name)) as f:
                    found.append((int(name[4:-4]), f.read()))
        return found

    def stop(self, grace=3.0):
        """End every rank (and whatever it started): SIGTERM, then SIGKILL."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in self.procs:
                if p.poll() is None or sig == signal.SIGKILL:
                    try:
                        os.killpg(p.pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
                time.sleep(0.05)
        for p in self.procs:
            p.wait()
        self.drain()

    def drain(self):
        """Wait (briefly) until every rank's output has been forwarded."""
        for p in self.procs:
            p.forwarder.join(timeout=5)


# Lines the runtimes under the ranks print on every successful start.
_BANNER = re.compile(rb"^\[Gloo\] Rank \d+ is connected to \d+ peer ranks")
_OUT_LOCK = threading.Lock()
_BANNERS = []  # the banner lines held back (shown when a run fails)


def _forward(stream):
    """Copy a rank's output to ours, whole lines in one write each, banners
    held back (see the module doc)."""
    out = sys.stdout.buffer
    for line in iter(stream.readline, b""):
        if _BANNER.match(line):
            _BANNERS.append(line)
            continue
        with _OUT_LOCK:
            out.write(line)
            out.flush()
    stream.close()


def _start(cmd, env):
    """A process in a new process group (stopping it stops what it starts),
    its output forwarded by a thread (`_forward`); Python ranks write it
    unbuffered, so lines arrive as they are printed."""
    linux = sys.platform.startswith("linux")
    proc = subprocess.Popen(cmd, env=dict(env, PYTHONUNBUFFERED="1"), start_new_session=True,
                            stdout=subprocess.PIPE,
                            preexec_fn=_die_with_parent if linux else None)
    proc.forwarder = threading.Thread(target=_forward, args=(proc.stdout,), daemon=True)
    proc.forwarder.start()
    return proc


def launch(args):
    """Run the ranks to the end; returns the launcher's exit code."""
    workdir = tempfile.mkdtemp(prefix="d2s-launch-")
    ranks = None

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        ranks = Ranks(args, workdir)
        deadline = None if args.timeout is None else time.monotonic() + args.timeout
        while True:
            failed, done = ranks.poll()
            if done:
                ranks.drain()
                return 0
            if failed:
                time.sleep(0.2)  # let the failing rank finish writing its error
                ranks.poll()  # (a failure that came first but was seen late)
                rank, code = ranks.first_failure()
                ranks.stop()
                who = "mpiexec" if rank is None else f"rank {rank}"
                _report(ranks.errors(), f"{who} failed first ({_describe(code)}); the other "
                                        "ranks were stopped", first=rank)
                return 128 - code if code < 0 else code
            if deadline is not None and time.monotonic() > deadline:
                ranks.stop()
                _report(ranks.errors(), f"timed out after {args.timeout:g} s; every rank "
                                        "was stopped")
                return TIMEOUT_EXIT
            time.sleep(0.05)
    except KeyboardInterrupt:
        if ranks is not None:
            ranks.stop()
        print("d2s.distributed.launch: interrupted; every rank was stopped", file=sys.stderr)
        return 130
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        shutil.rmtree(workdir, ignore_errors=True)


def _describe(code):
    """A process's exit status in words: its exit code, or the signal that ended it."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"killed by signal {name}"
    return f"exit code {code}"


def _report(errors, summary, first=None):
    """The summary, then each rank's error, the first failure's first (and
    the runtimes' banners held back, which may say how far a rank got)."""
    lines = [f"d2s.distributed.launch: {summary}"]
    if _BANNERS:
        lines.append("---- the runtimes said:\n"
                     + b"".join(_BANNERS).decode(errors="replace").rstrip())
    for rank, text in sorted(errors, key=lambda e: e[0] != first):
        lines.append(f"---- rank {rank} failed{' (first)' if rank == first else ''}:\n"
                     f"{text.rstrip()}")
    print("\n".join(lines), file=sys.stderr, flush=True)


def main(argv=None):
    return launch(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
