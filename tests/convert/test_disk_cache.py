"""The persistent conversion cache: hits across processes, misses after edits,
damaged and foreign entries, concurrent writers, unusable folders, the switch
and the folder's permissions.

Each test points `D2S_CACHE_DIR` at its own folder.  Whether a call converted
or read the cache is observed by counting calls of the pipeline
(`api.convert_tree`), never by timing.
"""
import base64
import importlib.util
import itertools
import json
import marshal
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from d2s import cache_dir
from d2s.convert import api, disk_cache
from d2s.convert.source import function_source

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

USER_MODULE = textwrap.dedent('''\
    SCALE = 2


    def f(x):
        if x > 0:
            y = x * SCALE
        else:
            y = -x
        return 10 / (y - 7)  # the failing line
    ''')
FAILING_LINE = 9   # of USER_MODULE

# Run in a child process: convert `f` of the module given, call it, report.
CHILD = textwrap.dedent('''\
    import importlib.util, json, sys
    from d2s.convert import api, rewrite_exception
    calls = []
    real = api.convert_tree
    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    api.convert_tree = counting
    spec = importlib.util.spec_from_file_location("user_module", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    converted, code = api.convert_function(module.f)
    report = {"converted": len(calls), "values": [converted(v) for v in (1, -2, 5)],
              "expected": [module.f(v) for v in (1, -2, 5)]}
    report["code"] = str(code)   # (printed on demand: after counting the conversions)
    try:
        converted(3.5)
    except ZeroDivisionError as exc:
        report["error"] = str(rewrite_exception(exc))
    print(json.dumps(report))
    ''')


def _write_module(folder, text=USER_MODULE, name="user_module.py"):
    path = folder / name
    path.write_text(text)
    return path


