"""Property test: random small functions with nested tensor control flow.

Hypothesis writes the source of a function `f(x, y, n)` (x, y float64
vectors, n an int64 scalar) with nested `if`/`elif`/`else`, ternaries,
`and`/`or`/`not`, `while` loops bounded by a Python counter (`k < m` AND a
tensor condition, so every loop terminates), `for i in range(n)`, `for r in y`, `break`,
`continue` and `return`, saves it to a real file (conversion reads source
from files), imports it, and checks that `to_static(f)` gives the same
result (values, shape, dtype) as the eager original on random inputs.
"""
import atexit
import importlib.util
import itertools
import os
import shutil
import tempfile

import numpy as np
import pytest

import d2s

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_DIR = tempfile.mkdtemp(prefix="d2s_random_fns_")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_COUNTER = itertools.count()

_NUM = st.sampled_from([-1.5, -0.75, -0.5, 0.25, 0.5, 0.8, 1.25, 2.0])
_THRESHOLD = st.sampled_from([-2.13, -0.71, -0.13, 0.07, 0.37, 1.09, 2.41])

_ASSIGN = [
    "x = x * {a} + {b}",
    "y = y + x * {a}",
    "x = (x - y).tanh() * {c}",
    "y = y * {a} - {b}",
    "x = x + y.sum() * {a}",
    "y = (y * x).tanh() + {b}",
]
_COND = [
    "x.sum() > {t}",
    "(x * y).mean() < {t}",
    "y.max() > {t}",
    "x[0] < y[1] + {t}",
]


class _Gen:
    """Draws one random function's source; `exits` allows break/continue and
    `return` inside loops (not only in `if`s outside loops)."""

    def __init__(self, draw, exits, max_depth=3):
        self.draw, self.exits, self.max_depth = draw, exits, max_depth
        self.loops = 0

    def num(self):
        return repr(self.draw(_NUM))

    def cond(self, depth=0):
        kind = self.draw(st.sampled_from(["plain", "plain", "and", "or", "not", "chain"]))
        base = self.draw(st.sampled_from(_COND)).format(t=repr(self.draw(_THRESHOLD)))
        if kind == "plain" or depth > 0:
            return base
        if kind == "not":
            return f"not ({base})"
        if kind == "chain":
            lo, hi = sorted([self.draw(_THRESHOLD), self.draw(_THRESHOLD) + 3.0])
            return f"{lo!r} < x.sum() < {hi!r}"
        return f"({base}) {kind} ({self.cond(depth + 1)})"

    def assign(self):
        return self.draw(st.sampled_from(_ASSIGN)).format(a=self.num(), b=self.num(),
                                                          c=self.num())

    def ret(self):
        return f"return x * {self.num()} + y"

    def block(self, ind, depth, in_loop):
        lines = []
        for _ in range(self.draw(st.integers(1, 3))):
            kinds = ["assign", "assign"]
            if depth < self.max_depth:
                kinds += ["if", "if", "while", "for", "for_rows", "ternary"]
            if in_loop and self.exits:
                kinds += ["break", "continue"]
            if self.exits or not in_loop:
                kinds += ["return"]
            kind = self.draw(st.sampled_from(kinds))
            pad = "    " * ind
            if kind == "assign":
                lines.append(pad + self.assign())
            elif kind == "ternary":
                lines.append(pad + f"x = x * {self.num()} if {self.cond()} else y + {self.num()}")
            elif kind in ("break", "continue"):
                lines.append(pad + f"if {self.cond()}:")
                lines.append(pad + f"    {kind}")
            elif kind == "return":
                lines.append(pad + f"if {self.cond()}:")
                lines.append(pad + "    " + self.ret())
            elif kind == "if":
                lines.append(pad + f"if {self.cond()}:")
                lines += self.block(ind + 1, depth + 1, in_loop)
                if self.draw(st.booleans()):
                    lines.append(pad + f"elif {self.cond()}:")
                    lines += self.block(ind + 1, depth + 1, in_loop)
                if self.draw(st.booleans()):
                    lines.append(pad + "else:")
                    lines += self.block(ind + 1, depth + 1, in_loop)
            elif kind == "while":
                k = f"k{self.loops}"
                self.loops += 1
                m = self.draw(st.integers(1, 4))
                lines.append(pad + f"{k} = 0")
                if self.draw(st.booleans()):
                    lines.append(pad + f"while {k} < {m} and {self.cond(1)}:")
                else:
                    lines.append(pad + f"while ({self.cond(1)}) and {k} < {m}:")
                lines.append(pad + f"    {k} = {k} + 1")
                lines += self.block(ind + 1, depth + 1, True)
            elif kind == "for":
                i = f"i{self.loops}"
                self.loops += 1
                lines.append(pad + f"for {i} in range(n):")
                lines.append(pad + f"    x = x + {i} * {self.num()}")
                lines += self.block(ind + 1, depth + 1, True)
            elif kind == "for_rows":
                r = f"r{self.loops}"
                self.loops += 1
                lines.append(pad + f"for {r} in y:")
                lines.append(pad + f"    x = x + {r} * {self.num()}")
                lines += self.block(ind + 1, depth + 1, True)
        return lines

    def function(self):
        body = self.block(1, 0, False)
        return "def f(x, y, n):\n" + "\n".join(body) + "\n    return x * 0.5 + y\n"


