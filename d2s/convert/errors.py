"""Errors raised by the conversion side; one base class so callers can catch all of them.

They carry the user's file and line (not the generated code's) because the
person reading them wrote the original function, not the converted one.
"""


class D2SConversionError(Exception):
    """A function could not be converted to static form."""


class SourceUnavailableError(D2SConversionError):
    """The function's source text cannot be found (builtin, exec'd code, REPL lambda)."""


class UnsupportedSyntaxError(D2SConversionError):
    """The function uses a construct conversion cannot express (yield, async, ...)."""

    def __init__(self, construct, filename, lineno, source_line="", reason=""):
        self.construct = construct
        self.filename = filename
        self.lineno = lineno
        msg = f"{construct} is not supported in a converted function"
        if reason:
            msg += f" ({reason})"
        msg += f'\n  File "{filename}", line {lineno}'
        if source_line:
            msg += f"\n    {source_line.strip()}"
        super().__init__(msg)


class SourceMismatchError(SourceUnavailableError):
    """The function's source on disk no longer is the text its code was built from."""