def _run_child(module_path, cache, pythonpath=ROOT):
    env = dict(os.environ, D2S_CACHE_DIR=str(cache), PYTHONPATH=str(pythonpath))
    # cwd: not the repository root, whose d2s would shadow PYTHONPATH's
    proc = subprocess.run([sys.executable, "-c", CHILD, str(module_path)], env=env,
                          cwd=module_path.parent, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _entries(cache):
    folder = cache / "convert"
    return sorted(folder.iterdir()) if folder.exists() else []


def _check_correct(report, module_path, line=FAILING_LINE):
    assert report["values"] == report["expected"]
    assert f'File "{module_path}", line {line}, in f' in report["error"]
    assert "return 10 / (y - 7)" in report["error"]


# ---- across processes ------------------------------------------------------------------

def test_second_process_reads_the_cache(tmp_path):
    module = _write_module(tmp_path)
    cache = tmp_path / "cache"
    first = _run_child(module, cache)
    assert first["converted"] == 1
    _check_correct(first, module)
    [entry] = _entries(cache)
    assert "bytecode" in json.loads(entry.read_text())
    second = _run_child(module, cache)
    assert second["converted"] == 0               # read back, not converted
    _check_correct(second, module)                # same values, same error location
    assert second["code"] == first["code"]


def test_function_moved_down_its_file_misses(tmp_path):
    """Converted code may quote its user's line numbers: a moved function is
    converted again, and its errors name the new lines."""
    module = _write_module(tmp_path)
    cache = tmp_path / "cache"
    _run_child(module, cache)
    module.write_text("# a comment\n\n\n" + USER_MODULE)
    moved = _run_child(module, cache)
    assert moved["converted"] == 1
    _check_correct(moved, module, line=FAILING_LINE + 3)
    assert _run_child(module, cache)["converted"] == 0
    _check_correct(_run_child(module, cache), module, line=FAILING_LINE + 3)


def test_edited_source_misses_never_stale(tmp_path):
    module = _write_module(tmp_path)
    cache = tmp_path / "cache"
    _run_child(module, cache)
    module.write_text(USER_MODULE.replace("y = -x", "y = -x * 3"))
    edited = _run_child(module, cache)
    assert edited["converted"] == 1
    assert edited["values"] == edited["expected"] and edited["values"][1] == 10 / (6 - 7)
    assert "y = -x * 3" in edited["code"]
    assert len(_entries(cache)) == 2


def test_edited_converter_misses(tmp_path):
    """A d2s whose converter source differs (same version number) never reads
    the other's conversions."""
    copy = tmp_path / "d2s_copy"
    shutil.copytree(os.path.join(ROOT, "d2s"), copy / "d2s",
                    ignore=shutil.ignore_patterns("__pycache__"))
    module = _write_module(tmp_path)
    cache = tmp_path / "cache"
    assert _run_child(module, cache, pythonpath=copy)["converted"] == 1
    assert _run_child(module, cache, pythonpath=copy)["converted"] == 0
    with open(copy / "d2s" / "convert" / "naming.py", "a") as f:
        f.write("# edited\n")
    assert _run_child(module, cache, pythonpath=copy)["converted"] == 1
    assert len(_entries(cache)) == 2


def test_concurrent_writers_all_correct(tmp_path):
    module = _write_module(tmp_path)
    cache = tmp_path / "cache"
    env = dict(os.environ, D2S_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(module)], env=env,
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
        _check_correct(json.loads(out.strip().splitlines()[-1]), module)
    [entry] = _entries(cache)                     # one entry, no temporary files left
    assert json.loads(entry.read_text())["format"] == disk_cache.FORMAT
    assert _run_child(module, cache)["converted"] == 0


# ---- in this process: as if each load were a new process ------------------------------

_counter = itertools.count()


def _load_f(path):
    """`f` of the module at `path`, loaded afresh; conversions held in memory are
    forgotten first (equal code objects would share them), like a new process."""
    api._by_code.clear()
    spec = importlib.util.spec_from_file_location(f"cache_test_module_{next(_counter)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@pytest.fixture
def counted(monkeypatch):
    monkeypatch.setattr(api, "_by_code", {})
    calls = []
    real = api.convert_tree

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(api, "convert_tree", counting)
    return calls


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache_dir.ENV_VAR, str(folder))
    return folder


def _entry_file(fn):
    return disk_cache.entry_path(fn, function_source(fn))


def test_hit_within_a_process_for_a_new_code_object(tmp_path, cache, counted):
    path = _write_module(tmp_path)
    assert api.convert_function(_load_f(path))[0](1) == 10 / (2 - 7)
    fn = _load_f(path)
    assert api.convert_function(fn)[0](1) == 10 / (2 - 7)
    assert len(counted) == 1


def test_hit_maps_lines_as_a_fresh_conversion_does(tmp_path, cache, counted):
    from d2s.convert import origin
    path = _write_module(tmp_path)
    fresh = api.convert_function(_load_f(path))[0]
    hit = api.convert_function(_load_f(path))[0]
    assert len(counted) == 1
    names = [fn.__code__.co_filename for fn in (fresh, hit)]
    assert names[0] != names[1]                       # each load its own file name
    lines = range(1, 40)
    maps = [[origin.lookup(name, line) for line in lines] for name in names]
    assert maps[0] == maps[1]
    # the code's lines are the user's own: line 9 of the file is line 9 here
    assert maps[1][FAILING_LINE - 1] == origin.Origin(str(path), FAILING_LINE,
                                                      "return 10 / (y - 7)  # the failing line",
                                                      "f")
    assert maps[1][0] is None and maps[1][3] is not None   # outside `f`, on its def line
    assert {line for _, _, line in hit.__code__.co_lines() if line} <= set(range(4, 10))


def _signed(text, **fields):
    """The entry `text` with `fields` changed and its checksum made to match."""
    entry = dict(json.loads(text), **fields)
    entry["checksum"] = disk_cache._checksum(entry["key"] + ".json", entry)
    return json.dumps(entry)


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],                      # truncated
    lambda text: "not json at all",
    lambda text: json.dumps({"format": disk_cache.FORMAT}),   # fields missing
    lambda text: json.dumps(dict(json.loads(text), bytecode="AAAA")),     # checksum wrong
    # checksummed anew (as if written so by a d2s with a bug): still not used
    lambda text: _signed(text, bytecode="not base64!"),
    lambda text: _signed(text, bytecode=base64.b64encode(
        marshal.dumps(compile("x = 1", "<x>", "exec"))).decode()),       # code, not converted
    lambda text: _signed(text, bytecode=base64.b64encode(marshal.dumps([1, 2])).decode()),
    lambda text: _signed(text, bytecode=base64.b64encode(b"\xe3 truncated").decode()),
], ids=["truncated", "garbage", "incomplete", "unsigned", "bad-base64", "other-code",
        "not-code", "bad-marshal"])
def test_damaged_entry_ignored_and_rewritten(tmp_path, cache, counted, damage):
    path = _write_module(tmp_path)
    fn = _load_f(path)
    api.convert_function(fn)
    entry = _entry_file(fn)
    good = open(entry).read()
    with open(entry, "w") as f:
        f.write(damage(good))
    again = _load_f(path)
    assert api.convert_function(again)[0](1) == 10 / (2 - 7)
    assert len(counted) == 2                                  # converted again
    rewritten, original = json.loads(open(entry).read()), json.loads(good)
    for data in (rewritten, original):
        del data["function"]                      # which module: for people reading it
    assert rewritten == original                  # and rewritten


@pytest.mark.parametrize("field,value", [("fingerprint", "0" * 64),
                                         ("python", "cpython 2.7.18"),
                                         ("key", "1" * 64)])
def test_foreign_entry_ignored_and_rewritten(tmp_path, cache, counted, field, value):
    path = _write_module(tmp_path)
    fn = _load_f(path)
    api.convert_function(fn)
    entry = _entry_file(fn)
    data = json.loads(open(entry).read())
    with open(entry, "w") as f:
        json.dump(dict(data, **{field: value}), f)
    api.convert_function(_load_f(path))
    assert len(counted) == 2
    assert json.loads(open(entry).read())[field] == data[field]


