"""`UndefinedVar`: the value of a local that no executed path has assigned yet.

Generated closures need every name they share bound, so such names start as
`UndefinedVar('x')`.  Reading one through `ld` (or using it in almost any
way) raises UnboundLocalError (a NameError) naming the variable, as Python
would have.
"""

__all__ = ["UndefinedVar", "ld", "return_value"]


class UndefinedVar:
    """Placeholder for an unassigned local; `name` is the user's variable name.

    `reason` (optional) explains why it is undefined, e.g. that only one
    branch of a static `if` (at some file/line) assigned it.
    """

    __slots__ = ("name", "reason")
    _d2s_undefined = True  # how d2s.static recognises it without importing us

    def __init__(self, name, reason=""):
        self.name = name
        self.reason = reason

    def error(self):
        msg = f"cannot access local variable '{self.name}' where it is not associated with a value"
        if self.reason:
            msg += f" ({self.reason})"
        err = UnboundLocalError(msg)
        if not self.reason:
            # No path traced so far assigned it (a Python loop that ran zero
            # times): on a path a tensor `if` or loop may skip at run time,
            # d2s.static makes this error a run-time one (static.side_effects).
            # With a reason, some run-time path may assign it: a build error.
            err._d2s_unbound_read = self
        return err

    def __repr__(self):
        return f"UndefinedVar({self.name!r})"

    def _raise(self, *args, **kwargs):
        raise self.error()

    # Any use other than passing it around is an error naming the variable.
    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __setitem__ = _raise
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _raise
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = _raise
    __pow__ = __matmul__ = __neg__ = __pos__ = __abs__ = __index__ = _raise
    __int__ = __float__ = __lt__ = __le__ = __gt__ = __ge__ = _raise
    __iadd__ = __isub__ = __imul__ = __itruediv__ = _raise

    def __getattr__(self, attr):
        if attr.startswith("__"):  # protocol probes (copy, pickle, numpy) see a plain object
            raise AttributeError(attr)
        raise self.error()


def ld(value):
    """The value of a possibly-unassigned local: raise if it is unassigned."""
    if type(value) is UndefinedVar:
        raise value.error()
    return value


def return_value(value):
    """The function's result after `return` canonicalization (None if none)."""
    return None if type(value) is UndefinedVar else value
