"""Imports flow one way: core <- static <- backends <- jit, static <- convert.runtime
<- jit; nn/optimizer use core. jit reaches the backends only through their
registry (`d2s.backends`, `d2s.backends.base`), never a backend's package.

Parsed from the source (not imported), so a violation anywhere fails here,
including imports inside functions. The package root counts as what it
imports: `import d2s`, `from d2s import zeros` (a name the root re-exports)
and `d2s.zeros` after `import d2s.core` all depend on every layer that
`d2s/__init__.py` imports, so no layer below the top may use them.
"""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "d2s"
ROOT = "d2s"  # the target layer name of the package root

# layer -> d2s subpackages it may import
ALLOWED = {
    "core": {"core"},
    "static": {"core", "static"},
    # The AST side uses only the stdlib, plus the runtime module it injects into
    # converted code as `_jst`.
    "convert": {"convert", "convert.runtime"},
    "convert.runtime": {"core", "static", "convert", "convert.runtime"},
    # The backends only through the registry (see `_target_layer`: "backends"
    # is the registry, "backends.<name>" a backend's own package).
    "jit": {"core", "static", "convert", "jit", "backends"},
    "nn": {"core", "nn"},
    # minimize() appends static backward ops: the one place optimizers see static.
    "optimizer": {"core", "optimizer", "static"},
    # Backends sit above static; static finds them by name (static.backend).
    # A backend's package uses the registry and its own package, never another
    # backend's (the numpy fallback is reached through the registry).
    "backends": {"core", "static", "backends"},
    "backends.numpy": {"core", "static", "backends", "backends.numpy"},
    "backends.xla": {"core", "static", "backends", "backends.xla"},
    # Above the backends: placements reach XLA through the xla backend's
    # sharding seam; DataParallel is a Layer.
    "distributed": {"core", "static", "backends", "backends.xla", "nn", "distributed"},
    # Passes on inference programs (weight-only int8/int4): above jit, whose
    # functions they rewrite, and nn, whose Layers they take.
    "quantization": {"core", "static", "jit", "nn", "quantization"},
    # Distributions are composites of core's ops, as nn's functions are.
    "distribution": {"core", "distribution"},
    # The high-level Model (Paddle's hapi) sits on top: it drives a Layer with
    # an optimizer over d2s.io's data, converting the forward through jit.
    "hapi": {"core", "static", "jit", "io", "nn", "optimizer", "summary", "hapi"},
}

# Modules at the package root that use only the standard library, so that any
# layer may use them (the cache folder: converted source, compiled programs;
# the bytecode of generated code; the collector paused during conversion and
# builds).
LEAVES = {"bytecode_cache", "cache_dir", "gc_pause"}


# The backends' packages: each its own layer ("backends" is the registry and
# the interface, `d2s/backends/__init__.py` and `base.py`).
BACKEND_PACKAGES = {"numpy", "xla"}


def _layer_of(path):
    rel = path.relative_to(PKG).parts
    if rel[0] == "convert" and len(rel) > 1 and rel[1] == "runtime":
        return "convert.runtime"
    if rel[0] == "backends" and len(rel) > 2 and rel[1] in BACKEND_PACKAGES:
        return f"backends.{rel[1]}"
    return rel[0] if len(rel) > 1 else None


def _is_submodule(parts):
    """True when d2s.<parts> is a module or package (not a name a package exports)."""
    path = PKG.joinpath(*parts)
    return path.is_dir() or path.with_suffix(".py").is_file()


def _imported(module_parts, names):
    """Targets of `from d2s.<module_parts> import names`: a submodule where the
    name is one, else the module itself (the name is an attribute of it)."""
    for name in names:
        if name != "*" and _is_submodule(module_parts + [name]):
            yield module_parts + [name]
        else:
            yield module_parts


