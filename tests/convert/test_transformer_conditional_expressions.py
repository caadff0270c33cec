"""The `conditional_expressions` converter
(`d2s/convert/transformers/conditional_expressions.py`): `a if c else b`
becomes `_jst.convert_ifelse_expr(c, lambda: a, lambda: b)`, each side
evaluated only when taken."""
from converter_helpers import convert_src, flat


def test_ternary():
    src = flat(convert_src("""
        def f(x):
            return 1 if x else 2
    """))
    assert "_jst.convert_ifelse_expr(x, lambda : 1, lambda : 2)" in src