def test_key_depends_on_names_closure_and_text(tmp_path):
    path = _write_module(tmp_path)
    fn = _load_f(path)
    source = function_source(fn)
    key = disk_cache.entry_key(fn, source)
    assert disk_cache.entry_key(_load_f(path), function_source(fn)) == key
    edited = source._replace(lines=source.lines[:-1] + ["    return 0\n"])
    assert disk_cache.entry_key(fn, edited) != key
    assert disk_cache.entry_key(fn, source._replace(start=source.start + 1)) != key
    assert disk_cache.entry_key(fn, source._replace(filename="elsewhere.py")) != key
    other = _load_f(path)
    other.__qualname__ = "K.f"              # mangling reads the class name
    assert disk_cache.entry_key(other, source) != key

    def make():
        SCALE = 3                            # noqa: F841 - a closure instead of a global

        def f(x):
            return x * SCALE
        return f
    closure_fn = make()
    closure_source = function_source(closure_fn)
    assert disk_cache.entry_key(closure_fn, closure_source) != disk_cache.entry_key(
        _load_f(_write_module(tmp_path, "def f(x):\n    return x * SCALE\n", "g.py")),
        closure_source)


# ---- unusable folders, the switch, permissions -------------------------------------------

def test_full_or_unwritable_folder_warns_once_and_converts(tmp_path, cache, counted,
                                                           monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cache_dir.tempfile, "mkstemp", full)
    path = _write_module(tmp_path)
    other = _write_module(tmp_path, USER_MODULE.replace("SCALE = 2", "SCALE = 4"), "o.py")
    with pytest.warns(RuntimeWarning, match="No space left on device") as record:
        assert api.convert_function(_load_f(path))[0](1) == 10 / (2 - 7)
        assert api.convert_function(_load_f(other))[0](1) == 10 / (4 - 7)
        assert api.convert_function(_load_f(path))[0](-1) == 10 / (1 - 7)
    assert len([w for w in record if "d2s" in str(w.message)]) == 1
    assert len(counted) == 3
    assert not [p for p in (cache / "convert").iterdir()]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="file permissions do not bind root")
def test_read_only_folder_warns_once(tmp_path, cache, counted):
    (cache / "convert").mkdir(parents=True, mode=0o700)
    (cache / "convert").chmod(0o500)
    path = _write_module(tmp_path)
    try:
        with pytest.warns(RuntimeWarning, match="not caching") as record:
            api.convert_function(_load_f(path))
            api.convert_function(_load_f(path))
        assert len([w for w in record if "d2s" in str(w.message)]) == 1
    finally:
        (cache / "convert").chmod(0o700)


def test_folder_that_cannot_be_created_warns_once(tmp_path, monkeypatch, counted):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv(cache_dir.ENV_VAR, str(blocker / "cache"))
    path = _write_module(tmp_path)
    with pytest.warns(RuntimeWarning, match="not caching") as record:
        assert api.convert_function(_load_f(path))[0](1) == 10 / (2 - 7)
        assert api.convert_function(_load_f(path))[0](1) == 10 / (2 - 7)
    assert len([w for w in record if "d2s" in str(w.message)]) == 1


def test_folder_writable_by_others_is_refused(tmp_path, cache, counted):
    (cache / "convert").mkdir(parents=True)
    (cache / "convert").chmod(0o777)
    path = _write_module(tmp_path)
    with pytest.warns(RuntimeWarning, match="writable by other users"):
        api.convert_function(_load_f(path))
    assert not list((cache / "convert").iterdir())


def test_empty_variable_turns_caching_off(tmp_path, monkeypatch, counted):
    monkeypatch.setenv(cache_dir.ENV_VAR, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir.cache_root() is None and cache_dir.subfolder("convert") is None
    path = _write_module(tmp_path)
    api.convert_function(_load_f(path))
    api.convert_function(_load_f(path))
    assert len(counted) == 2
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


def test_default_folder_follows_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv(cache_dir.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir.cache_root() == str(tmp_path / "xdg" / "d2s")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if os.name != "nt":
        assert cache_dir.cache_root() == str(tmp_path / "home" / ".cache" / "d2s")


def test_folders_and_entries_are_private(tmp_path, cache):
    path = _write_module(tmp_path)
    fn = _load_f(path)
    api.convert_function(fn)
    for folder in (cache, cache / "convert"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(os.stat(_entry_file(fn)).st_mode) == 0o600
    # the XLA backend's folder (or any other) sits beside it, alike
    xla = cache_dir.subfolder("xla")
    assert xla == str(cache / "xla") and stat.S_IMODE(os.stat(xla).st_mode) == 0o700
