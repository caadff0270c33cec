"""Every op a program can hold has every interpretation, and control-flow ops
are declared in one place (`d2s.static.control_ops`) that the executors,
passes, printing, serialization and backends read instead of restating it."""
import ast
import pathlib
import re
import warnings

import numpy as np
import pytest

import d2s
import d2s.backends.xla.rules  # noqa: F401  (each target registers its own ops' rules)
import d2s.onnx.rules  # noqa: F401
from d2s.core.registry import OPS, NotLowerable
from d2s.jit.serialization import AttrEncoder, program_from_json, program_to_json
from d2s.static import Executor, control_ops
from d2s.static.backward import BackwardProgram
from d2s.static.control_ops import CONTROL_OPS, ControlOpDef, register_control_op

PKG = pathlib.Path(d2s.__file__).resolve().parent
# Backends that lower whole programs, and the ONNX exporter: their rules go in
# the same `lowerings` slot (`.lowering(xla=rule, onnx=rule)`).
BACKENDS = ("xla", "onnx")


def missing_interpretations(op_type):
    """What an op type lacks among: running on the interpreter, compiled code,
    a load-time shape rule or attribute layout, and a lowering (or a reason)
    per backend."""
    decl = CONTROL_OPS.get(op_type)
    opdef = decl or OPS.get(op_type)
    if opdef is None:
        return ["a declaration"]
    missing = []
    if decl is None:
        if not callable(opdef.kernel):
            missing.append("a kernel (interpreter and compiled code)")
        if not callable(opdef.infer):
            missing.append("a shape rule")
    else:
        if not callable(decl.interpret):
            missing.append("interpret")
        if not callable(decl.lowerings.get("numpy", decl.emit)):  # compiled code
            missing.append("emit (a numpy rule)")
    for backend in BACKENDS:
        rule = opdef.lowerings.get(backend)
        if not (callable(rule) or isinstance(rule, NotLowerable) and rule.reason.strip()):
            missing.append(f"an {backend} lowering or NotLowerable(reason)")
    return missing


@pytest.mark.parametrize("op_type", sorted(set(OPS) | set(CONTROL_OPS)))
def test_every_op_type_has_every_interpretation(op_type):
    assert missing_interpretations(op_type) == []


def test_control_ops_are_not_core_ops():
    assert not set(CONTROL_OPS) & set(OPS)
    assert {"cond", "cond_grad", "while", "while_grad", "undefined", "raise"} <= set(CONTROL_OPS)


def test_the_check_sees_a_missing_lowering():
    probe = register_control_op(ControlOpDef("_probe", lambda *a: None, lambda *a: None))
    try:
        assert missing_interpretations("_probe") == ["an xla lowering or NotLowerable(reason)",
                                                     "an onnx lowering or NotLowerable(reason)"]
        probe.lowering(xla=NotLowerable("a probe"))
        assert missing_interpretations("_probe") == ["an onnx lowering or NotLowerable(reason)"]
        probe.lowering(onnx=lambda ex, op, graph, env: None)
        assert missing_interpretations("_probe") == []
        with pytest.raises(ValueError, match="already registered"):
            register_control_op(ControlOpDef("_probe", None, None))
    finally:
        del CONTROL_OPS["_probe"]


