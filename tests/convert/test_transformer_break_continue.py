"""The `break_continue` converter (`d2s/convert/transformers/break_continue.py`):
a `break` becomes a flag the loop's test checks first, so the loop has one
exit the control-flow converters can read."""
from converter_helpers import convert_src, flat


def test_while_break_folded_into_condition():
    src = flat(convert_src("""
        def f(n):
            while n > 0:
                if n == 3:
                    break
                n -= 1
            return n
    """))
    assert ("_jst.convert_logical_and(_jst.convert_logical_not(__break_0), lambda : n > 0, True)"
            in src.replace("True )", "True)"))
