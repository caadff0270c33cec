"""`d2s.distributed.spawn(func, args, nprocs)`: PaddlePaddle's way of
starting ranks from inside a Python program, over the launcher's machinery.

The ranks are the launcher's (`launch.Ranks`): the same environment per
rank (`D2S_RANK`, `D2S_WORLD_SIZE`, `D2S_COORDINATOR`, ...), under
`mpiexec` when it is installed (so eager collectives have their MPI world),
each in its own process group, ended with the parent. What differs is what
each rank runs: instead of a script, `func(*args)`, handed over by pickle
(as `multiprocessing` does: `func` must be importable by its module and
name, and a script that calls `spawn` must do so under `if __name__ ==
"__main__":`, because each rank imports that script to find `func`).

A rank that fails makes `join` raise, naming the rank and carrying its
traceback; the other ranks are stopped.
"""
from __future__ import annotations

import atexit
import os
import pickle
import shutil
import sys
import tempfile
import time
import types

from . import launch

# the options of PaddlePaddle's spawn that mean nothing here (devices are
# CPUs, chosen by JAX); accepted so that Paddle code runs as written
_IGNORED_OPTIONS = ("start_method", "gpus", "xpus", "ips")
_OPTIONS = ("devices_per_proc", "timeout", "mpi", "master_port", "backend") + _IGNORED_OPTIONS

# What each rank runs (written next to the payload): load the payload,
# import the parent's main script as `__mp_main__` when `func` lives
# there, then call it.
_ENTRY = '''\
import sys
sys.argv = sys.argv[:1]
from d2s.distributed.spawning import _run_payload
_run_payload(__file__)
'''


class SpawnContext:
    """The ranks of one `spawn`: `join()` waits for them; `processes` are
    the started processes (one `mpiexec` when the ranks run under MPI)."""

    def __init__(self, ranks, workdir, timeout):
        self._ranks, self._workdir = ranks, workdir
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._done = False
        self.processes = ranks.procs

    def join(self, timeout=None):
        """Wait for every rank (at most `timeout` seconds; then False while
        they still run). True once all ended well; a failed rank (or the
        `timeout` option passed to spawn running out) stops the others and
        raises RuntimeError with the first failure's traceback."""
        if self._done:
            return True
        until = None if timeout is None else time.monotonic() + timeout
        ranks = self._ranks
        while True:
            failed, done = ranks.poll()
            if done:
                ranks.drain()
                self._finish()
                return True
            if failed:
                time.sleep(0.2)               # let the failing rank finish writing
                ranks.poll()
                rank, code = ranks.first_failure()
                ranks.stop()
                errors = dict(ranks.errors())
                self._finish()
                who = "mpiexec" if rank is None else f"rank {rank}"
                detail = errors.get(rank) or next(iter(errors.values()), "")
                raise RuntimeError(f"spawn: {who} failed first ({launch._describe(code)}); the "
                                   f"other ranks were stopped\n{detail.rstrip()}")
            now = time.monotonic()
            if self._deadline is not None and now > self._deadline:
                ranks.stop()
                self._finish()
                raise RuntimeError("spawn: the ranks ran past the timeout option; every rank "
                                   "was stopped")
            if until is not None and now > until:
                return False
            time.sleep(0.05)

    def stop(self):
        """End every rank now."""
        if not self._done:
            self._ranks.stop()
            self._finish()

    def _finish(self):
        self._done = True
        shutil.rmtree(self._workdir, ignore_errors=True)


def _check(func, args, nprocs, options):
    if not callable(func):
        raise TypeError(f"spawn: func must be callable, got {type(func).__name__}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"spawn: args must be a tuple of func's arguments, got "
                        f"{type(args).__name__}")
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or (nprocs < 1 and nprocs != -1):
        raise ValueError(f"spawn: nprocs must be a positive int or -1 (one per CPU), got "
                         f"{nprocs!r}")
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"spawn: unknown options {unknown} (known: {', '.join(_OPTIONS)})")
    if options.get("mpi", "auto") not in ("auto", "on", "off"):
        raise ValueError(f"spawn: mpi must be 'auto', 'on' or 'off', got {options['mpi']!r}")


