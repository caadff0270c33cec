"""Each target owns its translation rules (DESIGN §8): `d2s/core` and
`d2s/static` hold each op's meaning only (kernel, shape rule, vjp,
interpretation); every xla rule lives in `d2s/backends/xla/rules/`, every
ONNX rule in `d2s/onnx/rules/`, and `describe(op)` says where each one is.

The source scan is AST-based: docstrings and comments may name a target
(where its rules live); code may not."""
import ast
import pathlib

import pytest

import d2s  # noqa: F401  (registers every op)
import d2s.backends.xla.rules  # noqa: F401  (no jax needed)
import d2s.onnx.rules  # noqa: F401  (no onnx needed)
from d2s.core.registry import OPS, TARGETS, NotLowerable, describe, register_lowering, register_op
from d2s.static.control_ops import CONTROL_OPS

PKG = pathlib.Path(d2s.__file__).resolve().parent
# the names the rule contexts go by as a first parameter: `ns` (per-op rules),
# `ex` (the ONNX exporter, control ops); `low` (xla control ops) is also an
# ordinary parameter name (`randint(low, high)`): only `low.` counts for it
CONTEXTS = {"ns", "ex"}


def _rule_code(tree):
    """(line, what) of each piece of rule code in a module's AST."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "lowering":
            yield node.lineno, "a `.lowering(...)` declaration"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in ("ns", "low"):
            yield node.lineno, f"`{node.value.id}.{node.attr}` (a rule context)"
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)):
            args = node.args.posonlyargs + node.args.args
            if args and args[0].arg in CONTEXTS:
                yield node.lineno, f"a function taking the rule context `{args[0].arg}` first"
        named = None
        if isinstance(node, ast.Name):
            named = node.id
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            named = node.name
        elif isinstance(node, ast.Attribute):
            named = node.attr
        elif isinstance(node, ast.arg):
            named = node.arg
        elif isinstance(node, ast.alias):
            named = node.asname or node.name
        elif isinstance(node, ast.ImportFrom):
            named = node.module
        elif isinstance(node, ast.keyword):
            named = node.arg
        if named and "onnx" in named.lower():
            yield node.lineno, f"the ONNX name {named!r}"


def _meaning_sources():
    for layer in ("core", "static"):
        yield from sorted((PKG / layer).rglob("*.py"))


def _emit_code(tree):
    """(line, what) of each piece of numpy code-generation in a module's AST:
    a function taking the code generator `em` first, or `em.` used."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            args = node.args.posonlyargs + node.args.args
            if args and args[0].arg == "em":
                yield node.lineno, "a function taking the code generator `em` first (an emit rule)"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "em":
            yield node.lineno, f"`em.{node.attr}` (the code generator)"


def test_static_holds_no_emit_code():
    """The numpy backend's code generation (its control-op rules) lives in
    `d2s/backends/numpy/rules/`: static keeps what each op means."""
    found = [f"{path.relative_to(PKG)}:{line}: {what}"
             for path in _meaning_sources()
             for line, what in _emit_code(ast.parse(path.read_text()))]
    assert found == [], "emit code outside d2s/backends/numpy:\n" + "\n".join(found)


@pytest.mark.parametrize("snippet", [
    "def _emit(em, op, indent):\n    pass",
    "f = lambda em, op, indent: None",
    "x = em.ident(name)",
])
def test_the_emit_scan_sees_emit_code(snippet):
    assert list(_emit_code(ast.parse(snippet)))


def test_every_control_op_has_its_numpy_rule_in_the_numpy_backend():
    assert TARGETS["numpy"] == ("d2s.backends.numpy.rules", False)
    for name, decl in CONTROL_OPS.items():
        assert decl.emit is None, name
        assert describe(decl)["numpy"].startswith(
            "d2s.backends.numpy.rules.control_ops."), name


def test_the_inplace_pass_is_numpys_and_static_passes_are_target_neutral():
    from d2s.backends.numpy import inplace, passes as numpy_passes, pool_mask
    from d2s.static import passes
    assert inplace not in passes.PIPELINE and pool_mask not in passes.PIPELINE
    assert numpy_passes.PIPELINE == [*passes.PIPELINE, pool_mask, inplace]
    assert not (PKG / "static/passes/inplace.py").exists()


def test_core_and_static_hold_no_rule_of_any_target():
    found = [f"{path.relative_to(PKG)}:{line}: {what}"
             for path in _meaning_sources()
             for line, what in _rule_code(ast.parse(path.read_text()))]
    assert found == [], "rule code outside the targets' rules packages:\n" + "\n".join(found)


@pytest.mark.parametrize("snippet, what", [
    ("register_op('x', k, i).lowering(xla=r)", "`.lowering"),
    ("def r(ns, x):\n    return x", "rule context `ns`"),
    ("f = lambda ex, op, graph, env: None", "rule context `ex`"),
    ("low.fail_if(True, f)", "`low.fail_if`"),
    ("y = ns.jnp.exp(x)", "`ns.jnp`"),
    ("from ..onnx import graph", "ONNX name"),
    ("def _sum_onnx(a):\n    return a", "ONNX name"),
    ("g(onnx=None)", "ONNX name"),
])
def test_the_scan_sees_rule_code(snippet, what):
    assert any(what in w for _, w in _rule_code(ast.parse(snippet)))


