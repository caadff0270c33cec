"""Functions whose source text is awkward to find (see test_source.py)."""


def deco(*a, **k):
    return lambda f: f


def string_at_margin(x):
    s = """
x = 1
"""
    return x + len(s)


def backslash(x):
    return x + \
1


@deco(
    a=1,
)
def decorated(x):
    return x * 2


class K:
    @staticmethod
    def method(x):
        return x - 1
# a comment at the margin
    # an indented comment


def bracket(x):
    y = [1,
2]
    return x + sum(y)


def one(x): return x + 100
def two(x): return x + 200
