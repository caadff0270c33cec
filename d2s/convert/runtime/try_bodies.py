"""The `try` bodies converted code is running, for the raises traced under
them.

A `raise` under a tensor `if` (or in a loop on a tensor) becomes an op that
raises when the program runs (`convert_raise`): no Python `except` around
the code that built it can catch that error, as it did eagerly. Converted
code runs each `try` body inside `try_body`, so such a raise, traced while a
`try` whose handlers would catch it is running, is refused at build time
with a clear error naming both places (never a run-time error the `except`
was written to take).
"""
import threading

__all__ = ["try_body", "check_uncaught_raise"]

_running = threading.local()   # .stack: the try_body of each running `try`, innermost last


class try_body:
    """`with _jst.try_body(lambda: (E1, E2), "file, line N"):` around a converted
    `try`'s body: `handled` gives its handlers' exception types when a raise
    asks (Python evaluates them only then too)."""

    __slots__ = ("handled", "where")

    def __init__(self, handled, where):
        self.handled = handled
        self.where = where

    def __enter__(self):
        stack = getattr(_running, "stack", None)
        if stack is None:
            stack = _running.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _running.stack.pop()
        return False

    def catches(self, exc):
        try:
            types = _flat(self.handled())
        except Exception:
            return True     # cannot tell: as if it did (an error rather than a wrong answer)
        return isinstance(exc, types)


def _flat(types):
    if isinstance(types, tuple):
        return tuple(t for part in types for t in _flat(part))
    return (types,)


def check_uncaught_raise(exc):
    """Raise a ControlFlowError when a running converted `try` would catch
    `exc`, which a tensor construct's raise op throws only when the program
    runs."""
    stack = getattr(_running, "stack", None)
    if not stack:
        return
    catching = next((t for t in reversed(stack) if t.catches(exc)), None)
    if catching is None:
        return
    from d2s.static import ControlFlowError
    from d2s.static.ir import user_origin
    origin = user_origin()
    where = f" ({origin[0]}, line {origin[1]})" if origin else ""
    raise ControlFlowError(
        f"{type(exc).__name__}({exc}) is raised under an `if` on a tensor (or in a loop on "
        f"one){where}, inside the `try` at {catching.where}, whose `except` takes it "
        f"eagerly: the program decides whether to raise only when it runs, where that "
        f"`except` cannot catch it. Check the condition before the `try` (outside the "
        f"converted code), or compute both results and choose with d2s.where")
