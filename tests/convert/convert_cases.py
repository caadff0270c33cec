"""Small Python functions covering every converted construct.

Each entry of CASES is (function, list of argument tuples); the tests check
that the converted function returns the same value, raises the same
exception type and mutates its arguments the same way as the original.
"""
import functools

CASES = []


def case(*inputs):
    def register(fn):
        CASES.append((fn, list(inputs)))
        return fn
    return register


# ---- if / elif / else -------------------------------------------------------

@case((1,), (-1,), (0,))
def if_else(x):
    if x > 0:
        y = 1
    else:
        y = -1
    return y


@case((5,), (15,), (25,), (-3,))
def if_elif_else(x):
    if x < 0:
        kind = "neg"
    elif x < 10:
        kind = "small"
    elif x < 20:
        kind = "medium"
    else:
        kind = "large"
    return kind


@case((1, 2), (-1, 2), (1, -2), (-1, -2))
def nested_ifs(a, b):
    r = 0
    if a > 0:
        if b > 0:
            r = 1
        else:
            r = 2
        r += 10
    else:
        if b > 0:
            r = 3
    return r


@case((3,), (-3,))
def if_without_else_modifies_param(x):
    if x < 0:
        x = -x
    return x


@case((True,), (False,))
def if_defines_in_one_branch_only(flag):
    if flag:
        z = 42
    return z


@case((True,), (False,))
def if_defines_unused(flag):
    if flag:
        tmp = 1
        out = tmp + 1
    else:
        out = 0
    return out


@case((2,), (-2,))
def if_multiple_outputs(x):
    a, b = 0, 0
    if x > 0:
        a = x
        b = x * 2
    else:
        a, b = -x, x
    return a, b


@case((1,), (0,))
def if_with_raise(x):
    if x == 0:
        raise ValueError("x must be non-zero")
    else:
        y = 10 // x
    return y


@case(([1, 2],), ([],))
def if_on_list_truthiness(xs):
    if xs:
        first = xs[0]
    else:
        first = None
    return first


@case((3,), (0,))
def if_read_then_write_in_branch(x):
    y = 5
    if x:
        y = y + x
    return y


@case((3,), (-3,))
def if_inner_nested_outputs(x):
    if x > 0:
        if x > 1:
            t = 1
        else:
            t = 2
        r = t * 10
    else:
        r = 0
    return r


# ---- ternary ----------------------------------------------------------------

@case((1,), (-1,))
def ternary(x):
    return "pos" if x > 0 else "nonpos"


@case((0,), (5,), (-5,))
def nested_ternary(x):
    return 0 if x == 0 else (1 if x > 0 else -1)


@case(([],), ([1],))
def ternary_lazy(xs):
    return xs[0] if xs else None


# ---- while ------------------------------------------------------------------

@case((0,), (1,), (10,))
def while_sum(n):
    i, s = 0, 0
    while i < n:
        s += i
        i += 1
    return s


@case((10,), (3,), (0,))
def while_break(n):
    i = 0
    while True:
        if i >= n:
            break
        i += 2
    return i


@case((10,), (0,))
def while_continue(n):
    i, s = 0, 0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        s += i
    return s


@case((10,), (2,))
def while_else(n):
    i = 0
    while i < n:
        if i == 5:
            break
        i += 1
    else:
        i = -1
    return i


@case((4,), (0,))
def while_temp_not_live(n):
    i = 0
    acc = []
    while i < n:
        t = i * i
        acc.append(t)
        i += 1
    return acc


# ---- for --------------------------------------------------------------------

@case((5,), (0,))
def for_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


@case((10, 0, -2), (0, 10, -1), (5, -5, -3))
def for_range_negative_step(a, b, step):
    out = []
    for i in range(a, b, step):
        out.append(i)
    return out


@case((["a", "b", "c"],), ([],))
def for_enumerate(items):
    out = []
    for i, item in enumerate(items):
        out.append(f"{i}:{item}")
    return out


@case(([1, 2, 3], [4, 5, 6]), ([1], []))
def for_zip(xs, ys):
    s = 0
    for x, y in zip(xs, ys):
        s += x * y
    return s


@case(([1, 2], [(3, 4), (5, 6)]),)
def for_enumerate_zip_nested_target(xs, pairs):
    out = []
    for i, (x, (a, b)) in enumerate(zip(xs, pairs)):
        out.append(i + x + a * b)
    return out


@case((3, 4), (0, 2))
def nested_loops(n, m):
    total = 0
    for i in range(n):
        for j in range(m):
            total += i * j
    return total


@case((5,), (3,))
def for_target_after_loop(n):
    for i in range(n):
        pass
    return i


@case((0,), (2,))
def zero_trip_loop_name_error(n):
    for i in range(n):
        last = i
    return last


@case((10,), (3,))
def for_break(n):
    found = -1
    for i in range(n):
        if i * i > 10:
            found = i
            break
    return found


