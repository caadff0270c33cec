"""Run-time values of the reference interpreter, and errors located at an op.

Kept apart from `executor` so that the control-flow ops' homes
(`static.control_ops`), which interpret themselves, read them without
importing the interpreter that dispatches to them.
"""
from __future__ import annotations


class MissingValue(KeyError):
    """A variable with no value in the scope chain (not a user's KeyError)."""


_MISSING = object()


class Scope:
    """Values by name, chained like the blocks: a sub-block runs in a child
    scope of its parent's and reads the parent's names through it."""
    __slots__ = ("vars", "parent")

    def __init__(self, parent=None):
        self.vars = {}
        self.parent = parent

    def get(self, name):
        s = self
        while s is not None:
            v = s.vars.get(name, _MISSING)
            if v is not _MISSING:
                return v
            s = s.parent
        raise MissingValue(name)

    def set(self, name, value):
        self.vars[name] = value


class UndefinedValue:
    """Run-time value of a name no executed path assigned (a zero-trip loop's
    first assignment, the unused side of an early return). Any op reading it
    raises NameError naming the variable."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def error(self, op=None):
        where = op_location(op) if op is not None else ""
        return NameError(f"name '{self.name}' is not defined: no path that ran assigned it "
                         f"(e.g. a loop that ran zero times){where}")


def op_location(op):
    """` (op 'T' built at FILE, line N: TEXT)`: where a failing op came from."""
    if op.origin:
        fn, line = op.origin[:2]
        text = f" (op '{op.type}' built at {fn}, line {line}"
        if len(op.origin) > 2 and op.origin[2]:
            text += f": {op.origin[2]}"
        return text + ")"
    return f" (op '{op.type}')"


def relocate(e, op):
    """Same exception type, message extended with the op and the user's line."""
    msg = (str(e.args[0]) if e.args else str(e)) + op_location(op)
    try:
        new = type(e)(msg)
    except Exception:
        new = e
        if hasattr(e, "add_note"):
            e.add_note(op_location(op).strip())
    new._d2s_located = True
    new.__cause__ = e if new is not e else None
    return new