# ---- programs holding every control-flow op ------------------------------------------
class _Net(d2s.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = d2s.nn.Linear(2, 2)

    def forward(self, x, n):
        rows = []
        i = 0
        while i < n:
            last = self.fc(x) * (i + 1)   # first assigned in the loop: `undefined`
            rows.append(last)             # a tensor array
            i += 1
        if x.sum() > 1000.0:
            raise ValueError("too large")  # `raise` in a branch
        if n > 0:
            return rows[-1] * 2.0 + last
        return x * 2.0


@pytest.fixture(scope="module")
def built():
    """The layer, its forward program with inputs and outputs, and its gradient program."""
    d2s.seed(0)
    net = d2s.jit.to_static(_Net())
    x, n = d2s.to_tensor(np.ones((3, 2), np.float32)), d2s.to_tensor(2)
    concrete = net.forward.get_concrete_program(x, n)
    forward = concrete.main_program
    params = [forward._captured_ids[id(t)] for t in forward.captured.values()]
    grad = BackwardProgram(forward, concrete.outputs, concrete.inputs[:1] + params).program
    return net, concrete, grad


@pytest.fixture(scope="module")
def programs(built):
    _, concrete, grad = built
    return concrete.main_program, grad


def _returns_a_number_from_a_loop(x, n):
    for i in range(n):
        if x.sum() > 100.0:
            return 7  # a weak int64, undefined until the loop returns
    return x.sum()  # promotes it: `cast_if_defined` on the path passing it on


@pytest.fixture(scope="module")
def promoted():
    fn = d2s.jit.to_static(_returns_a_number_from_a_loop)
    x = d2s.to_tensor(np.ones(3, np.float32))
    return fn.get_concrete_program(x, d2s.to_tensor(2))


class _Double(d2s.autograd.PyLayer):  # `py_layer`
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, dy):
        return dy * 2.0


def _first_assigned_in_loop(x, n):
    i = 0
    while i < n:
        y = x * 2.0  # may hold no value, of unknown rows: `zeros_if_defined` in its gradient
        i += 1
    return _Double.apply(x).sum() + y.sum() * 0.0


@pytest.fixture(scope="module")
def unknown_rows():
    prog = d2s.static.Program()
    with d2s.static.program_guard(prog):
        x = d2s.static.data("x", [None], "float32")
        n = d2s.static.data("n", [], "int64")
        d2s.static.gradients(d2s.jit.to_static(_first_assigned_in_loop)(x, n), [x])
    return prog


def test_the_programs_hold_every_control_op(programs, promoted, unknown_rows):
    types = {op.type for p in programs + (promoted.main_program, unknown_rows)
             for op in p.all_ops()}
    assert set(CONTROL_OPS) <= types
    assert types <= set(OPS) | set(CONTROL_OPS)


def test_control_ops_carry_only_declared_attributes(programs):
    for program in programs:
        for op in program.all_ops():
            decl = CONTROL_OPS.get(op.type)
            if decl is not None:
                assert set(op.attrs) <= set(decl.attrs), op.type
                assert set(decl.blocks + decl.results + decl.values) <= set(op.attrs), op.type


def test_ir_printing_and_serialization_agree_on_sub_blocks(programs):
    forward, grad = programs
    for program in programs:
        text = str(program)
        for op in program.all_ops():
            blocks = [b.idx for b in op.sub_blocks()]
            assert blocks == control_ops.sub_block_ids(op)
            for key, idx in control_ops.sub_block_attrs(op):
                assert f"{key} (block {idx}):" in text
                assert f"{key}=" not in text
    doc = program_to_json(forward, forward.global_block().ops, AttrEncoder())
    assert len(doc) == len(forward.blocks)  # sub-blocks and loop scopes all travel
    assert _without_params(program_from_json(doc, {})) == _without_params(forward)


def _without_params(program):
    """The printed program without its parameter list (load binds parameters)."""
    return [line for line in str(program).splitlines() if not line.startswith("  param ")]


def test_saved_scopes_never_reach_a_file(programs):
    _, grad = programs
    runtime = {a for d in CONTROL_OPS.values() for a in d.runtime_attrs}
    assert any(runtime & set(op.attrs) for op in grad.all_ops())
    text = repr(program_to_json(grad, grad.global_block().ops, AttrEncoder()))
    assert not any(f"'{a}'" in text for a in runtime)


