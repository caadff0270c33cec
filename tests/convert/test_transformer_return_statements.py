"""The `return_statements` converter
(`d2s/convert/transformers/return_statements.py`): a `return` inside a
branch or loop becomes a flag and a value with one exit at the end, and the
roles of those names go to the runtime as `ReturnSlots` (never guessed from
generated names)."""
from converter_helpers import convert_src, flat


def test_return_single_exit():
    src = convert_src("""
        def f(x):
            if x:
                return 1
            return 2
    """)
    assert src.count("return _jst.return_value(__ret_val_0)") == 1
    assert "__ret_flag_0 = True" in src


def test_return_roles_are_passed_to_the_runtime_not_spelled():
    src = flat(convert_src("""
        def f(x):
            y = 0
            if x:
                return 1
            y = x * 2
    """))
    slots = ("returns=_jst.ReturnSlots('__ret_flag_0', '__ret_val_0', \"the value returned "
             "by 'f' (return at line 5 and None at its end)\")")
    assert src.count(slots) == 2  # the `if x` and the `if not __ret_flag_0` guard
    assert "__ret_val_0 = None" in src  # falling off the end returns None


def test_no_none_at_the_end_when_every_path_returns():
    src = convert_src("""
        def f(x):
            if x:
                return 1
            while True:
                if x:
                    return 2
    """)
    assert "__ret_val_0 = None" not in src
