"""The bytecode cache of generated code: a hit runs the same code without
compiling, under the caller's file name; damaged, foreign or other texts'
bytecode is never used; writes are atomic and private; no cache, no files.

Whether `compile_module` compiled is observed by counting calls of the
`compile` it uses, never by timing.
"""
import json
import marshal
import os
import stat
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import d2s
from d2s import bytecode_cache, cache_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TEXT = textwrap.dedent("""\
    def outer(a):
        def inner(b):
            return [b * k for k in range(3)]
        return inner(a) + [1 / (a - 2)]
    """)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache_dir.ENV_VAR, str(folder))
    return folder


@pytest.fixture
def compiles(monkeypatch):
    calls = []

    def counting(text, filename, mode):
        calls.append(filename)
        return compile(text, filename, mode)
    monkeypatch.setattr(bytecode_cache, "compile", counting, raising=False)
    return calls


def _run(code):
    namespace = {}
    exec(code, namespace)
    return namespace["outer"]


def _all_filenames(code):
    names = {code.co_filename}
    for const in code.co_consts:
        if isinstance(const, type(code)):
            names |= _all_filenames(const)
    return names


def test_hit_is_the_same_code_under_the_callers_name(cache, compiles):
    first = bytecode_cache.compile_module(TEXT, "<first>")
    second = bytecode_cache.compile_module(TEXT, "<second>")
    assert compiles == ["<first>"]                     # the second read back
    assert _all_filenames(second) == {"<second>"}      # nested code objects too
    assert _run(second)(5) == _run(first)(5) == [0, 5, 10, 1 / 3]
    with pytest.raises(ZeroDivisionError) as info:
        _run(second)(2)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert frames[-1].filename == "<second>" and frames[-1].lineno == 4
    assert marshal.loads(open(bytecode_cache.entry_path(TEXT), "rb").read()[16:]).co_filename \
        == "<first>"


def test_another_text_is_compiled(cache, compiles):
    bytecode_cache.compile_module(TEXT, "<a>")
    other = TEXT.replace("(a - 2)", "(a - 3)")
    assert _run(bytecode_cache.compile_module(other, "<b>"))(2) == [0, 2, 4, -1.0]
    assert compiles == ["<a>", "<b>"]


@pytest.mark.parametrize("damage", [
    lambda data: b"",
    lambda data: data[: len(data) // 2],                      # truncated marshal data
    lambda data: data[:16] + b"\xff" * 40,                    # not marshal data
    lambda data: b"\0\0\0\0" + data[4:],                      # another Python's magic
    lambda data: data[:8] + bytes(8) + data[16:],             # another text's hash
    lambda data: data[:16] + marshal.dumps(("not", "code")),  # not a code object
], ids=["empty", "truncated", "garbage", "magic", "hash", "not-code"])
def test_damaged_entry_compiled_and_rewritten(cache, compiles, damage):
    bytecode_cache.compile_module(TEXT, "<a>")
    path = bytecode_cache.entry_path(TEXT)
    good = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(damage(good))
    code = bytecode_cache.compile_module(TEXT, "<b>")
    assert compiles == ["<a>", "<b>"] and _run(code)(5) == [0, 5, 10, 1 / 3]
    assert open(path, "rb").read()[:16] == good[:16]          # rewritten
    bytecode_cache.compile_module(TEXT, "<c>")
    assert len(compiles) == 2                                  # and read from then on


def test_entries_are_private_and_no_temporary_files_stay(cache, compiles):
    bytecode_cache.compile_module(TEXT, "<a>")
    folder = cache / "bytecode"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    [entry] = folder.iterdir()
    assert entry.name.endswith(f".{sys.implementation.cache_tag}.pyc")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_caching_off_compiles_and_writes_nothing(tmp_path, monkeypatch, compiles):
    monkeypatch.setenv(cache_dir.ENV_VAR, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for name in ("<a>", "<b>"):
        assert _run(bytecode_cache.compile_module(TEXT, name))(5) == [0, 5, 10, 1 / 3]
    assert compiles == ["<a>", "<b>"] and not (tmp_path / "xdg").exists()


def test_unwritable_folder_warns_once_and_compiles(cache, compiles):
    folder = cache / "bytecode"
    bytecode_cache.compile_module("x = 1\n", "<setup>")    # creates the folder
    if os.access(folder, os.W_OK) and os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    folder.chmod(0o500)
    try:
        with pytest.warns(RuntimeWarning, match="not caching"):
            bytecode_cache.compile_module(TEXT, "<a>")
            bytecode_cache.compile_module(TEXT.replace("2)", "4)"), "<b>")
    finally:
        folder.chmod(0o700)
        cache_dir._unusable.discard(str(folder))
    assert compiles[1:] == ["<a>", "<b>"]


# The compiled executor's generated programs: a second process builds the same
# program text and reads its bytecode back; results and error locations agree.
CHILD = textwrap.dedent('''\
    import json, sys
    import numpy as np
    import d2s
    from d2s import bytecode_cache
    calls = []
    real = compile
    def counting(*args):
        calls.append(args[1])
        return real(*args)
    bytecode_cache.compile = counting
    sys.path.insert(0, sys.argv[1])
    from user_program import f
    x = d2s.to_tensor(np.array([1.0, 2.0, 3.0], "float32"))
    out = d2s.jit.to_static(f)(x).numpy().tolist()
    try:
        d2s.jit.to_static(f)(d2s.to_tensor(np.array([1.0, 2.0], "float32")))
        error = None
    except Exception as exc:
        error = str(exc)
    print(json.dumps({"compiled": [c for c in calls if "compiled" in c], "out": out,
                      "eager": f(x).numpy().tolist(), "error": error}))
    ''')

PROGRAM = textwrap.dedent('''\
    import d2s


    def f(x):
        if x.sum() > 1.0:
            y = x * 2.0
        else:
            y = x - 1.0
        return d2s.reshape(y, [3])  # fails for two elements
    ''')


def test_second_process_reads_program_bytecode(tmp_path):
    (tmp_path / "user_program.py").write_text(PROGRAM)
    env = dict(os.environ, D2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    reports = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        reports.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = reports
    assert first["compiled"] and second["compiled"] == []   # programs read back
    for report in reports:
        assert report["out"] == report["eager"] == [2.0, 4.0, 6.0]
        assert "user_program.py" in report["error"] and "line 9" in report["error"]
    assert np.isfinite(first["out"]).all()