@case((10,),)
def for_continue(n):
    out = []
    for i in range(n):
        if i % 2:
            continue
        out.append(i)
    return out


@case((5,), (20,))
def for_else(n):
    for i in range(n):
        if i == 7:
            r = "broke"
            break
    else:
        r = "completed"
    return r


@case(([1, 2, 3],), ([],))
def for_over_list_mutates(xs):
    for i in range(len(xs)):
        xs[i] = xs[i] * 10
    return xs


@case((4,),)
def for_break_in_nested_inner_only(n):
    pairs = []
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            pairs.append((i, j))
    return pairs


@case(("hello",),)
def for_over_string(s):
    out = ""
    for ch in s:
        out = ch + out
    return out


@case(({"a": 1, "b": 2},),)
def for_over_dict_items(d):
    keys, total = [], 0
    for k, v in d.items():
        keys.append(k)
        total += v
    return keys, total


@case((3,),)
def loop_var_read_before_write(n):
    prev, cur = 0, 1
    for _ in range(n):
        prev, cur = cur, prev + cur
    return cur


# ---- early return -------------------------------------------------------------

@case((1,), (-1,), (0,))
def return_in_if(x):
    if x > 0:
        return "pos"
    if x < 0:
        return "neg"
    return "zero"


@case((1,), (-1,))
def return_in_if_falls_off(x):
    if x > 0:
        return x


@case(([3, 5, 7], 5), ([3, 5, 7], 4))
def return_in_for(xs, target):
    for i, x in enumerate(xs):
        if x == target:
            return i
    return -1


@case((10,), (0,))
def return_in_while(n):
    i = 0
    while i < n:
        if i * i >= n:
            return i
        i += 1
    return None


@case((3,), (10,))
def return_in_nested_loops(n):
    for i in range(n):
        for j in range(n):
            if i * j == 6:
                return i, j
    return None


@case((1,), (2,))
def return_in_else_with_code_after(x):
    y = 0
    if x == 1:
        y = 10
    else:
        return -1
    y += 1
    return y


# ---- and / or / not / comparisons ---------------------------------------------

@case((0, 1), (1, 0), (2, 3), (None, 5))
def and_or_values(a, b):
    return (a and b), (a or b), (not a)


@case((True,), (False,))
def and_short_circuit_side_effect(flag):
    log = []

    def touch(v):
        log.append(v)
        return v

    r = touch(flag) and touch("rhs")
    s = touch(flag) or touch("rhs2")
    return r, s, log


@case((1, 2, 3), (3, 2, 1), (1, 1, 1))
def chained_comparison(a, b, c):
    return a < b < c, a <= b <= c, a == b == c


@case(([],),)
def chained_comparison_single_evaluation(log):
    def mid():
        log.append("mid")
        return 2
    return 1 < mid() < 3, log


@case((5,), (50,), (-5,))
def condition_with_and_in_if(x):
    if x > 0 and x < 10:
        r = "in"
    elif not x > 0 or x > 100:
        r = "neg-or-huge"
    else:
        r = "big"
    return r


@case(([1, 2], 1), ([1, 2], 5))
def in_operator(xs, v):
    return v in xs, v not in xs


# ---- builtins -------------------------------------------------------------------

@case(([1, 2, 3],), ([],))
def len_builtin(xs):
    return len(xs) * 2


@case((3,),)
def print_builtin(x):
    print("value", x, sep="=")
    return x


@case((1,), (-1,))
def assert_with_message(x):
    assert x > 0, f"x={x} must be positive"
    return x


@case((1,), (0,))
def assert_without_message(x):
    assert x
    return x


class _Comparable:
    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)


class _Shaped(_Comparable):
    shape = (2, 3)


@case((_Shaped(),),)
def shape_attribute(obj):
    return obj.shape[0] * obj.shape[1]


# ---- functions, closures, calls ---------------------------------------------------

@case((3,),)
def nested_function(n):
    def square(v):
        if v > 1:
            return v * v
        return v
    return [square(i) for i in range(n)]


@case((5,),)
def closure_counter(n):
    count = 0

    def bump():
        nonlocal count
        if count < 3:
            count += 1

    for _ in range(n):
        bump()
    return count


def _make_adder(k):
    def add(x):
        if x > 0:
            return x + k
        return x - k
    return add


_ADD5 = _make_adder(5)


@case((1,), (-1,))
def call_closure_from_module(x):
    return _ADD5(x)


def _fact(n):
    if n <= 1:
        return 1
    return n * _fact(n - 1)


@case((0,), (5,))
def recursion_via_convert_call(n):
    return _fact(n)


@case((1,), (1, 2), (1, 2, 3))
def default_args(a, b=10, c=None):
    if c is None:
        c = a + b
    return a, b, c


@case((1, 2, 3), ())
def star_args(*args, **kwargs):
    total = 0
    for a in args:
        total += a
    return total, sorted(kwargs)


def _kw_only(a, *, scale=2):
    return a * scale if a else -1