def _payload(func, args, options):
    """The bytes each rank loads: func and args by pickle, with where to
    find them (the parent's sys.path, and its main script when func is
    defined there)."""
    in_main = getattr(func, "__module__", None) == "__main__"
    main_file = getattr(sys.modules.get("__main__"), "__file__", None) if in_main else None
    if in_main and not main_file:
        raise ValueError("spawn: func is defined in an interactive session; the ranks cannot "
                         "import it: define it in a module (a .py file)")
    try:
        blob = pickle.dumps((func, tuple(args)))
    except Exception as e:
        raise ValueError(f"spawn: func and args must be picklable (func importable by its "
                         f"module and name): {type(e).__name__}: {e}") from e
    return pickle.dumps({"path": list(sys.path), "main": os.path.abspath(main_file)
                         if main_file else None, "call": blob})


def _run_payload(entry_file):
    """In a rank: load the payload beside `entry_file` and call func(*args)."""
    with open(os.path.join(os.path.dirname(entry_file), "payload.pkl"), "rb") as f:
        payload = pickle.load(f)
    for p in reversed(payload["path"]):
        if p not in sys.path:
            sys.path.insert(0, p)
    if payload["main"]:
        # func may live in the parent's script: import it (its `__main__`
        # guard keeps it from spawning again) and let pickle find it there
        import runpy
        main = types.ModuleType("__mp_main__")
        main.__dict__.update(runpy.run_path(payload["main"], run_name="__mp_main__"))
        sys.modules["__main__"] = sys.modules["__mp_main__"] = main
    func, args = pickle.loads(payload["call"])
    func(*args)


def spawn(func, args=(), nprocs=-1, join=True, daemon=False, **options):
    """Start `nprocs` processes, each running `func(*args)` as one rank
    (PaddlePaddle's `paddle.distributed.spawn`); -1: one per CPU.

    `join`: wait for them (a failure raises RuntimeError naming the rank,
    with its traceback); else return the `SpawnContext` at once. `daemon`:
    ranks still running when this process exits are stopped (else it waits
    for them). Options: `devices_per_proc` (simulated CPU devices per rank
    for JAX), `timeout` (seconds; past it every rank is stopped), `mpi`
    ("auto", "on", "off": start the ranks under mpiexec), `master_port`,
    `backend` (each rank's default backend); Paddle's `start_method`,
    `gpus`, `xpus`, `ips` are accepted and ignored. Returns the context."""
    _check(func, args, nprocs, options)
    n = (os.cpu_count() or 1) if nprocs == -1 else nprocs
    workdir = tempfile.mkdtemp(prefix="d2s-spawn-")
    try:
        with open(os.path.join(workdir, "payload.pkl"), "wb") as f:
            f.write(_payload(func, args, options))
        entry = os.path.join(workdir, "spawn_entry.py")
        with open(entry, "w") as f:
            f.write(_ENTRY)
        launch_args = types.SimpleNamespace(
            nproc_per_node=n, master_port=options.get("master_port"),
            devices_per_proc=options.get("devices_per_proc"), mpi=options.get("mpi", "auto"),
            script=entry, script_args=[])
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
            __file__))))
        path = os.environ.get("PYTHONPATH")
        extra = {"PYTHONPATH": package_root + (os.pathsep + path if path else "")}
        if options.get("backend"):
            extra["D2S_BACKEND"] = options["backend"]    # each rank's default backend
        ranks = launch.Ranks(launch_args, workdir, extra_env=extra)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    context = SpawnContext(ranks, workdir, options.get("timeout"))
    if join:
        context.join()
    else:
        atexit.register(context.stop if daemon else context.join)
    return context
