"""What converted code calls (imported there as `_jst`); re-exports every helper.

Each helper keeps Python semantics for Python values and eager Tensors and
builds static control flow for static Variables (one rule: `_is_static`).
"""
from .builtins_ import (convert_all, convert_any, convert_assert, convert_fstring,
                        convert_isinstance, convert_percent, convert_str_format,
                        convert_len, convert_max, convert_min, convert_print, convert_raise,
                        convert_reversed, convert_shape, convert_size,
                        convert_sum)
from .call import convert_call
from .casts import convert_bool, convert_float, convert_int, convert_item, convert_numpy
from .control_flow import (ReturnSlots, check_caught, convert_for, convert_ifelse,
                           convert_ifelse_expr, convert_while_loop)
from .dispatch import _is_static
from .gradients import set_stop_gradient
from .items import (inplace_call, inplace_call_held, inplace_on_item, make_slice, set_item,
                    set_nested)
from .iteration import convert_enumerate, convert_range, convert_zip
from .lists import (convert_list_append, convert_list_concat, convert_list_extend,
                    convert_list_extend_call, convert_reached_list_call, checked_method,
                    convert_list_insert, convert_list_pop, convert_list_reverse,
                    new_container)
from .subscripts import convert_subscript
from .logical import (comprehension_test, convert_compare_chain, convert_contains,
                      convert_logical_and,
                      convert_logical_not, convert_logical_or, python_test_only)
from .reads import convert_getattr, convert_hasattr, note_function, read_attr, read_item
from .targets import load_attr, load_item, store_attr, store_item
from .try_bodies import try_body
from .undefined import UndefinedVar, ld, return_value

__all__ = [
    "check_caught", "checked_method", "convert_list_pop", "convert_list_reverse", "comprehension_test", "new_container",
    "convert_all", "convert_any", "convert_bool", "convert_float", "convert_int", "convert_item", "convert_numpy", "convert_max", "convert_min", "convert_assert", "convert_call", "convert_compare_chain", "convert_contains", "convert_enumerate",
    "convert_for", "convert_getattr", "convert_hasattr", "convert_ifelse", "convert_isinstance",
    "convert_list_append",
    "convert_list_extend", "convert_list_extend_call", "convert_list_concat",
    "convert_list_insert",
    "convert_reached_list_call",
    "convert_ifelse_expr", "convert_len",
    "convert_logical_and", "convert_logical_not", "convert_logical_or", "convert_print",
    "convert_fstring", "convert_percent", "convert_str_format",
    "convert_raise", "convert_range", "convert_subscript", "convert_reversed", "convert_shape",
    "convert_size", "convert_sum",
    "convert_while_loop", "convert_zip",
    "note_function", "python_test_only", "read_attr", "read_item", "ReturnSlots",
    "UndefinedVar", "ld", "load_attr", "load_item",
    "inplace_call", "inplace_call_held", "inplace_on_item", "make_slice", "return_value",
    "set_item", "set_nested", "set_stop_gradient", "store_attr", "store_item", "try_body",
]
