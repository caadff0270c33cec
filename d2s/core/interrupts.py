"""Ctrl-C held back across the few lines that must not be cut in two.

Python raises `KeyboardInterrupt` between any two bytecodes of the main
thread, including right after a C call returned and before its result is
stored. Some windows cannot survive that: a training step on xla hands the
parameters' buffers to XLA (donation) and gets the new values back in the
same call, so an interrupt after the call and before the write-back loses
both the old values (XLA took them) and the new ones (never stored). Host
copies of every donated buffer would make the window safe at the cost of a
copy of the whole state per step; holding the signal back costs two
`sigaction` calls.

`defer()` swaps the Python-level SIGINT handler for one that only records
the signal; `resume(token)` puts the user's handler back and, if a signal
came in between, calls it (the default one raises `KeyboardInterrupt`),
after the window's last write. Both `signal.raise_signal` and
`_thread.interrupt_main` reach the Python-level handler, whichever thread
the OS gave the signal to, so masking at the OS level (`pthread_sigmask`,
per thread) would not do. Handlers can only be set from the main thread,
the only thread Python delivers signals to: elsewhere both calls do nothing.
A handler the user set that is not a Python callable (ignored, or the OS
default) is left alone. Windows nest (the outermost resumes).

What no window can help: CPython may run the handler inside a gc callback
or a finalizer, where the `KeyboardInterrupt` is "unraisable" (printed as
"Exception ignored in ...", then dropped), so one Ctrl-C in many can go
unseen in any Python program; the state is untouched by it, and the next
Ctrl-C works.
"""
from __future__ import annotations

import signal
import threading

__all__ = ["defer", "resume", "deferred"]

try:  # the C functions: `signal.signal` wraps them in enum conversions costing 15 times more
    from _signal import getsignal as _getsignal, signal as _setsignal
except ImportError:  # pragma: no cover - other interpreters
    _getsignal, _setsignal = signal.getsignal, signal.signal
_SIGINT = int(signal.SIGINT)
_get_ident = threading.get_ident
_MAIN = threading.main_thread().ident
_pending = []  # frames of the signals received while deferred (main thread only)
_depth = [0]


def _record(signum, frame):
    _pending.append(frame)


def defer():
    """Hold SIGINT back until `resume(token)`; returns the token (None where
    nothing was swapped: another thread, a nested window, no Python handler)."""
    if _get_ident() != _MAIN:
        return None
    if _depth[0]:
        _depth[0] += 1
        return _record
    previous = _getsignal(_SIGINT)
    if not callable(previous) or previous is _record:  # ignored, the OS default, not Python's
        return None
    _pending.clear()  # (one a window left behind when Ctrl-C cut its `resume` short)
    _setsignal(_SIGINT, _record)  # from here on no KeyboardInterrupt until `resume`
    _depth[0] = 1
    return previous


def resume(token):
    """End the window `defer` opened: the user's handler back, then run for a
    signal that came in meanwhile (it raises `KeyboardInterrupt`, by default)."""
    if token is None:
        return
    _depth[0] -= 1
    if token is _record:  # an inner window
        return
    _setsignal(_SIGINT, token)
    if _pending:
        frame = _pending[-1]
        _pending.clear()
        token(_SIGINT, frame)


class deferred:
    """`with deferred():` — `defer()` and `resume()` as a context (for paths
    not called per step)."""
    __slots__ = ("_token",)

    def __enter__(self):
        self._token = defer()
        return self

    def __exit__(self, *exc):
        resume(self._token)
        return False