@case((3,), (0,))
def call_kwonly(x):
    return _kw_only(x), _kw_only(x, scale=5)


class Accumulator:
    def __init__(self):
        self.total = 0

    def add(self, values):
        for v in values:
            if v > 0:
                self.total += v
        return self.total


@case(([1, -2, 3],),)
def method_call(values):
    acc = Accumulator()
    return acc.add(values), acc.total


@case(([1, 2, 3],), ([],))
def list_mutation_side_effect(xs):
    if xs:
        xs.append(len(xs))
    while len(xs) < 3:
        xs.append(0)
    return None


@case((3,),)
def lambda_inside(n):
    f = lambda v: v * 2 if v > 1 else v  # noqa: E731
    return [f(i) for i in range(n)]


@case((4,),)
def partial_call(n):
    p = functools.partial(_kw_only, scale=3)
    return p(n)


@case((2,), (7,))
def try_except_in_loop(n):
    out = []
    for i in range(n):
        try:
            if i == 5:
                raise KeyError(i)
            out.append(i)
        except KeyError:
            out.append("k")
            break
    return out


@case((3,), (-3,))
def with_statement_inside_if(n):
    import contextlib
    log = []
    if n > 0:
        with contextlib.suppress(ZeroDivisionError):
            log.append(1 / (n - 3))
    return log


@case((2,), (-2,))
def import_in_branch(x):
    if x > 0:
        import math as m
        r = m.sqrt(x * x)
    else:
        r = 0.0
    return r


@case((4,), (0,))
def del_in_branch(x):
    y = x
    if x > 2:
        del y
        y = "deleted"
    return y


@case((3,),)
def walrus_in_condition(n):
    out = []
    i = 0
    while (j := i * 2) < n * 2:
        out.append(j)
        i += 1
    return out


@case((3, {"a": 1}), (0, {}), (2, {"b": 5}))
def subscript_and_attribute_targets_in_branches_and_loops(n, d):
    class Box:
        pass
    box = Box()
    box.total = 0
    buf = [0] * 4
    i = 0
    while i < n:
        box.total += i
        buf[i] = i * i
        d["seen"] = i
        i += 1
    if n > 1:
        d["big"] = True
        del d["seen"]
    elif "b" in d:
        box.extra = d.pop("b")
    return box.total, buf, sorted(d.items()), getattr(box, "extra", None)


@case((3,), (0,))
def comprehension_with_condition(n):
    return [i for i in range(n) if i % 2 == 0 and i > 0]


@case((1,), (2,))
def global_read_in_branch(x):
    if x == 1:
        r = _GLOBAL_CONST
    else:
        r = -_GLOBAL_CONST
    return r


_GLOBAL_CONST = 7


@case((1,), (0,))
def class_definition_inside(x):
    class Box:
        def __init__(self, v):
            self.v = v
    b = Box(x)
    if b.v:
        return "yes"
    return "no"


class Base(_Comparable):
    def describe(self):
        return "base"


class Derived(Base):
    def describe(self):
        if True:
            return "derived+" + super().describe()


@case((Derived(),),)
def zero_arg_super(obj):
    return obj.describe()


@case((5,),)
def while_nested_in_for_with_break_continue(n):
    out = []
    for i in range(n):
        j = 0
        while True:
            j += 1
            if j > i:
                break
            if j % 2:
                continue
            out.append((i, j))
    return out


class _Private(_Comparable):
    def __init__(self):
        self.__hidden = 3

    def reveal(self, k):
        if k > 0:
            return self.__hidden * k
        return self.__helper()

    def __helper(self):
        return -self.__hidden


@case((1,), (0,))
def private_name_mangling(k):
    return _Private().reveal(k)


@case((3,), (0,))
def plus_equals_list_literal_in_loop(n):
    out = []
    alias = out
    for i in range(n):
        out += [i, i * i]
    return out, alias is out  # a list extends in place, as Python's `+=` does


@case((2,), (0,))
def plus_equals_list_literal_on_a_tuple_and_a_number(n):
    t = ()
    s = 0
    for i in range(n):
        t = t + (i,)
        s += [i]  # TypeError, as in Python (the loop must run once)
    return t, s


@case((1,), (2.5,), ("a",), ([1],), (None,))
def isinstance_keeps_python_semantics(x):
    kinds = []
    if isinstance(x, (int, float)):
        kinds.append("number")
    if isinstance(x, str | list):
        kinds.append("str or list")
    if not isinstance(x, object):
        kinds.append("never")
    return kinds


@case((1,),)
def isinstance_with_a_bad_class_raises(x):
    return isinstance(x, 3)


@case(([(1, 2), (3, 4)],), ([],))
def for_unpacks_pairs(pairs):
    total = 0
    for a, b in pairs:
        total += a * b
    return total


@case((3,), (3.0,), ("3",))
def range_of_a_non_int_raises_type_error(n):
    return [i for i in range(n)]
