"""Activity, liveness and definedness on small snippets: exact sets."""
import ast
import textwrap

from d2s.convert.analysis import annos, analyze_function, reads_writes
from d2s.convert.analysis.activity import free_reads, scope_locals


def _fn(src):
    node = ast.parse(textwrap.dedent(src)).body[0]
    analyze_function(node)
    return node


def _rw(src):
    reads, writes = reads_writes(ast.parse(textwrap.dedent(src)).body)
    return reads, writes


def test_activity_simple_and_augassign():
    assert _rw("x = y + z") == ({"y", "z"}, {"x"})
    assert _rw("x += 1") == ({"x"}, {"x"})
    assert _rw("a[i] = b") == ({"a", "i", "b"}, set())


def test_activity_nested_function_only_free_reads():
    reads, writes = _rw("""
        def g(a, b=d):
            c = a + e
            return c + f
    """)
    assert writes == {"g"}
    assert reads == {"d", "e", "f"}


def test_activity_lambda_and_comprehension():
    assert _rw("h = lambda v: v + w") == ({"w"}, {"h"})
    assert _rw("r = [i * k for i in xs if i]") == ({"k", "xs"}, {"r"})


def test_activity_imports_except_walrus():
    assert _rw("import os.path as p, sys")[1] == {"p", "sys"}
    assert _rw("from m import a as b")[1] == {"b"}
    reads, writes = _rw("""
        try:
            pass
        except E as err:
            q = err
    """)
    assert writes == {"err", "q"} and reads == {"E", "err"}
    assert _rw("if (n := f()): pass") == ({"f"}, {"n"})


def test_scope_locals_and_free_reads():
    node = ast.parse(textwrap.dedent("""
        def f(a, *args, k=1, **kw):
            global G
            nonlocal_x = 1
            G = 2
            return a + outer
    """)).body[0]
    assert scope_locals(node) == {"a", "args", "k", "kw", "nonlocal_x"}
    assert free_reads(node) == {"outer"}


def test_if_outputs_are_modified_and_live():
    fn = _fn("""
        def f(c):
            x = 0
            if c:
                x = 1
                tmp = 2
                y = tmp
            else:
                y = 3
            return x + y
    """)
    if_node = fn.body[1]
    assert getattr(if_node, annos.MODIFIED) == {"x", "tmp", "y"}
    assert getattr(if_node, annos.LIVE_OUT) == {"x", "y"}
    assert getattr(if_node, annos.LIVE_IN) == {"c", "x"}


def test_while_loop_vars_live_head():
    fn = _fn("""
        def f(n):
            i = 0
            s = 0
            while i < n:
                t = i * 2
                s = s + t
                i = i + 1
            return s
    """)
    loop = fn.body[2]
    assert getattr(loop, annos.MODIFIED) == {"t", "s", "i"}
    assert getattr(loop, annos.LIVE_HEAD) == {"i", "n", "s"}
    assert getattr(loop, annos.LIVE_OUT) == {"s"}


def test_for_target_live_only_if_used_after():
    fn = _fn("""
        def f(xs):
            total = 0
            for x in xs:
                total = total + x
            return total
    """)
    loop = fn.body[1]
    assert getattr(loop, annos.LIVE_HEAD) == {"total"}
    fn = _fn("""
        def f(xs):
            for x in xs:
                pass
            return x
    """)
    assert getattr(fn.body[0], annos.LIVE_HEAD) == {"x"}
    assert getattr(fn.body[0], annos.LIVE_IN) == {"x", "xs"}


def test_liveness_in_loop_carried_through_if():
    fn = _fn("""
        def f(n):
            a = 0
            b = 0
            for i in range(n):
                if i > 2:
                    a = b
                b = i
            return a
    """)
    loop = fn.body[2]
    inner_if = loop.body[0]
    assert getattr(inner_if, annos.LIVE_OUT) == {"a", "i"}
    assert getattr(loop, annos.LIVE_HEAD) == {"a", "b"}


def test_definedness_and_maybe_undefined():
    fn = _fn("""
        def f(c, n):
            if c:
                x = 1
            else:
                x = 2
            if c:
                y = 1
            for i in range(n):
                z = i
            return x + y + z + i
    """)
    assert getattr(fn.body[1], annos.DEFINED_IN) == {"c", "n", "x"}
    assert getattr(fn.body[2], annos.DEFINED_IN) == {"c", "n", "x"}
    assert getattr(fn, annos.MAYBE_UNDEFINED) == {"x", "y", "z", "i"}
    assert getattr(fn.body[3], annos.DEFINED_IN) == {"c", "n", "x"}


def test_definedness_raise_branch_defines():
    fn = _fn("""
        def f(c):
            if c:
                raise ValueError()
            else:
                v = 1
            return v
    """)
    assert "v" in getattr(fn.body[1], annos.DEFINED_IN)


