"""Imports flow one way: core <- static <- convert.runtime <- jit; nn/optimizer use core.

Parsed from the source (not imported), so a violation anywhere fails here.
"""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "d2s"

# layer -> d2s subpackages it may import
ALLOWED = {
    "core": {"core"},
    "static": {"core", "static"},
    # The AST side uses only the stdlib, plus the runtime module it injects into
    # converted code as `_jst`.
    "convert": {"convert", "convert.runtime"},
    "convert.runtime": {"core", "static", "convert", "convert.runtime"},
    "jit": {"core", "static", "convert", "jit"},
    "nn": {"core", "nn"},
    # minimize() appends static backward ops: the one place optimizers see static.
    "optimizer": {"core", "optimizer", "static"},
    # Backends sit above static; static finds them by name (static.backend).
    "backends": {"core", "static", "backends"},
}


def _layer_of(path):
    rel = path.relative_to(PKG).parts
    if rel[0] == "convert" and len(rel) > 1 and rel[1] == "runtime":
        return "convert.runtime"
    return rel[0] if len(rel) > 1 else None


def _d2s_imports(path):
    tree = ast.parse(path.read_text())
    pkg_parts = path.relative_to(PKG.parent).with_suffix("").parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("d2s."):
                    yield a.name.split(".")[1:], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg_parts[: len(pkg_parts) - node.level + 1])
                mod = base + (node.module.split(".") if node.module else [])
                if not node.module:
                    for a in node.names:
                        yield (mod + [a.name])[1:], node.lineno
                    continue
                yield mod[1:], node.lineno
            elif node.module and node.module.startswith("d2s"):
                yield node.module.split(".")[1:], node.lineno


def _target_layer(parts):
    if not parts:
        return "d2s"
    if parts[0] == "convert" and len(parts) > 1 and parts[1] == "runtime":
        return "convert.runtime"
    return parts[0]


FILES = [p for p in PKG.rglob("*.py") if _layer_of(p) in ALLOWED]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_flow_one_way(path):
    layer = _layer_of(path)
    allowed = ALLOWED[layer]
    for parts, line in _d2s_imports(path):
        target = _target_layer(parts)
        ok = target in allowed
        assert ok, f"{path.relative_to(PKG)}:{line} ({layer}) imports d2s.{'.'.join(parts)}"
