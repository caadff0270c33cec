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
    # (right sides without calls are marked simple: see logical_expressions)
    assert ("_jst.convert_logical_or(_jst.convert_logical_and(a, lambda : b, True), "
            "lambda : _jst.convert_logical_not(c), True") in src.replace("True )", "True)")
    assert "_jst.convert_compare_chain(a, '<', lambda : b, '<=', lambda : c)" in src


def test_right_side_with_a_call_is_not_marked_simple():
    """Only a right side without calls may be traced twice (see
    d2s.static.inline_operand): `b(x)` keeps the plain form."""
    src = flat(convert_src("""
        def f(a, b, x):
            return a and b(x), a or x[0] > 1
    """)).replace(" )", ")")
    assert "_jst.convert_logical_and(a, lambda : _jst.convert_call(b)(x))" in src
    assert "_jst.convert_logical_or(a, lambda : _jst.read_item(x, 0) > 1, True)" in src
