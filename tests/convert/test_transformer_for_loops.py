"""The `for_loops` converter (`d2s/convert/transformers/for_loops.py`): a `for`
becomes a body closure assigning the loop target from one item and
`_jst.convert_for(...)`, its break flag the loop's condition."""
from converter_helpers import convert_src, flat


def test_for_target_and_break_flag():
    src = flat(convert_src("""
        def f(xs):
            for i, (a, b) in enumerate(xs):
                if a:
                    break
            return i
    """))
    assert "i, (a, b) = __item_0" in src
    assert "_jst.convert_enumerate(xs)" in src
    assert "lambda : _jst.convert_logical_not(__break_0)" in src
    assert "('__break_0', 'i'), lambda" in src  # a, b not live after the loop
    assert "i = _jst.UndefinedVar('i')" in src
    assert "return _jst.ld(i)" in src
