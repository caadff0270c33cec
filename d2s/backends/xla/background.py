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
priority the OS grants, so that on a busy machine the calls come first
(not on one core under a compile budget, see `_niced`). A
shape that finds the queue full runs on numpy and asks again at its next call.

When to compile: a compile budget (the "ski rental" rule of JIT runtimes).
With spare cores a compile runs beside the calls, so a new shape is queued
at once. On one usable core (`taskset -c 0`, a container's limit) a compile
takes its CPU from the calls, and compiling every new shape at once cannot
pay within a short run: a shape stays on numpy ("renting") until the time
its calls spent there reaches `D2S_XLA_COMPILE_BUDGET` times the compile's
expected cost, and only then is queued ("buying"). With the expected cost
right, that costs at most twice the better of never and always compiling
that shape, without knowing how many calls will come (renting paid at most
one compile's worth, buying one compile); the bound it cannot beat: a run
shorter than a compile is not faster than numpy. The rent counted is each
numpy-tier call's whole wall time, not only what XLA would save of it, so
the rule buys somewhat early (a factor above 1 corrects for that). The
expected cost is this program's dearest compile yet (the CPU it took
outside the main thread: another shape of the same ops), else the
process's last compile per op times this program's op count, else
`OP_SECONDS` per op. `D2S_XLA_COMPILE_BUDGET`: a factor >= 0 (0: compile
at once, on any machine; unset: 1 on one core, 0 with spare cores). Only
callers that charge the time count it (`with rent:` around the numpy run,
see `Tiers.pending`).

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
WORKER_NICE = 19     # the compile thread's scheduling priority (Linux: the lowest)
# Expected compile seconds per op before any compile was measured: the CPU an
# XLA compile of a GRU training step (a while loop, tensor arrays) took per op
# on one core; small straight-line programs take less per op, so a first
# estimate errs towards renting longer (the safe side on one core).
OP_SECONDS = 0.01
BUDGET_ENV = "D2S_XLA_COMPILE_BUDGET"

__all__ = ["SlowCompileWarning", "sync_compiles", "compile_budget", "Tiers", "wait_idle",
           "finished"]


class SlowCompileWarning(UserWarning):
    """A compile took longer than `SLOW_S`: which function, which shapes."""


def sync_compiles(mode=None):
    """Whether compiles block the call: `mode` when set, else `D2S_XLA_SYNC`."""
    if mode is not None:
        return mode == "sync"
    return os.environ.get("D2S_XLA_SYNC", "").strip() not in ("", "0")


def compile_budget():
    """The factor of a compile's expected cost a shape's numpy-tier calls
    spend before it is queued: `D2S_XLA_COMPILE_BUDGET`, else 1 on one
    usable core and 0 (compile at once) with spare cores."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    if not text:
        return 1.0 if _one_core() else 0.0
    try:
        factor = float(text)
    except ValueError:
        factor = -1.0
    if not factor >= 0.0:  # (also NaN)
        raise ValueError(f"{BUDGET_ENV}={text!r}: write a factor >= 0 (0 compiles a new "
                         f"shape at once, 1 once its numpy calls took as long as a compile)")
    return factor


def clock():
    """Seconds, for the time calls spend on the numpy tier (tests replace it)."""
    return time.perf_counter()


def compile_clock():
    """CPU seconds of this process outside the main thread: what a compile
    costs the calls on one core. (XLA compiles on threads of its own, so the
    worker's own CPU time misses most of it; wall time would count the calls
    running meanwhile.) Wall time where the OS has no per-thread clocks."""
    try:
        main = time.clock_gettime(time.pthread_getcpuclockid(threading.main_thread().ident))
    except (AttributeError, OSError):  # pragma: no cover - other systems
        return time.perf_counter()
    return time.process_time() - main


class _Job:
    __slots__ = ("compile", "done", "error", "seconds", "cost", "on_done")

    def __init__(self, compile, on_done=None):
        self.compile = compile
        self.done = threading.Event()  # set when compiled, or failed
        self.error = None
        self.seconds = 0.0  # wall time (reported when slow)
        self.cost = 0.0  # CPU time outside the main thread (the next estimate)
        self.on_done = on_done  # called with the job, on the worker, before `done` is set

    def run(self):
        start, cpu = time.perf_counter(), compile_clock()
        try:
            self.compile()
        except BaseException as e:  # reported on the caller's thread (see Tiers.pending)
            self.error = e
        finally:
            self.seconds = time.perf_counter() - start
            self.cost = max(compile_clock() - cpu, 0.0)
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
        self.op_seconds = None  # the last compile's cost per op (None: none measured yet)

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
        if _niced():
            try:  # Linux: this thread only (and what XLA starts from it)
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICE)
            except (AttributeError, OSError):  # pragma: no cover - other systems
                pass
        while True:
            job = self.queue.get()
            job.run()
            with self.lock:
                self.busy -= 1
                self.finished += 1
                if not self.busy:
                    self.idle.notify_all()

    def wait_idle(self, timeout=None):
        """Wait until every submitted compile finished; False on timeout."""
        with self.lock:
            return self.idle.wait_for(lambda: not self.busy, timeout)


_WORKER = _Worker()


def _one_core():
    """Whether this process may run on one CPU only (`taskset -c 0`, a
    container's limit)."""
    try:
        return len(os.sched_getaffinity(0)) == 1
    except (AttributeError, OSError):  # pragma: no cover - other systems
        return (os.cpu_count() or 1) == 1


def _niced():
    """Whether the worker yields to the calls (`WORKER_NICE`): not on one
    core under a budget. There a queued compile has been paid for, and at
    the lowest priority it would get almost no CPU while calls keep coming
    (and, holding the GIL while it traces, would hold them up): it shares
    the core as any thread does, so that calls run slower while it compiles
    rather than it never finishing."""
    try:
        return not (_one_core() and compile_budget() > 0)
    except ValueError:  # (the bad value is reported to the caller, see compile_budget)
        return True


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


class _Rent:
    """A numpy-tier call of a shape still renting: `with rent:` around the
    call adds its time to the shape's, and queues the compile once that
    reaches the budget."""
    __slots__ = ("tiers", "key", "start")

    def __init__(self, tiers, key):
        self.tiers = tiers
        self.key = key

    def __bool__(self):
        return True  # (numpy serves this call)

    def __enter__(self):
        self.start = clock()
        return self

    def __exit__(self, *exc):
        self.tiers.charge(self.key, clock() - self.start)
        return False


class _Serving:
    """Numpy serves this call, and nothing is counted (the compile is queued,
    under way, or failed): a `with` that does nothing."""
    __slots__ = ()

    def __bool__(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


SERVING = _Serving()


class Tiers:
    """One XlaProgram's background compiles: key -> its job; `spent`: per
    key not queued yet, the seconds its calls spent on numpy; `finished`:
    the jobs done and not reported yet (appended by the worker). `size`: the
    program's op count, which scales the expected compile cost."""

    def __init__(self, label, size=1):
        self.label = label  # the function, for reports
        self.size = max(int(size), 1)
        self.jobs = {}
        self.spent = {}
        self.waiting = {}  # key -> (shapes, compile) of a shape still renting
        self.finished = []
        self.last_cost = None  # this program's dearest compile yet (another shape)
        self.lock = threading.Lock()

    def expected_seconds(self):
        """What compiling one more shape of this program is expected to cost."""
        if self.last_cost is not None:
            return self.last_cost
        per_op = _WORKER.op_seconds
        return (OP_SECONDS if per_op is None else per_op) * self.size

    def pending(self, key, shapes, compile):
        """Falsy when the call of `key` may run on XLA; else a truthy context
        for the caller's numpy run (`with rent: ...`): the compile is queued,
        under way or failed (`SERVING`), or the shape still rents (`_Rent`:
        its time is counted, and the compile queued once the budget is
        spent). `compile()` builds and caches the executable (run on the
        worker)."""
        job = self.jobs.get(key)
        if job is not None:
            return SERVING if not job.done.is_set() or job.error is not None else False
        with self.lock:
            if key not in self.jobs:
                self.waiting[key] = (shapes, compile)
        self._queue_if_paid(key)
        return _Rent(self, key) if key not in self.jobs else SERVING

    def charge(self, key, seconds):
        """Count `seconds` a numpy-tier call of `key` took; queue its compile
        once the budget is spent."""
        with self.lock:
            self.spent[key] = self.spent.get(key, 0.0) + seconds
        self._queue_if_paid(key)

    def _queue_if_paid(self, key):
        factor = compile_budget()
        with self.lock:
            if key in self.jobs or key not in self.waiting:
                return
            if factor and self.spent.get(key, 0.0) < factor * self.expected_seconds():
                return
            shapes, compile = self.waiting[key]
            job = _Job(compile, lambda job: self._done(job, shapes))
            if not _WORKER.submit(job):
                return  # full: numpy now, ask again next call
            del self.waiting[key]
            self.spent.pop(key, None)
            self.jobs[key] = job

    def _done(self, job, shapes):
        """On the worker: the compile's cost is the next estimate. Within a
        program the dearest one yet: a shape loaded from d2s's cache of
        executables compiles in a fraction of the time, and must not make
        the next shape, maybe not cached, look cheap."""
        if job.error is None:
            self.last_cost = max(job.cost, self.last_cost or 0.0)
            _WORKER.op_seconds = job.cost / self.size
        self.finished.append((job, shapes))

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