def test_the_scan_ignores_docstrings_and_comments():
    source = '"""The ONNX rule: `ns.node`, `.lowering(`."""\n# ns.jnp, onnx\nx = 1\n'
    assert list(_rule_code(ast.parse(source))) == []


def _all_ops():
    return [*OPS.values(), *CONTROL_OPS.values()]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_rule_lives_in_its_targets_package(target):
    package = TARGETS[target][0]
    elsewhere = []
    for opdef in _all_ops():
        for key, rule in opdef.lowerings.items():  # its rule and its variants ("xla:...")
            if key.split(":")[0] != target or isinstance(rule, NotLowerable):
                continue
            module = getattr(getattr(rule, "func", rule), "__module__", "")
            if not (module == package or module.startswith(package + ".")):
                elsewhere.append(f"{opdef.name} ({key}): {module}")
    assert elsewhere == [], f"{target} rules outside {package}: {elsewhere}"


def test_an_ops_tensor_array_form_is_a_variant_in_its_one_table():
    """xla's forms for tensor arrays sit in the op's table beside its rule
    (no second per-op table in the backend), in the same family module."""
    found = describe("sum")
    assert found["xla"].startswith("d2s.backends.xla.rules.reduction.")
    assert found["xla:tensor_array"].startswith("d2s.backends.xla.rules.reduction._sum:")
    assert describe("softmax")["xla:tensor_array"].startswith(
        "d2s.backends.xla.rules.nn._normalized.<locals>.handler:")
    with_variant = sorted(n for n, op in OPS.items() if "xla:tensor_array" in op.lowerings)
    assert {"getitem", "matmul", "cross_entropy", "numel", "reshape"} <= set(with_variant)


def test_the_targets_declare_their_rules_packages():
    assert TARGETS["xla"] == ("d2s.backends.xla.rules", True)
    assert TARGETS["onnx"] == ("d2s.onnx.rules", True)


def test_describe_lists_every_rule_of_an_op_with_module_and_line():
    found = describe("add")
    # every target with a rule for every op (numpy's core ops run their kernels)
    assert set(found) == {"kernel", "infer", "vjp", *(t for t in TARGETS if TARGETS[t][1])}
    assert found["kernel"] == "numpy.add"
    assert found["infer"].startswith("d2s.core.ops._base.elementwise_infer.")
    assert found["vjp"].startswith("d2s.core.ops.elementwise.<lambda>:")
    # factory-made rules: where the factory's rule is, and where it was registered
    assert found["xla"].startswith("d2s.backends.xla.rules._base.promoted.<locals>.rule:")
    assert "(registered at d2s.backends.xla.rules.elementwise:" in found["xla"]
    assert "(registered at d2s.onnx.rules.elementwise:" in found["onnx"]
    # the line is the function's own
    line = int(describe("getitem")["xla"].rsplit(":", 1)[1])
    source = (PKG / "backends/xla/rules/indexing.py").read_text().splitlines()
    assert source[line - 1].startswith("def _getitem_xla(ns,")


def test_describe_reads_a_control_op_too():
    found = describe(CONTROL_OPS["while"])
    assert found["interpret"].startswith("d2s.static.control_ops.while_._interpret:")
    assert found["xla"].startswith("d2s.backends.xla.rules.control_ops.while_._lower_xla:")
    assert found["onnx"].startswith("d2s.onnx.rules.control_ops.while_._lower_onnx:")
    assert describe(CONTROL_OPS["while_grad"])["onnx"].startswith("not lowerable: ")


def test_a_rule_registered_elsewhere_names_its_registration():
    op = register_op("_site_probe", lambda x: x, lambda x: x)
    try:
        register_lowering("xla", op, abs)  # a builtin: no source line of its own
        assert describe(op)["xla"] == f"builtins.abs (registered at {__name__}:{_line() - 1})"
    finally:
        del OPS["_site_probe"]


def _line():
    import sys
    return sys._getframe(1).f_lineno


def test_the_rules_packages_load_without_jax_or_onnx_and_import_d2s_loads_neither():
    """Rules receive their context (`ns`, `low`, `ex`): loading them imports no
    backend library, and `import d2s` leaves the xla and ONNX rules unloaded
    (numpy's, the default backend's, load with it)."""
    import subprocess
    import sys
    code = ("import sys, d2s\n"
            "assert [m for m in sys.modules if m.endswith('.rules')] == "
            "['d2s.backends.numpy.rules'], 'rules loaded'\n"
            "import d2s.backends.xla.rules, d2s.onnx.rules\n"
            "print(sorted(m for m in ('jax', 'onnx', 'onnxruntime') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PKG.parent, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