@pytest.mark.parametrize("how", ["compiled", "interpreter", "xla"])
def test_every_control_op_runs_as_the_eager_code_does(built, how, monkeypatch):
    """Each interpretation (generated code, the interpreter, the XLA lowering)
    of the same program against the eager function on the same inputs."""
    from d2s.static import executor
    from d2s.static.backend import BackendFallbackWarning
    net, concrete, _ = built
    if how == "xla":
        pytest.importorskip("jax")
    else:
        monkeypatch.setitem(executor._MODE, "mode", how)
    exe = Executor(backend="xla" if how == "xla" else "numpy")
    x = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)  # lowered, not run on numpy
        for xs, n in ((x, 0), (x, 3), (x * 1e4, 2)):
            feed = {"x": xs, "n": np.array(n)}
            try:
                want = type(net).forward(net, d2s.to_tensor(xs), d2s.to_tensor(n)).numpy()
            except ValueError as e:
                with pytest.raises(ValueError, match=str(e)):
                    exe.run(concrete.main_program, feed=feed, fetch_list=concrete.outputs)
                continue
            got, = exe.run(concrete.main_program, feed=feed, fetch_list=concrete.outputs)
            np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("how", ["compiled", "interpreter", "xla"])
def test_a_cast_of_a_value_that_may_be_undefined_runs_as_the_eager_code_does(
        promoted, how, monkeypatch):
    """`cast_if_defined` on every interpretation: the cast value where the
    loop returned the number, no NameError where it did not (nothing reads it)."""
    from d2s.static import executor
    if how == "xla":
        pytest.importorskip("jax")
    else:
        monkeypatch.setitem(executor._MODE, "mode", how)
    exe = Executor(backend="xla" if how == "xla" else "numpy")
    for xv, n in ((1.0, 2), (50.0, 2), (50.0, 0), (1.0, 0)):
        xs = np.full(3, xv, np.float32)
        want = _returns_a_number_from_a_loop(d2s.to_tensor(xs), d2s.to_tensor(n))
        got, = exe.run(promoted.main_program, feed={"x": xs, "n": np.array(n)},
                       fetch_list=promoted.outputs)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, float(want), rtol=1e-6)


# ---- nobody else restates the ops ------------------------------------------------------
_DISPATCHERS = ["static/executor.py", "backends/numpy/codegen.py", "static/backward.py",
                "static/printing.py", "static/ir.py", "static/passes", "jit/serialization.py",
                "jit/concrete_program.py", "backends/xla", "onnx/exporter.py", "onnx/graph.py"]
# Each target's rules of the control ops are part of those ops' home (one module
# per op, mirroring static/control_ops): they read the layout as the op's own module does.
_HOMES = [PKG / "backends/xla/rules/control_ops", PKG / "onnx/rules/control_ops"]


def _sources(paths):
    for rel in paths:
        path = PKG / rel
        for file in ([path] if path.is_file() else sorted(path.rglob("*.py"))):
            if not any(home in file.parents for home in _HOMES):
                yield file, ast.parse(file.read_text())


def _string_constants(tree):
    """String literals that are not docstrings."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            yield node


def test_dispatchers_never_spell_a_control_op():
    """The executors, passes, printing, serialization and backends name no
    control-flow op type and no attribute of its layout: they ask its home."""
    layout = {a for d in CONTROL_OPS.values()
              for a in d.blocks + d.scope_blocks + d.results + d.binds + d.runtime_attrs
              + ((d.restores,) if d.restores else ())}
    spelled = [f"{file.relative_to(PKG)}:{node.lineno}: {node.value!r}"
               for file, tree in _sources(_DISPATCHERS) for node in _string_constants(tree)
               if node.value in set(CONTROL_OPS) | layout]
    assert spelled == []


def test_the_scan_sees_a_spelled_attribute():
    tree = ast.parse('def f(op):\n    """true_block"""\n    return op.attrs["true_block"]\n')
    assert [n.value for n in _string_constants(tree)] == ["true_block"]


def test_every_op_type_code_appends_is_declared():
    """`append_op("T", ...)` and `bind("T", ...)` anywhere in d2s name a declared op."""
    pattern = re.compile(r"""(?:append_op|bind)\(\s*["'](\w+)["']""")
    found = set()
    for file in PKG.rglob("*.py"):
        found |= set(pattern.findall(file.read_text()))
    assert found and found <= set(OPS) | set(CONTROL_OPS), found - set(OPS) - set(CONTROL_OPS)
    assert {"cond", "while", "undefined", "raise"} <= found
