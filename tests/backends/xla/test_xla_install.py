"""The optional dependency: the default install never imports jax, a missing
jax says how to install it, `D2S_BACKEND` picks the backend, and the opt-in
persistent compilation cache works across processes. Each case runs in a
fresh interpreter."""
import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

PROGRAM = """
import numpy as np, d2s
from d2s import static
prog = static.Program()
with static.program_guard(prog):
    x = static.data("x", [None, 2], "float64")
    y = static.nn.cond(x.sum() > 0, lambda: d2s.tanh(x) * 2.0, lambda: -x)
(out,) = static.Executor({backend}).run(prog, feed={{"x": np.ones((3, 2))}}, fetch_list=[y])
print(repr(out.tolist()))
"""


def _python(code, **env):
    full = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    full.pop("D2S_BACKEND", None)
    full.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=300)


def test_the_numpy_backend_never_imports_jax():
    done = _python(PROGRAM.format(backend="") + "import sys; print('jax' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "False"


def test_a_missing_jax_says_how_to_install_it():
    done = _python("import sys; sys.modules['jax'] = None\n"
                   + PROGRAM.format(backend="backend='xla'"))
    assert done.returncode != 0
    assert "ImportError" in done.stderr and 'pip install "d2s[xla]"' in done.stderr


TO_STATIC = """
import numpy as np, d2s
@d2s.jit.to_static{decoration}
def f(x):
    while x.sum() < 10.0:
        x = x * 2.0
    return x
print(repr(f(d2s.to_tensor(np.ones(2))).numpy().tolist()))
import sys; print('jax' in sys.modules)
"""


def _script(tmp_path, code, **env):
    """Run `code` from a file (to_static reads the function's source)."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(code))
    return _python(f"import runpy; runpy.run_path({str(path)!r})", **env)


def test_to_static_on_xla_without_jax_says_how_to_install_it(tmp_path):
    done = _script(tmp_path, "import sys; sys.modules['jax'] = None\n"
                   + TO_STATIC.format(decoration="(backend='xla')"))
    assert done.returncode != 0
    assert "ImportError" in done.stderr and 'pip install "d2s[xla]"' in done.stderr
    plain = _script(tmp_path, TO_STATIC.format(decoration=""))   # numpy: never imports jax
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.split() == ["[8.0,", "8.0]", "False"]


def test_d2s_backend_selects_the_default_for_to_static(tmp_path):
    pytest.importorskip("jax")
    on_xla = _script(tmp_path, TO_STATIC.format(decoration=""), D2S_BACKEND="xla")
    assert on_xla.returncode == 0, on_xla.stderr
    assert on_xla.stdout.split() == ["[8.0,", "8.0]", "True"]


def test_d2s_backend_selects_the_default_and_rejects_unknown_names():
    pytest.importorskip("jax")
    check = PROGRAM.format(backend="") + "print('_xla_runners' in prog.__dict__)"
    on_xla = _python(check, D2S_BACKEND="xla")
    on_numpy = _python(check, D2S_BACKEND="numpy")
    assert on_xla.returncode == 0 and on_numpy.returncode == 0, on_xla.stderr + on_numpy.stderr
    assert on_xla.stdout.split()[-1] == "True" and on_numpy.stdout.split()[-1] == "False"
    assert on_xla.stdout.splitlines()[0] == on_numpy.stdout.splitlines()[0]
    bad = _python(check, D2S_BACKEND="gpu")
    assert bad.returncode != 0 and "D2S_BACKEND: unknown backend 'gpu'" in bad.stderr


def test_the_persistent_cache_serves_a_second_process(tmp_path):
    """The second process loads the executable the first one stored (in
    xla-lowered/, beside its module): it compiles nothing."""
    pytest.importorskip("jax")
    code = ("import jax\ncompiles = []\n"
            "jax.monitoring.register_event_duration_secs_listener(\n"
            "    lambda e, s, **k: compiles.append(e) if e.endswith('backend_compile_duration')"
            " else None)\n"
            + PROGRAM.format(backend="backend='xla'")
            + "print(jax.config.jax_compilation_cache_dir)\n"
            + "print(len(compiles))")
    first = _python(code, D2S_CACHE_DIR=str(tmp_path))
    assert first.returncode == 0, first.stderr
    assert os.listdir(tmp_path / "xla-lowered"), "nothing was stored"
    second = _python(code, D2S_CACHE_DIR=str(tmp_path))
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[0] == first.stdout.splitlines()[0]
    assert first.stdout.split()[-1] == "1" and second.stdout.split()[-1] == "0"
    assert first.stdout.split()[-2] == "None"  # the user's JAX configuration is untouched


def test_only_the_xla_backend_package_imports_jax():
    pkg = pathlib.Path(ROOT) / "d2s"
    offenders = []
    for path in pkg.rglob("*.py"):
        if path.is_relative_to(pkg / "backends" / "xla"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(pkg)}:{node.lineno}" for n in names
                          if n == "jax" or n.startswith("jax.")]
    assert not offenders, offenders