def _d2s_imports(path, source=None):
    """(parts below d2s, line) for each import of d2s code; [] is the root."""
    tree = ast.parse(path.read_text() if source is None else source)
    pkg_parts = list(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    binds_root = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == ROOT or a.name.startswith(ROOT + "."):
                    yield a.name.split(".")[1:], node.lineno
                    binds_root = binds_root or a.asname is None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg_parts[: len(pkg_parts) - node.level + 1]
                module = base + (node.module.split(".") if node.module else [])
            elif node.module and (node.module == ROOT or node.module.startswith(ROOT + ".")):
                module = node.module.split(".")
            else:
                continue
            for parts in _imported(module[1:], [a.name for a in node.names]):
                yield parts, node.lineno
    if binds_root:  # `import d2s.x` binds `d2s`: `d2s.zeros` reads the root's namespace
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == ROOT and not _is_submodule([node.attr]):
                yield [], node.lineno


def _target_layer(parts):
    if not parts:
        return ROOT
    if parts[0] == "convert" and len(parts) > 1 and parts[1] == "runtime":
        return "convert.runtime"
    if parts[0] == "backends" and len(parts) > 1 and parts[1] in BACKEND_PACKAGES:
        return f"backends.{parts[1]}"
    return parts[0]


def _root_layers():
    """The layers importing the package root pulls in: those its __init__ imports."""
    return {_target_layer(parts) for parts, _ in _d2s_imports(PKG / "__init__.py")} - {ROOT}


def _layers_pulled_in(parts):
    target = _target_layer(parts)
    return _root_layers() if target == ROOT else {target}


FILES = [p for p in PKG.rglob("*.py") if _layer_of(p) in ALLOWED]


def _violations(path, source=None):
    layer = _layer_of(path)
    allowed = ALLOWED[layer]
    for parts, line in _d2s_imports(path, source):
        forbidden = _layers_pulled_in(parts) - allowed - LEAVES
        if forbidden:
            yield (f"{path.relative_to(PKG)}:{line} ({layer}) imports "
                   f"{'.'.join([ROOT] + parts)}, which pulls in {sorted(forbidden)}")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_flow_one_way(path):
    assert list(_violations(path)) == []


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_leaves_use_only_the_standard_library(leaf):
    """...and other leaves (the bytecode cache keeps its files in the cache folder)."""
    assert [(parts, line) for parts, line in _d2s_imports(PKG / f"{leaf}.py")
            if len(parts) != 1 or parts[0] not in LEAVES] == []


def test_jit_names_no_backend():
    """jit decides each call through the registry's backend objects: no
    backend's name appears in its code (docstrings aside)."""
    names = {f'"{b}"' for b in BACKEND_PACKAGES} | {f"'{b}'" for b in BACKEND_PACKAGES}
    found = [f"{p.relative_to(PKG)}:{i}" for p in sorted((PKG / "jit").rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if any(n in line for n in names)]
    assert found == []


def test_a_backend_package_is_its_own_layer():
    """(so the rule has teeth) jit may use the registry, not a backend's package."""
    jit_file = PKG / "jit" / "_layering_probe.py"  # never written
    assert list(_violations(jit_file, "from ..backends.numpy import codegen\n"))
    assert list(_violations(jit_file, "import d2s.backends.xla\n"))
    assert list(_violations(jit_file, "from .. import backends\n")) == []
    assert list(_violations(PKG / "static" / "_probe.py", "from ..backends import get\n"))


def test_the_root_pulls_in_every_layer():
    """What `import d2s` is checked against (so the rule has teeth)."""
    assert {"core", "static", "jit", "nn", "optimizer"} <= _root_layers()


_PROBE = PKG / "convert" / "runtime" / "_layering_probe.py"  # never written


@pytest.mark.parametrize("source", [
    "import d2s\n",
    "from d2s import zeros\n",
    "import d2s.jit\n",
    "from d2s.jit import to_static\n",
    "from ...jit import api\n",
    "from ... import zeros\n",
    "def f():\n    import d2s.core\n    return d2s.zeros([1])\n",
])
def test_the_rule_sees_every_import_form(source):
    """Each form, written in convert.runtime, is reported (the blind spot of a
    bare `import d2s` hid a 12-module cycle through the package root)."""
    assert list(_violations(_PROBE, source))


@pytest.mark.parametrize("source", [
    "from d2s.core import ops\n",
    "from ...core import ops\n",
    "from ... import static\n",
    "import d2s.static.nn\n",
    "import d2s.core as core\nx = core.ops\n",
])
def test_the_rule_accepts_allowed_imports(source):
    assert list(_violations(_PROBE, source)) == []


def _module_name(path):
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycle_through_the_package_root():
    """Nothing in the package imports its root, directly or through others."""
    graph = {}
    for path in PKG.rglob("*.py"):
        graph[_module_name(path)] = {
            ".".join([ROOT] + parts) for parts, _ in _d2s_imports(path)}

    def path_to_root(start):
        """A chain of imports from `start` back to the root, or None."""
        seen, todo = {start}, [[start]]
        while todo:
            chain = todo.pop()
            for module in graph.get(chain[-1], ()):
                if module == ROOT:
                    return chain + [ROOT]
                if module not in seen:
                    seen.add(module)
                    todo.append(chain + [module])
        return None

    cycles = [" -> ".join([ROOT] + chain) for chain in map(path_to_root, sorted(graph[ROOT]))
              if chain is not None]
    assert cycles == []
