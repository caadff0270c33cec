"""The `ifelse` converter (`d2s/convert/transformers/ifelse.py`): an `if`
becomes branch closures and `_jst.convert_ifelse(...)`, sharing the names
either branch assigns through `nonlocal` and handing back exactly those live
after it (a list a branch appends to is named in `lists=`)."""
from converter_helpers import convert_src, flat


def test_ifelse_state_and_exact_outputs():
    src = flat(convert_src("""
        def f(c):
            x = 0
            if c:
                x = 1
                tmp = 2
                y = tmp
            else:
                y = 3
            return x + y
    """))
    assert "('tmp', 'x', 'y'), ('x', 'y'))" in src
    assert "nonlocal tmp, x, y" in src


def test_ifelse_zero_outputs():
    src = flat(convert_src("""
        def f(c, xs):
            if c:
                xs.sort()
            return xs
    """))
    assert "(), ())" in src and "return ()" in src


def test_ifelse_list_append_is_an_output():
    # An append in a branch rebinds the list (a tensor `if` carries it as an
    # array): never an in-place change the other branch would see.
    src = flat(convert_src("""
        def f(c, xs):
            if c:
                xs.append(1)
            return xs
    """))
    assert "xs = _jst.convert_list_append(xs, 1, outer='xs')" in src
    assert "('xs',), ('xs',), lists=('xs',))" in src
