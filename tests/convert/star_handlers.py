"""A function using `except*` (Python 3.11 syntax: a module of its own, so
older Pythons skip its test without failing to import the test file)."""


def handled(x):
    try:
        if x < 0:
            raise ExceptionGroup("negative", [ValueError(x)])
        result = x * 2
    except* ValueError:
        result = -1
    return result
