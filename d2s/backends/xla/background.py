"""Tiered compilation: a call never waits for XLA to compile.

Compiling a program for a new shape takes XLA a second or more; the numpy
backend runs the same program at once. So a call whose executable is not
compiled yet runs on numpy (the lower tier) while one worker thread compiles
it; a later call of that shape, finding the executable ready, runs on XLA
(the upper tier), as JIT runtimes do. The results agree within the backends'
tolerance whichever tier ran (the backend contract), so switching is
invisible but for speed.

Why one thread and a bounded queue: compiles are CPU-bound (XLA releases the
GIL while it compiles, tracing holds it); more threads would only take more
of the cores the calls run on. The worker runs at the lowest scheduling
priority the OS grants, so that on a busy machine the calls come first. A
shape that finds the queue full runs on numpy and asks again at its next call.

What a compile reports is reported on the caller's thread, at the program's
next call (the warnings module points at user code only from there): a
compile slower than `SLOW_S` warns once (`SlowCompileWarning`, naming the
function and the shapes); a compile that fails leaves numpy serving that
shape and warns once (`BackendFallbackWarning`, with the op and line when the
error names one); an op that turns out not to lower falls the part back to
numpy as a synchronous compile would (`Unsupported`, re-raised to the caller).

`D2S_XLA_SYNC=1`, or `to_static(..., compile="sync")`, compiles on the
calling thread instead (today's blocking behaviour: the first call of a
shape runs on XLA); `compile="async"` asks for the tiers whatever the
variable says. Standard library only: no jax here.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
import time

from ..base import BackendFallbackWarning, Unsupported

SLOW_S = 1.0          # a compile taking longer is reported (one line)
QUEUE_SIZE = 16       # compiles waiting at most; more run on numpy until there is room
QUIET_S = 0.1        # one core: a compile starts once calls paused this long, or
PATIENCE_S = 1.0     # ... once it waited this long (or as long as the last compile took)
WORKER_NICE = 19     # the compile thread's scheduling priority (Linux: the lowest)

__all__ = ["SlowCompileWarning", "sync_compiles", "Tiers", "wait_idle", "finished"]


class SlowCompileWarning(UserWarning):
    """A compile took longer than `SLOW_S`: which function, which shapes."""


def sync_compiles(mode=None):
    """Whether compiles block the call: `mode` when set, else `D2S_XLA_SYNC`."""
    if mode is not None:
        return mode == "sync"
    return os.environ.get("D2S_XLA_SYNC", "").strip() not in ("", "0")


class _Job:
    __slots__ = ("compile", "done", "error", "seconds", "on_done", "submitted")

    def __init__(self, compile, on_done=None):
        self.compile = compile
        self.done = threading.Event()  # set when compiled, or failed
        self.error = None
        self.seconds = 0.0
        self.on_done = on_done  # called with the job, on the worker, before `done` is set
        self.submitted = time.perf_counter()

    def run(self):
        start = time.perf_counter()
        try:
            self.compile()
        except BaseException as e:  # reported on the caller's thread (see Tiers.pending)
            self.error = e
        finally:
            self.seconds = time.perf_counter() - start
            self.compile = None
            if self.on_done is not None:
                self.on_done(self)
            self.done.set()


class _Worker:
    """The one compile thread (a daemon, started on first use)."""

    def __init__(self):
        self.queue = queue.Queue(QUEUE_SIZE)
        self.thread = None
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.busy = 0  # jobs submitted and not finished
        self.finished = 0  # jobs finished, since the process started
        self.last_seconds = 0.0  # how long the last compile took

    def submit(self, job):
        with self.lock:
            try:
                self.queue.put_nowait(job)
            except queue.Full:
                return False
            self.busy += 1
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name="d2s-xla-compile",
                                               daemon=True)
                self.thread.start()
        return True

    def _loop(self):
        try:  # Linux: this thread only (and what XLA starts from it)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICE)
        except (AttributeError, OSError):  # pragma: no cover - other systems
            pass
        while True:
            job = self.queue.get()
            if _one_core():
                self._wait_for_turn(job)
            job.run()
            with self.lock:
                self.busy -= 1
                self.finished += 1
                self.last_seconds = job.seconds
                if not self.busy:
                    self.idle.notify_all()

    def _wait_for_turn(self, job):
        """On one core a compile runs only in the calls' time (and holds the
        GIL while it traces): it starts when the calls pause (`QUIET_S`), or
        when numpy has served for as long as a compile takes (the last one's
        time, at least `PATIENCE_S`) - paying for the compile once waiting
        has cost as much, the ski-rental rule: never worse than twice the
        better of always and never compiling."""
        patience = max(PATIENCE_S, self.last_seconds)
        while True:
            now = time.perf_counter()
            if now - LAST_CALL[0] >= QUIET_S or now - job.submitted >= patience:
                return
            time.sleep(QUIET_S / 2)

    def wait_idle(self, timeout=None):
        """Wait until every submitted compile finished; False on timeout."""
        with self.lock:
            return self.idle.wait_for(lambda: not self.busy, timeout)


_WORKER = _Worker()
LAST_CALL = [0.0]  # when a call last found its compile pending (perf_counter)


def _one_core():
    """Whether this process may run on one CPU only (`taskset -c 0`, a
    container's limit)."""
    try:
        return len(os.sched_getaffinity(0)) == 1
    except (AttributeError, OSError):  # pragma: no cover - other systems
        return (os.cpu_count() or 1) == 1


def wait_idle(timeout=None):
    """Block until the background compiles submitted so far are done (tests,
    benchmarks; and at exit, so that the interpreter does not tear down
    under a compile)."""
    return _WORKER.wait_idle(timeout)


def finished():
    """How many background compiles have finished in this process."""
    return _WORKER.finished


def _at_exit():
    """Compiles still queued are dropped (nobody will call them); the one
    under way is waited for, so that the interpreter does not tear JAX down
    under it."""
    worker = _WORKER
    while True:
        try:
            job = worker.queue.get_nowait()
        except queue.Empty:
            break
        job.compile, job.on_done = _dropped, None
        job.run()  # (marked done, failed: never reported)
        with worker.lock:
            worker.busy -= 1
    worker.wait_idle(60)


def _dropped():
    raise RuntimeError("dropped at exit")


atexit.register(_at_exit)


class Tiers:
    """One XlaProgram's background compiles: key -> its job; `finished`: the
    jobs done and not reported yet (appended by the worker)."""

    def __init__(self, label):
        self.label = label  # the function, for reports
        self.jobs = {}
        self.finished = []
        self.lock = threading.Lock()

    def pending(self, key, shapes, compile):
        """True while the call of `key` must run on numpy: its compile queued,
        under way, or failed. `compile()` builds and caches the executable
        (run on the worker)."""
        LAST_CALL[0] = time.perf_counter()
        job = self.jobs.get(key)
        if job is None:
            with self.lock:
                job = self.jobs.get(key)
                if job is None:
                    job = _Job(compile, lambda job: self.finished.append((job, shapes)))
                    if not _WORKER.submit(job):
                        return True  # full: numpy now, ask again next call
                    self.jobs[key] = job
            return True
        return not job.done.is_set() or job.error is not None

    def report(self):
        """Report (on the caller's thread) what the compiles finished since
        the last call say, each once: slow (`SlowCompileWarning`), failed
        (`BackendFallbackWarning`: numpy keeps serving that shape), or an
        op that does not lower (`Unsupported`, raised: the caller's part
        falls back as a synchronous compile's would)."""
        while self.finished:
            try:
                job, shapes = self.finished.pop(0)
            except IndexError:  # (another thread took it)
                return
            self._report(job, shapes)

    def _report(self, job, shapes):
        from ...static.origins import warn_in_user_code
        e = job.error
        if e is None:
            if job.seconds > SLOW_S:
                warn_in_user_code(f"xla backend: compiling {self.label} for input shapes "
                                  f"{shapes} took {job.seconds:.1f} s (calls ran on numpy "
                                  f"meanwhile)", SlowCompileWarning)
            return
        if isinstance(e, Unsupported):
            raise e  # the part falls back as a synchronous compile's would
        op = getattr(e, "op", None)
        where = ""
        if op is not None and getattr(op, "origin", None):
            where = f" at op '{op.type}', {op.origin[0]}, line {op.origin[1]}"
        elif op is not None:
            where = f" at op '{op.type}'"
        message = str(e).replace("\n", " ")
        warn_in_user_code(f"xla backend: compiling {self.label} for input shapes {shapes} "
                          f"failed{where}: {type(e).__name__}: {message}; these calls keep "
                          f"running on the numpy backend", BackendFallbackWarning)
