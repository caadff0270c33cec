"""Random converted functions: the source generator of the conversion fuzzer.

`functions(features)` is a hypothesis strategy for a `RandomFunction`: the
source of a module defining `f(x, y, n, p)` (or a Layer whose `forward`
takes those arguments), the inputs to call it with, and how to call it.
`x`, `y` are float vectors, `n` an int64 scalar tensor or a Python int (loop
counts), `p` a Python value (`None` or an int) read by mixed Python/tensor
`and`/`or` chains. Every loop terminates: `while` loops are bounded by a
Python counter (`k < m`, and a tensor test), `for` loops run over `range(n)`,
`range(m)` or the rows of `y`.

The features (`FEATURES`) switch on the statement kinds of issue 8, each one
a case the converter once got wrong:

* `state`: attribute, subscript and dict targets (`acc[0] += ...`,
  `st["s"] = ...`, `box.h = ...`, `self.h = ...` in a Layer, a list inside
  a dict) written and read inside tensor `if`/`while`/`for`.
* `exits`: `break`/`continue`/`return` inside loops, and `nested`: a loop in
  a loop with exits drawn at both levels.
* `walrus`: `:=` in `if` and `while` tests (on either side of an `and`) and
  in plain expressions.
* `returns`: the returned structure (a tensor, tuples, `None` leaves, a list,
  a Python number on some paths, or `None` altogether), the same at every
  `return` of the function, early ones included; loop targets read after
  their loop (`NameError` after zero trips).
* `chains`: `and`/`or` chains mixing tensor tests with Python tests of `p`
  (`x.sum() > t or p is None or p > 1`), in tests and as values.
* `dims`: `x`, `y` given by `InputSpec([None])`, calls of several lengths
  served by one program, feeding shape-building ops (`reshape` with dynamic
  dims and `-1`, `zeros`/`ones`/`full`/`arange`/`expand` with `x.shape[0]`,
  `len(x)`, `b, = x.shape`, `range(x.shape[0])`, tests of `x.shape[0]`).

The generator writes only programs whose static result is defined to equal
the eager one (DESIGN §4): every name a path reads is assigned before on
that path or raises `NameError` in both modes, and every return has the same
structure. Documented build-time errors (a name set in one branch only, a
changing subscript key in a loop, structure mismatches) are not generated.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
from dataclasses import dataclass, field

from hypothesis import strategies as st

FEATURES = ("state", "exits", "nested", "walrus", "returns", "chains", "dims")

_NUM = st.sampled_from([-1.5, -0.75, -0.5, 0.25, 0.5, 0.8, 1.25, 2.0])
_THRESHOLD = st.sampled_from([-2.13, -0.71, -0.13, 0.07, 0.37, 1.09, 2.41])
_P_VALUES = (None, 0, 1, 3)

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
# Python tests of `p` that never raise (a comparison only after `p` is known
# not to be None, as real code guards an optional argument).
_PY_TEST = [
    "p is None",
    "p is not None",
    "(p is None or p > {k})",
    "(p is not None and p < {k})",
    "not p",
    "p == {k}",
]
# Mixed chains: {T}/{U} tensor tests, {P}/{Q} Python tests.
_MIXED = [
    "{T} or p is None or p > {k}",
    "{T} and p is not None and p > {k}",
    "{P} or {T}",
    "{P} and {T}",
    "{T} and {P}",
    "{T} or {P}",
    "({T} or {U}) and {P}",
    "{P} and ({T} or {Q})",
    "not ({T}) or {P}",
    "{P} or {T} and {Q}",
]
_STATE_WRITE = [
    "acc[0] += x * {a}",
    "acc[0] = acc[0] * {a} + y",
    "acc[1] += 1",
    "acc[1] = acc[1] + 1",
    'st["s"] = st["s"] + x * {a}',
    'st["s"] += y.tanh() * {a}',
    'st["c"] += 1',
    'st["v"][1] = st["v"][1] * {a} + x',
    "{box}.h = {box}.h * {a} + x",
    "{box}.h = ({box}.h + y).tanh()",
]
_STATE_READ = [
    "x = x + acc[0] * {a}",
    "x = x + acc[1] * {a}",
    'y = y + st["s"] * {a}',
    'x = x - st["c"] * {a}',
    'y = y + st["v"][1].tanh() * {a}',
    "x = x + {box}.h * {a}",
]
_WALRUS_VALUE = ["x * {a} + {b}", "(x - y) * {a}", "y.tanh() + x * {a}"]
_DIMS_ASSIGN = [
    "x = x + d2s.arange(x.shape[0], dtype=x.dtype) * {a}",
    "x = x + d2s.zeros([x.shape[0]], dtype=x.dtype) + {b}",
    "x = x.reshape([x.shape[0], -1]).sum(1) * {a}",
    "x = x.reshape([-1, 1])[:, 0] + {b}",
    "y = y + d2s.full([y.shape[0]], {a}, dtype=y.dtype)",
    "x = x + x.sum() / x.shape[0]",
    "y = y + d2s.ones([y.shape[0], 2], dtype=y.dtype).sum(1) * {a}",
    "x = x + y[:1].expand([y.shape[0]]) * {a}",
    "x = x + len(y) * {a}",
    "{b_}, = x.shape\n{pad}x = x + {b_} * {a}",
    "{b_} = y.shape[0]\n{pad}y = y + d2s.full([{b_}], {a}, dtype=y.dtype) / {b_}",
]
_DIMS_COND = ["x.shape[0] > {k}", "len(y) < {k}"]


@dataclass
class RandomFunction:
    """One generated case: module source, how to call it, and the inputs."""
    source: str
    layer: bool            # `Net().forward(x, y, n, p)` instead of `f(x, y, n, p)`
    dtype: str             # of x and y
    spec: bool             # x, y given by InputSpec([None]): one program for every length
    n_tensor: bool         # n an int64 tensor (else a Python int: one program per value)
    grad: bool = True      # x, y need gradients: outputs joined to autograd, backward checked
    inputs: list = field(default_factory=list)  # (xs, ys, n, p) tuples
    int_leaves: tuple = ()  # outputs that are int counters on every path

    def __str__(self):
        return (f"{self.source}\n# layer={self.layer} dtype={self.dtype} spec={self.spec} "
                f"n_tensor={self.n_tensor} grad={self.grad}\n# inputs={self.inputs}")


class _Gen:
    """Draws one function's body: `block` recursively, with counters for fresh
    names. `in_loop`: whether a loop encloses the block."""

    def __init__(self, draw, features, box, n_tensor, max_depth=3):
        self.draw, self.on, self.box, self.max_depth = draw, features, box, max_depth
        self.n_tensor = n_tensor
        self.fresh = itertools.count()
        self.returns = self._return_structure() if "returns" in features else "single"
        # Loop targets read after their loop go into `u`, which every return
        # reads: a NameError read in dead code is pruned with it (an open
        # finding), so the read must reach the result.
        self.reads_after = "returns" in features and self.returns != "none"

    # ---- small pieces ----------------------------------------------------------------
    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def num(self):
        return repr(self.draw(_NUM))

    def fmt(self, template, pad=""):
        return template.format(a=self.num(), b=self.num(), c=self.num(), box=self.box,
                               k=self.draw(st.integers(0, 3)),
                               t=repr(self.draw(_THRESHOLD)),
                               b_=f"b{next(self.fresh)}", c_=f"c{next(self.fresh)}", pad=pad)

    def tensor_test(self, walrus=True):
        """A tensor comparison; with `walrus`, sometimes binding `z` by `:=`
        (only where the test is evaluated on every path: `:=` in an operand
        that `and`/`or` may skip is a documented error on tensors)."""
        options = list(_COND) + (list(_DIMS_COND) if "dims" in self.on else [])
        test = self.fmt(self.pick(options))
        if walrus and "walrus" in self.on and self.draw(st.integers(0, 5)) == 0:
            test = f"(z := {self.fmt(self.pick(_WALRUS_VALUE))}).sum() > {self.num()}"
        return test

    def cond(self, depth=0, lead=True):
        """A test; `lead`: it is evaluated on every path (not the lazy operand
        of an `and`/`or`), so its first tensor test may bind `z`."""
        kinds = ["plain", "plain", "and", "or", "not", "chain"]
        if "chains" in self.on:
            kinds += ["mixed", "mixed", "python"]
        kind = self.pick(kinds)
        if kind == "python":
            return self.fmt(self.pick(_PY_TEST))
        if kind == "mixed":
            template = self.pick(_MIXED)
            # `{T}` is evaluated first, or after Python tests only (which Python
            # evaluates while tracing): there it may bind `z`; `{U}` never.
            first = lead and template.lstrip("(not ").startswith(("{T}", "{P}"))
            return template.format(
                T=f"({self.tensor_test(walrus=first)})", U=f"({self.tensor_test(False)})",
                P=self.fmt(self.pick(_PY_TEST)), Q=self.fmt(self.pick(_PY_TEST)),
                k=self.draw(st.integers(0, 3)))
        base = self.tensor_test(walrus=lead)
        if kind == "plain" or depth > 0:
            return base
        if kind == "not":
            return f"not ({base})"
        if kind == "chain":
            lo, hi = sorted([self.draw(_THRESHOLD), self.draw(_THRESHOLD) + 3.0])
            return f"{lo!r} < x.sum() < {hi!r}"
        return f"({base}) {kind} ({self.cond(depth + 1, lead=False)})"

    def assign(self, pad):
        options = list(_ASSIGN)
        if "state" in self.on:
            options += _STATE_WRITE + _STATE_READ
        if "walrus" in self.on:
            options += ["x = x + z * {a}", "y = y + (z := x * {a}) * {b}"]
        if "dims" in self.on:
            options += _DIMS_ASSIGN
        if "chains" in self.on:
            # a mixed chain as a value (a bool tensor or a Python bool), tested later
            options += ["{c_} = {C}\n{pad}x = x * {a} if {c_} else x + {b}"]
        template = self.pick(options)
        if "{C}" in template:
            template = template.replace("{C}", self._value_chain())
        return pad + self.fmt(template, pad)

    def _value_chain(self):
        return self.pick(_MIXED[:2]).format(T=f"({self.fmt(self.pick(_COND))})",
                                            k=self.draw(st.integers(0, 3)))

    # ---- returns ---------------------------------------------------------------------
    def _return_structure(self):
        return self.pick(["single", "pair", "none_leaf", "nested", "number", "none",
                          "state"] if "state" in self.on else
                         ["single", "pair", "none_leaf", "nested", "number", "none"])

    def vector(self):
        options = ["x * {a} + y", "(x - y).tanh() * {a}", "y * {a}", "x + {b}"]
        if "walrus" in self.on:
            options.append("z * {a} + x")
        if "state" in self.on:
            options += ["acc[0] * {a} + x", "{box}.h + y"]
        vector = self.fmt(self.pick(options))
        return f"{vector} + u" if self.reads_after else vector

    def number_leaf(self, in_loop):
        """A leaf that is a Python number on some paths, a scalar tensor on others.
        Inside loops always a tensor: a number returned from a tensor loop that
        a later path promotes has its own tests (tests/jit/test_returned_numbers.py)."""
        if not in_loop and self.draw(st.booleans()):
            return self.pick(["0", "1", "2.5", "-1"])
        return self.fmt(self.pick(["x.sum() * {a}", "(x * y).mean() + {b}"]))

    def ret(self, in_loop=False):
        kind = self.returns
        if kind == "single":
            return f"return {self.vector()}"
        if kind == "pair":
            return f"return {self.vector()}, {self.vector()}"
        if kind == "none_leaf":
            return f"return {self.vector()}, None"
        if kind == "nested":
            return f"return ({self.vector()}, [None, {self.vector()}])"
        if kind == "number":
            return f"return {self.vector()}, {self.number_leaf(in_loop)}"
        if kind == "none":
            return self.pick(["return", "return None"])
        return (f'return {self.vector()}, acc[0], acc[1], st["s"], st["c"], '
                f'{self.box}.h')

    def final_return(self, pad):
        if self.returns == "none" and self.draw(st.booleans()):
            return []  # falls off the end: None
        return [pad + self.ret()]

    # ---- statements ------------------------------------------------------------------
    def block(self, ind, depth, in_loop):
        """1-3 statements at the top, 1-2 in nested blocks (small functions
        convert and build fast: more of them per run)."""
        lines = []
        for _ in range(self.draw(st.integers(1, 3 if depth == 0 else 2))):
            lines += self.statement(ind, depth, in_loop)
        return lines

    def statement(self, ind, depth, in_loop):
        exits = "exits" in self.on or "nested" in self.on
        kinds = ["assign", "assign"]
        if depth < self.max_depth:
            kinds += ["if", "if", "while", "for", "for_rows", "for_py", "ternary"]
            if "walrus" in self.on:
                kinds += ["walrus_if", "walrus_while"]
            if "nested" in self.on:
                kinds += ["nested", "nested"]
        if in_loop and exits:
            kinds += ["break", "continue"]
        if exits or not in_loop:
            kinds += ["return"]
        kind = self.pick(kinds)
        pad = "    " * ind
        if kind == "assign":
            return [self.assign(pad)]
        if kind == "ternary":
            return [pad + f"x = x * {self.num()} if {self.cond()} else y + {self.num()}"]
        if kind in ("break", "continue"):
            return [pad + f"if {self.cond()}:", pad + f"    {kind}"]
        if kind == "return":
            return [pad + f"if {self.cond()}:", pad + "    " + self.ret(in_loop > 0)]
        if kind in ("if", "walrus_if"):
            test = (f"(z := {self.fmt(self.pick(_WALRUS_VALUE))}).sum() > {self.num()}"
                    if kind == "walrus_if" else self.cond())
            lines = [pad + f"if {test}:"] + self.block(ind + 1, depth + 1, in_loop)
            if self.draw(st.booleans()):
                lines.append(pad + f"elif {self.cond()}:")
                lines += self.block(ind + 1, depth + 1, in_loop)
            if self.draw(st.booleans()):
                lines.append(pad + "else:")
                lines += self.block(ind + 1, depth + 1, in_loop)
            return lines
        if kind == "nested":
            return self.loop(ind, depth, "nested")
        return self.loop(ind, depth, kind)

    def loop(self, ind, depth, kind, exit_first=False):
        """A loop statement. `nested`: a loop whose body holds another loop, with
        an exit (break, continue or return) at both levels; `exit_first`: the
        body starts with an exit (after the loop's own counter update)."""
        pad = "    " * ind
        inner = None
        if kind == "nested":
            kind = self.pick(["while", "for", "for_rows", "for_py", "walrus_while"])
            inner = self.pick(["while", "for", "for_rows", "for_py"])
        lines, target = self._loop_header(pad, kind, next(self.fresh))
        if exit_first:
            lines += self._exit(ind + 1)
        if inner is not None:
            outer_exit_first = self.draw(st.booleans())
            if outer_exit_first:
                lines += self._exit(ind + 1)
            lines += self.loop(ind + 1, depth + 1, inner, exit_first=True)
            if not outer_exit_first:
                lines += self._exit(ind + 1)
        lines += self.block(ind + 1, depth + 1, True)
        if target is not None and self.reads_after and self.draw(st.integers(0, 3)) == 0:
            # read after the loop: the last iteration's value, NameError after zero trips
            lines.append(pad + f"u = u + {target} * {self.num()}")
        return lines

    def _exit(self, ind):
        pad = "    " * ind
        kind = self.pick(["break", "continue", "return"])
        return [pad + f"if {self.cond()}:",
                pad + "    " + (self.ret(in_loop=True) if kind == "return" else kind)]

    def _loop_header(self, pad, kind, j):
        """The loop's first lines (counter, header, counter increment) and its
        target name if reading it after the loop can fail after zero trips."""
        if kind in ("while", "walrus_while"):
            k, m = f"k{j}", self.draw(st.integers(1, 4))
            if kind == "walrus_while":
                walrus = f"(z := {self.fmt(self.pick(_WALRUS_VALUE))}).sum() < {self.num()}"
                test = f"{walrus} and {k} < {m}"
            elif "dims" in self.on and self.draw(st.integers(0, 3)) == 0:
                test = f"{k} < x.shape[0] and ({self.cond(1, lead=False)})"
            elif self.draw(st.booleans()):
                # parenthesized: a chain `a or b` after the bound would escape it
                test = f"{k} < {m} and ({self.cond(1, lead=False)})"
            else:
                test = f"({self.cond(1)}) and {k} < {m}"
            step = self.pick([f"{k} = {k} + 1", f"{k} += 1"])
            return [pad + f"{k} = 0", pad + f"while {test}:", pad + "    " + step], None
        if kind == "for":
            i = f"i{j}"
            bound = "n"
            if "dims" in self.on and self.draw(st.integers(0, 2)) == 0:
                bound = "x.shape[0]"  # at least 2 rows
            # Read after the loop only where zero trips are decided at run time:
            # a Python loop's unassigned target read on a path that a tensor
            # test skips is a build-time error (tests/jit/test_loop_targets_and_skipped_reads.py).
            readable = self.n_tensor or bound != "n"
            return [pad + f"for {i} in range({bound}):",
                    pad + f"    x = x + {i} * {self.num()}"], i if readable else None
        if kind == "for_py":
            return [pad + f"for j{j} in range({self.draw(st.integers(0, 3))}):",
                    pad + f"    y = y + j{j} * {self.num()}"], None
        r = f"r{j}"
        return [pad + f"for {r} in y:", pad + f"    x = x + {r} * {self.num()}"], None

    # ---- the whole function ----------------------------------------------------------
    def preamble(self, pad):
        lines = []
        if "state" in self.on:
            lines += [pad + "acc = [x * 0, 0]",
                      pad + 'st = {"s": y * 1.0, "c": 0, "v": [x * 0.5, y * 0.5]}']
            if self.box == "box":
                lines += [pad + "box = Box()"]
            lines += [pad + f"{self.box}.h = x * 1.0"]
        if "walrus" in self.on:
            lines += [pad + "z = x * 0"]
        if self.reads_after:
            lines += [pad + "u = x * 0"]
        return lines


def _module_source(gen, layer):
    header = "import d2s\n\n\n"
    if layer:
        pad = "        "
        body = gen.preamble(pad) + gen.block(2, 0, False) + gen.final_return(pad)
        return (header + "class Net(d2s.nn.Layer):\n"
                "    def forward(self, x, y, n, p):\n" + "\n".join(body) + "\n")
    pad = "    "
    body = gen.preamble(pad) + gen.block(1, 0, False) + gen.final_return(pad)
    return (header + "class Box:\n    pass\n\n\n"
            "def f(x, y, n, p):\n" + "\n".join(body) + "\n")


_X_VALUES = [-1.0, -0.5, 0.0, 0.25, 1.0, 1.5]
_Y_VALUES = [-1.0, -0.25, 0.5, 0.75, 2.0]


@st.composite
def functions(draw, features=FEATURES):
    """A `RandomFunction` using `features` (a subset of FEATURES)."""
    features = frozenset(features)
    layer = "state" in features and draw(st.integers(0, 3)) == 0
    n_tensor = draw(st.integers(0, 3)) > 0
    gen = _Gen(draw, features, "self" if layer else "box", n_tensor)
    source = _module_source(gen, layer)
    spec = "dims" in features and draw(st.booleans())
    dtype = draw(st.sampled_from(["float64", "float64", "float32"]))
    inputs = []
    for _ in range(draw(st.integers(2, 3))):
        length = draw(st.integers(2, 4)) if spec else 3
        xs = draw(st.lists(st.sampled_from(_X_VALUES), min_size=length, max_size=length))
        ys = draw(st.lists(st.sampled_from(_Y_VALUES), min_size=length, max_size=length))
        p = draw(st.sampled_from(_P_VALUES)) if "chains" in features else None
        inputs.append((xs, ys, draw(st.integers(0, 4)), p))
    int_leaves = (2, 4) if gen.returns == "state" else ()  # acc[1], st["c"]
    grad = draw(st.integers(0, 3)) > 0
    return RandomFunction(source, layer, dtype, spec, n_tensor, grad, inputs, int_leaves)


_COUNTER = itertools.count()


def load(case, directory):
    """Write `case.source` to a real file (conversion reads source from files),
    import it, and return a factory of fresh callables: `f` itself, or a new
    `Net()` (a Layer keeps state on itself, so each use gets its own)."""
    path = os.path.join(directory, f"random_fn_{next(_COUNTER)}.py")
    with open(path, "w") as fh:
        fh.write(case.source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if case.layer:
        return module.Net
    return lambda: module.f