def _targets(src):
    fn = _fn(src)
    construct = next(n for n in ast.walk(fn) if isinstance(n, (ast.If, ast.While, ast.For)))
    carried, uncarried = getattr(construct, annos.TARGETS)
    return [label for label, _ in carried], [label for label, *_ in uncarried]


def test_keys_that_only_inner_for_loops_vary_are_found_at_trace_time():
    """`caches[i]["k"]` under `for i in range(layers)` in a tensor loop: the
    runtime finds the items written (runtime.loop_items); a key the loop
    itself changes (`buf[j]`, `j += 1`), a deletion or a call's result are
    refused when the loop is on a tensor."""
    fn = _fn("""
        def f(x, n):
            j = 0
            while x:
                for i in range(n):
                    caches[i]["k"] = x
                buf[j] = x
                j += 1
                del d["t"]
                g(x).attr = 1
    """)
    construct = next(n for n in ast.walk(fn) if isinstance(n, ast.While))
    _, uncarried = getattr(construct, annos.TARGETS)
    assert {label: keyed for label, _, keyed in uncarried} == {
        "caches[i]['k']": True, "buf[j]": False, "d['t']": False, "g(x).attr": False}


def test_targets_carried_with_stable_containers_and_keys():
    assert _targets("""
        def f(x, k):
            while x:
                acc[0] += x
                d["s"], self.h = x, x
                self.cache.items[k] = x
                g(x).attr = 1
                for i in x:
                    buf[i] = x
                    del d["t"]
                    box[1:2] = x
    """) == (["acc[0]", "d['s']", "self.h", "self.cache.items[k]"],
             ["g(x).attr", "buf[i]", "d['t']", "box[1:2]"])


def test_targets_of_containers_the_construct_rebinds_are_its_own():
    # `d` is made inside the branch: nothing outside can see its items.
    assert _targets("""
        def f(x):
            if x:
                d = {}
                d["a"] = x
                o.h = x
    """) == (["o.h"], [])


def test_calls_of_nested_functions_read_and_write_what_they_capture():
    fn = _fn("""
        def f(x):
            y = x
            z = x
            def bump():
                nonlocal y
                y = y + z
            def twice():
                bump()
                bump()
            if x:
                twice()
            return y
    """)
    if_node = next(n for n in fn.body if isinstance(n, ast.If))
    assert getattr(if_node, annos.MODIFIED) == {"y"}
    assert {"y", "z", "twice"} <= getattr(if_node, annos.LIVE_IN)
    assert "y" in getattr(if_node, annos.LIVE_OUT)


def test_memoized_activity_equals_the_plain_walk_on_every_node():
    # Memoized, a compound statement's activity is the union of its parts';
    # every statement and expression must still get exactly the plain sets.
    from d2s.convert.analysis.activity import memoized
    from d2s.convert.traversal import walk
    tree = ast.parse(textwrap.dedent("""
        def f(x, xs):
            k = 0
            for i, (a, b) in enumerate(xs):
                k += a
                if (m := a + b) > k:
                    def g(q=k):
                        nonlocal x
                        x = q + m
                    g()
                    continue
                with open(b) as (fh, gh):
                    acc: int = [j * k for j in fh if j]
                try:
                    del a
                except ValueError as err:
                    z = err
                else:
                    z = lambda t: t + b
                finally:
                    w = 1
                while x < 3:
                    x += 1
                else:
                    import os.path as osp, sys
            match x:
                case [1, *rest] if rest:
                    y = rest
                case {"k": v, **others}:
                    y = others
                case C(u) | (u as y):
                    pass
            return k, y
    """))
    nodes = [n for n in walk(tree) if isinstance(n, (ast.stmt, ast.expr))]
    plain = [reads_writes(n) for n in nodes]
    with memoized():  # innermost first, so outer statements reuse their parts
        memo = [reads_writes(n) for n in reversed(nodes)][::-1]
        again = [reads_writes(n) for n in nodes]
    assert memo == plain and again == plain
    assert plain[1] != (set(), set())   # the def's body: not vacuous


def test_fresh_list_names_are_lists_the_function_creates():
    from d2s.convert.analysis.fresh_lists import fresh_list_names
    fn = ast.parse(textwrap.dedent("""
        def f(self, param, *rest, **kw):
            outs, hs = [], []
            made = [x for x in param] if param else list(param)
            copied = param.copy()
            joined = outs + param
            outs += [1]
            alias = self.cache
            first = param[0]
            called = self.make()
            looped = []
            for looped in param:
                pass
            walrus = []
            if (walrus := param):
                pass
            both = []
            both = param
            both.append(1)
            packed, *tail = [], []
            global g
            g = []

            def inner():
                mine = []
                return mine
            with open(param) as handle:
                pass
    """)).body[0]
    assert fresh_list_names(fn) == {"outs", "hs", "made", "copied", "joined"}
    inner = fn.body[-2]
    assert fresh_list_names(inner) == {"mine"}
