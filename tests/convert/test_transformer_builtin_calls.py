"""The `builtin_calls` and `call_trees` converters
(`d2s/convert/transformers/builtin_calls.py`, `call_trees.py`): builtins whose
meaning depends on tensors (`print`, `assert`, `len`, `.shape`, ...) go
through the runtime, unless the user rebinds the name; user calls are
wrapped in `_jst.convert_call` so their callees are converted too, while
builtins that never need it stay plain calls."""
from converter_helpers import convert_src, flat


def test_builtins_and_calls():
    src = flat(convert_src("""
        def f(x, g):
            assert x, 'msg'
            print(len(x), x.shape)
            return g(x), isinstance(x, int), super
    """))
    assert "_jst.convert_assert(x, lambda : 'msg')" in src
    assert "_jst.convert_print(_jst.convert_len(x), _jst.convert_shape(x))" in src
    assert "_jst.convert_call(g)(x)" in src
    assert "isinstance(x, int)" in src and "convert_call(isinstance)" not in src


def test_rebound_builtin_left_alone():
    src = convert_src("""
        def f(x):
            len = lambda v: 0
            return len(x)
    """)
    assert "convert_len" not in src
