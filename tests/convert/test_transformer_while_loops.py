"""The `while_loops` converter (`d2s/convert/transformers/while_loops.py`): a
`while` becomes condition and body closures and
`_jst.convert_while_loop(...)`, carrying exactly the names live at the loop
head."""
from converter_helpers import convert_src, flat


def test_while_loop_vars_exact():
    src = flat(convert_src("""
        def f(n):
            i = 0
            s = 0
            while i < n:
                t = i * 2
                s = s + t
                i = i + 1
            return s
    """))
    assert "('i', 's', 't'), ('i', 's'))" in src
