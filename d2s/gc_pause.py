"""Python's cyclic garbage collector paused while a function is converted and
while a program is built.

Conversion (tens of AST nodes per source line), tracing, the passes and code
generation allocate tens of objects per op, all of them alive until the
build ends. Each allocation burst makes the
generational collector scan them again, and once enough survive it runs
full collections over every object of the process: on a function of a few
hundred lines that is a sixth of the build's time, spent finding no garbage.
Paused, the collector runs once afterwards, as usual.

Reference counting still frees everything without cycles at once; the
collector is paused only for the build (builds may nest, in one thread or
several: the outermost one re-enables it), and only if it was enabled.
Standard library only: the converter (AST side) and jit both use it.

After the build, the first young collection scans what the build kept (a
program's ops, Variables and blocks; the IR keeps few objects per op for
that reason). Resuming does not move them to the oldest generation
unscanned (`gc.freeze()` then `gc.unfreeze()`): that would move the user's
young objects too, and a program is itself a cycle (blocks and their
program), so one evicted from a program cache would wait, uncounted, for a
full collection that its promotion never schedules.
"""
import contextlib
import gc
import threading

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused():
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
