"""Only `d2s/onnx` imports onnx / onnxruntime (parsed, so it runs without them),
and nothing below it imports `d2s.onnx`: the core declares ONNX rules as
functions of the `ns` it is handed, never importing onnx itself."""
import ast
import pathlib

PKG = pathlib.Path(__file__).resolve().parents[2] / "d2s"
ONNX_PKG = PKG / "onnx"


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = list(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
                base = parts[: len(parts) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            yield module, node.lineno
            # `from d2s import onnx` imports the submodule d2s.onnx
            yield from ((f"{module}.{a.name}", node.lineno) for a in node.names)


def test_only_d2s_onnx_imports_onnx():
    bad = [f"{p.relative_to(PKG)}:{line} imports {name}"
           for p in PKG.rglob("*.py") if ONNX_PKG not in p.parents
           for name, line in _imports(p) if name.split(".")[0] in ("onnx", "onnxruntime")]
    assert bad == []


def test_only_the_package_root_imports_d2s_onnx():
    bad = [f"{p.relative_to(PKG)}:{line} imports {name}"
           for p in PKG.rglob("*.py") if ONNX_PKG not in p.parents and p != PKG / "__init__.py"
           for name, line in _imports(p) if name == "d2s.onnx" or name.startswith("d2s.onnx.")]
    assert bad == []


def test_d2s_onnx_imports_onnx_only_where_it_builds_models():
    # `import d2s` imports d2s.onnx: its __init__ and errors must not import onnx
    for name in ("__init__.py", "errors.py"):
        assert not [n for n, _ in _imports(ONNX_PKG / name) if n.split(".")[0] == "onnx"]