@st.composite
def _sources(draw, exits):
    return _Gen(draw, exits).function()


_INPUT = st.tuples(
    st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.25, 1.0, 1.5]), min_size=3, max_size=3),
    st.lists(st.sampled_from([-1.0, -0.25, 0.5, 0.75, 2.0]), min_size=3, max_size=3),
    st.integers(0, 4),
)


def _load(source):
    path = os.path.join(_DIR, f"random_fn_{next(_COUNTER)}.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def _check(source, inputs):
    note(source)
    f = _load(source)
    sf = d2s.jit.to_static(f)
    for xs, ys, n in inputs:
        args = (np.array(xs, np.float64), np.array(ys, np.float64), np.array(n, np.int64))
        eager = f(*(d2s.to_tensor(a) for a in args))
        static = sf(*(d2s.to_tensor(a) for a in args))
        note(f"inputs {xs} {ys} {n}: eager {eager.numpy()} static {static.numpy()}")
        assert static.dtype == eager.dtype and static.shape == eager.shape
        np.testing.assert_allclose(static.numpy(), eager.numpy(), rtol=1e-5, atol=1e-9)
    assert len(sf.program_cache) == 1  # one program served every input


_SETTINGS = dict(max_examples=40, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(**_SETTINGS)
@given(source=_sources(exits=False), inputs=st.lists(_INPUT, min_size=2, max_size=3))
def test_random_nested_if_while_for_with_returns_outside_loops(source, inputs):
    _check(source, inputs)


@settings(**_SETTINGS)
@given(source=_sources(exits=True), inputs=st.lists(_INPUT, min_size=2, max_size=3))
def test_random_nested_control_flow_with_break_continue_and_return_in_loops(source, inputs):
    _check(source, inputs)


def test_generated_functions_run_as_plain_python():
    # the generator's own sanity: a fixed sample is valid Python that terminates
    src = ("def f(x, y, n):\n    k0 = 0\n    while k0 < 3 and x.sum() < 2.41:\n"
           "        k0 = k0 + 1\n        x = x * 1.25 + 0.5\n        if y.max() > 0.07:\n"
           "            break\n    return x * 0.5 + y\n")
    f = _load(src)
    args = [d2s.to_tensor(np.array(v, np.float64)) for v in ([0.0, 0.25, 1.0], [0.5, 2.0, -1.0])]
    out = f(*args, d2s.to_tensor(np.array(2, np.int64)))
    np.testing.assert_allclose(out.numpy(), np.array([0.25, 0.40625, 0.875]) + [0.5, 2.0, -1.0])
