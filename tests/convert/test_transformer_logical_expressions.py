"""The `logical_expressions` converter
(`d2s/convert/transformers/logical_expressions.py`): `and`/`or`/`not` and
chained comparisons become runtime calls whose right sides are lambdas, so
Python's short-circuiting and single evaluation are kept."""
from converter_helpers import convert_src, flat


def test_logical_and_compare_chain():
    src = flat(convert_src("""
        def f(a, b, c):
            return (a and b or not c), a < b <= c
    """))
    assert ("_jst.convert_logical_or(_jst.convert_logical_and(a, lambda : b), "
            "lambda : _jst.convert_logical_not(c))") in src
    assert "_jst.convert_compare_chain(a, '<', lambda : b, '<=', lambda : c)" in src
