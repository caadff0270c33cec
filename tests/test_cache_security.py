"""The cache folder cannot be planted and its entries do not go stale (issue 24).

A cache another user can write is refused (its root, an ancestor, a
subfolder, a symbolic link, an entry not the user's), with one warning;
every kind of entry carries a checksum, so a flipped bit or an entry moved
under another's name is never used; keys name `python -O`, the function's
code (a file edited while the process runs is refused, never converted into
another function's body), and user-registered ops' rules; each folder is
bounded, least recently used first. Other users are played by `os.chown`
(root) or by `cache_dir._uid` (the user id the checks compare with).
Whether a cache entry was used is observed by counting compiles and
conversions, never by timing.
"""
import ast
import json
import os
import random
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from d2s import bytecode_cache, cache_dir
from d2s.convert import api, disk_cache, source_match
from d2s.convert.errors import SourceMismatchError
from d2s.convert.source import function_source, parse_function

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
posix_only = pytest.mark.skipif(not cache_dir._SECURE, reason="descriptor-relative opens")

TEXT = "def outer(a):\n    return [a * 3.0, a - 1]\n"


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch):
    """Each test starts with no warning given, no folder given up, no size known."""
    monkeypatch.setattr(cache_dir, "_warned", set())
    monkeypatch.setattr(cache_dir, "_unusable", set())
    monkeypatch.setattr(cache_dir, "_sizes", {})


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
    return namespace["outer"](2.0)


def _d2s_warnings(record):
    return [w for w in record if "d2s" in str(w.message)]


# ---- folders others can write are refused ---------------------------------------------------

@posix_only
@pytest.mark.parametrize("where", ["root", "subfolder", "ancestor"])
def test_a_folder_writable_by_others_is_refused_with_one_warning(tmp_path, monkeypatch,
                                                                 compiles, where):
    ancestor = tmp_path / "shared"
    root = ancestor / "cache"
    (root / "bytecode").mkdir(parents=True, mode=0o700)
    monkeypatch.setenv(cache_dir.ENV_VAR, str(root))
    target = {"root": root, "subfolder": root / "bytecode", "ancestor": ancestor}[where]
    target.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="writable by other users") as record:
        for name in ("<a>", "<b>", "<c>"):
            assert _run(bytecode_cache.compile_module(TEXT, name)) == [6.0, 1.0]
    assert len(_d2s_warnings(record)) == 1          # once per process and reason
    assert compiles == ["<a>", "<b>", "<c>"]        # never read back ...
    assert not list((root / "bytecode").iterdir())  # ... nor written
    assert cache_dir.subfolder("bytecode") is None


@posix_only
def test_a_sticky_ancestor_like_tmp_is_accepted(tmp_path, monkeypatch, compiles):
    ancestor = tmp_path / "sticky"
    ancestor.mkdir()
    ancestor.chmod(0o1777)
    monkeypatch.setenv(cache_dir.ENV_VAR, str(ancestor / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bytecode_cache.compile_module(TEXT, "<a>")
        bytecode_cache.compile_module(TEXT, "<b>")
    assert compiles == ["<a>"]                      # written, then read back


@posix_only
@pytest.mark.skipif(not IS_ROOT, reason="handing a folder to another user needs root")
@pytest.mark.parametrize("where", ["root", "ancestor", "sticky-child"])
def test_a_folder_owned_by_another_user_is_refused(tmp_path, monkeypatch, compiles, where):
    ancestor = tmp_path / "other"
    root = ancestor / "cache"
    root.mkdir(parents=True, mode=0o700)
    monkeypatch.setenv(cache_dir.ENV_VAR, str(root))
    if where == "sticky-child":   # /tmp-like: the other user made the folder first
        ancestor.chmod(0o1777)
    os.chown(ancestor if where == "ancestor" else root, 4321, 4321)
    with pytest.warns(RuntimeWarning, match="owned by another user"):
        bytecode_cache.compile_module(TEXT, "<a>")
        bytecode_cache.compile_module(TEXT, "<b>")
    assert compiles == ["<a>", "<b>"]


@posix_only
def test_the_user_id_is_the_one_checked(cache, monkeypatch, compiles):
    """Every folder here is this process's user's: as another user, they are foreign."""
    bytecode_cache.compile_module(TEXT, "<a>")
    monkeypatch.setattr(cache_dir, "_uid", lambda: os.geteuid() + 1)
    with pytest.warns(RuntimeWarning, match="owned by another user"):
        bytecode_cache.compile_module(TEXT, "<b>")
    assert compiles == ["<a>", "<b>"]


@posix_only
def test_each_use_checks_again_not_once_per_process(cache, compiles):
    bytecode_cache.compile_module(TEXT, "<a>")
    bytecode_cache.compile_module(TEXT, "<b>")          # read back: the folder is fine
    cache.chmod(0o777)                                  # ... until someone opens it
    with pytest.warns(RuntimeWarning, match="writable by other users"):
        bytecode_cache.compile_module(TEXT, "<c>")
    cache.chmod(0o700)
    bytecode_cache.compile_module(TEXT, "<d>")
    assert compiles == ["<a>", "<c>"]


@posix_only
def test_symbolic_links_are_not_followed(cache, tmp_path, compiles):
    bytecode_cache.compile_module(TEXT, "<a>")
    path = bytecode_cache.entry_path(TEXT)
    elsewhere = tmp_path / "planted.pyc"
    os.replace(path, elsewhere)                 # a valid entry, reached through a link
    os.symlink(elsewhere, path)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        bytecode_cache.compile_module(TEXT, "<b>")
    assert compiles == ["<a>", "<b>"]
    # a linked subfolder is not followed either
    folder = cache / "bytecode"
    os.rename(folder, tmp_path / "real-bytecode")
    os.symlink(tmp_path / "real-bytecode", folder)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        bytecode_cache.compile_module(TEXT, "<c>")
    assert compiles == ["<a>", "<b>", "<c>"]


@posix_only
@pytest.mark.parametrize("how", ["chown", "group-writable"])
def test_an_entry_that_is_not_a_private_file_of_the_user_is_not_read(cache, compiles, how):
    if how == "chown" and not IS_ROOT:
        pytest.skip("handing a file to another user needs root")
    bytecode_cache.compile_module(TEXT, "<a>")
    path = bytecode_cache.entry_path(TEXT)
    if how == "chown":
        os.chown(path, 4321, 4321)
    else:
        os.chmod(path, 0o620)
    with pytest.warns(RuntimeWarning, match="not a private file"):
        bytecode_cache.compile_module(TEXT, "<b>")
    assert compiles == ["<a>", "<b>"]


# ---- checksums: one flipped bit, a swapped entry --------------------------------------------

def _flip(path, position):
    data = bytearray(open(path, "rb").read())
    data[position % len(data)] ^= 1 << (position % 8)
    with open(path, "wb") as f:
        f.write(bytes(data))


def test_a_flipped_bit_anywhere_in_a_bytecode_entry_is_detected(cache, compiles):
    bytecode_cache.compile_module(TEXT, "<a>")
    path = bytecode_cache.entry_path(TEXT)
    good = open(path, "rb").read()
    rng = random.Random(0)
    positions = list(range(16, len(good))) if len(good) < 400 else \
        rng.sample(range(len(good)), 200)
    for i, position in enumerate(positions):
        with open(path, "wb") as f:
            f.write(good)
        _flip(path, position)
        assert _run(bytecode_cache.compile_module(TEXT, f"<{i}>")) == [6.0, 1.0]
        assert compiles[-1] == f"<{i}>", position     # compiled, never the flipped code
    n = len(compiles)
    assert _run(bytecode_cache.compile_module(TEXT, "<last>")) == [6.0, 1.0]
    assert len(compiles) == n                          # rewritten whole: read back


def test_a_bytecode_entry_moved_under_another_texts_name_is_not_used(cache, compiles):
    other = TEXT.replace("3.0", "5.0")
    bytecode_cache.compile_module(TEXT, "<a>")
    bytecode_cache.compile_module(other, "<b>")
    os.replace(bytecode_cache.entry_path(other), bytecode_cache.entry_path(TEXT))
    assert _run(bytecode_cache.compile_module(TEXT, "<c>")) == [6.0, 1.0]
    assert compiles == ["<a>", "<b>", "<c>"]


USER_MODULE = textwrap.dedent("""\
    SCALE = 3.0


    def f(x):
        y = x * SCALE
        if y > 5:
            return y - 1.0
        return y

    def g(x):
        y = x * 7.0
        if y > 5:
            return y - 1.0
        return y
    """)


def _load(path, name="f"):
    namespace = {"__name__": "user_mod_" + os.path.basename(path)[:-3]}
    exec(compile(open(path).read(), str(path), "exec"), namespace)
    return namespace[name]


@pytest.fixture
def converts(monkeypatch):
    monkeypatch.setattr(api, "_by_code", {})
    calls = []
    real = api.convert_tree

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(api, "convert_tree", counting)
    return calls


def test_a_flipped_bit_in_a_conversion_entry_is_detected(tmp_path, cache, converts):
    path = tmp_path / "user_mod.py"
    path.write_text(USER_MODULE)
    fn = _load(path)
    assert api.convert_function(fn)[0](2.0) == 5.0
    entry = disk_cache.entry_path(fn, function_source(fn))
    good = open(entry, "rb").read()
    rng = random.Random(1)
    changed = 0
    for position in rng.sample(range(len(good)), 60):
        with open(entry, "wb") as f:
            f.write(good)
        _flip(entry, position)
        api._by_code.clear()
        before = len(converts)
        assert api.convert_function(_load(path))[0](2.0) == 5.0, position
        changed += len(converts) - before
    assert changed == 60            # every flipped entry converted again, none used


def test_a_conversion_entry_swapped_for_another_functions_is_not_used(tmp_path, cache, converts):
    path = tmp_path / "user_mod.py"
    path.write_text(USER_MODULE)
    f, g = _load(path, "f"), _load(path, "g")
    assert api.convert_function(f)[0](1.0) == 3.0 and api.convert_function(g)[0](1.0) == 6.0
    f_entry = disk_cache.entry_path(f, function_source(f))
    g_entry = disk_cache.entry_path(g, function_source(g))
    os.replace(g_entry, f_entry)          # a valid entry of g's body, planted as f's
    api._by_code.clear()
    assert api.convert_function(_load(path, "f"))[0](1.0) == 3.0
    assert len(converts) == 3


# ---- keys: the optimisation level, the code the text was built from ------------------------

DEBUG_MODULE = textwrap.dedent("""\
    import numpy as np
    import d2s


    def f(x):
        if __debug__:
            y = x * 100.0
        else:
            y = x * 1.0
        return y * 2.0
    """)

DEBUG_CHILD = textwrap.dedent("""\
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import d2s
    from user_debug import f
    x = d2s.to_tensor(np.array([1.0], "float32"))
    static = d2s.jit.to_static(f)
    print(json.dumps([static(x).numpy().tolist(), static(x).numpy().tolist(),
                      f(x).numpy().tolist()]))
    """)


def test_python_O_and_plain_python_do_not_share_bytecode(tmp_path):
    (tmp_path / "user_debug.py").write_text(DEBUG_MODULE)
    env = dict(os.environ, D2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT,
               PYTHONDONTWRITEBYTECODE="1")
    results = {}
    for flags in ([], ["-O"], [], ["-O"]):
        proc = subprocess.run([sys.executable, *flags, "-c", DEBUG_CHILD, str(tmp_path)],
                              env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        first, second, eager = json.loads(proc.stdout.strip().splitlines()[-1])
        assert first == second == eager, (flags, first, second, eager)
        results.setdefault(tuple(flags), []).append(eager)
    assert results[()] == [[200.0]] * 2 and results[("-O",)] == [[2.0]] * 2
    names = os.listdir(tmp_path / "cache" / "bytecode")
    assert any(".opt0." in n for n in names) and any(".opt1." in n for n in names)


EDITED_BEFORE = textwrap.dedent("""\
    class A:
        def forward(self, x):
            return x * 3.0


    def h(x):
        return x + 1.0
    """)

# B.forward now stands where A.forward was; A.forward's text moved down
EDITED_AFTER = textwrap.dedent("""\
    class B:
        def forward(self, x):
            return x * 7.0


    class A:
        def forward(self, x):
            return x * 3.0


    def h(x):
        return x + 1.0
    """)

# only lines below A.forward changed: its text is still where its code says
EDITED_BELOW = EDITED_BEFORE + "\n\ndef added(x):\n    return x\n"


def _edit(path, text):
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))   # a later mtime: re-read


@pytest.mark.parametrize("with_cache", [True, False])
def test_a_file_edited_while_running_is_refused_not_run_as_another_body(
        tmp_path, monkeypatch, converts, with_cache):
    monkeypatch.setenv(cache_dir.ENV_VAR, str(tmp_path / "cache") if with_cache else "")
    path = tmp_path / "edited_mod.py"
    path.write_text(EDITED_BEFORE)
    namespace = {"__name__": "edited_mod"}
    exec(compile(EDITED_BEFORE, str(path), "exec"), namespace)   # imported before the edit
    forward = namespace["A"].forward
    _edit(path, EDITED_AFTER)
    with pytest.raises(SourceMismatchError, match=r"edited_mod\.py.*line 2.*reload"):
        api.convert_function(forward)
    # A's body changed in place, same layout: refused too
    _edit(path, EDITED_BEFORE.replace("3.0", "5.0"))
    with pytest.raises(SourceMismatchError):
        api.convert_function(forward)
    # an edit elsewhere in the file: converted from the text on disk, the same
    _edit(path, EDITED_BELOW)
    assert api.convert_function(forward)[0](None, 2.0) == 6.0
    assert api.convert_function(namespace["h"])[0](2.0) == 3.0


def test_the_source_check_accepts_methods_closures_and_private_names(converts, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv(cache_dir.ENV_VAR, "")
    offset = 10

    class K:
        __secret = 4.0

        def method(self, x):
            total = 0.0
            for i in range(3):
                total += x * self.__secret + offset
            return [total, super().__repr__() is not None]

    def counter():
        count = 0

        def bump(n):
            nonlocal count
            count += n
            return count
        return bump

    scaled = lambda v: v * offset   # noqa: E731
    for fn in (K.method, counter(), scaled):   # (this file predates the process: compared here)
        assert source_match.matches(fn, parse_function(fn).node), fn
    assert api.convert_function(K.method)[0](K(), 1.0) == [42.0, True]
    assert api.convert_function(counter())[0](3) == 3
    assert api.convert_function(scaled)[0](2) == 20
    # and a different body, in the same place, does not match
    other = parse_function(K.method).node
    other.body[1].body[0].value.left.right = ast.Attribute(
        value=ast.Name("self", ast.Load()), attr="_K__other", ctx=ast.Load())
    ast.fix_missing_locations(other)
    assert not source_match.matches(K.method, other)


def test_a_file_older_than_the_process_is_not_compared(tmp_path, monkeypatch, converts):
    """One `stat` instead of a compile: modules imported from a file unchanged
    since the process started were built from its text."""
    monkeypatch.setenv(cache_dir.ENV_VAR, "")
    compared = []
    real = source_match.matches
    monkeypatch.setattr(source_match, "matches", lambda *a: compared.append(1) or real(*a))
    path = tmp_path / "old_mod.py"
    path.write_text(USER_MODULE)
    assert api.convert_function(_load(path))[0](1.0) == 3.0
    assert compared == [1]                                  # written after the start
    os.utime(path, (source_match._STARTED - 60, source_match._STARTED - 60))
    api._by_code.clear()
    assert api.convert_function(_load(path))[0](1.0) == 3.0
    assert compared == [1]


# ---- the xla-lowered cache and JAX's xla/ folder -------------------------------------------

def test_user_registered_ops_and_their_rules_are_in_the_xla_key():
    pytest.importorskip("jax")
    from d2s.backends.xla import lowered_cache
    from d2s.core.registry import OPS, register_op
    name = "sec_cache_test_twice"
    try:
        op = register_op(name, lambda x: x * 2.0, lambda x: x)
        op.lowering(xla=lambda ns, x: x * 2.0)
        before = lowered_cache._user_ops_token({name, "tanh"})
        assert len(before) == 1 and before[0].startswith(f"op {name}:")  # d2s's own: not listed
        op.kernel = lambda x: x * 3.0                      # an edited kernel
        after_kernel = lowered_cache._user_ops_token({name})
        op.lowerings["xla"] = lambda ns, x: x * 3.0         # an edited rule
        after_rule = lowered_cache._user_ops_token({name})
        assert len({before[0], after_kernel[0], after_rule[0]}) == 3
        op.lowerings["xla"] = lambda ns, x: x * 3.0         # the same rule made again
        assert lowered_cache._user_ops_token({name}) == after_rule
    finally:
        OPS.pop(name, None)


def test_an_xla_lowered_entry_under_another_name_or_from_a_link_is_not_read(cache, tmp_path):
    pytest.importorskip("jax")
    from d2s.backends.xla import lowered_cache
    folder = cache_dir.subfolder(lowered_cache.SUBFOLDER)
    a, b = os.path.join(folder, "a" * 64 + ".bin"), os.path.join(folder, "b" * 64 + ".bin")
    lowered_cache._store(a, b"module bytes", {"layout": []}, b"executable", "env")
    assert lowered_cache._load(a, "a" * 64) == (b"module bytes", {"layout": []},
                                                b"executable", "env")
    os.replace(a, b)                          # a valid entry, planted under another key
    assert lowered_cache._load(b, "b" * 64) is None
    os.symlink(b, a)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        assert lowered_cache._load(a, "a" * 64) is None


XLA_CHILD = textwrap.dedent("""\
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import d2s
    d2s.jit.set_backend("xla")
    from d2s.backends.xla import program as xla_program
    traced = []
    real = xla_program.lower_program
    def counting(*args, **kwargs):
        traced.append(1)
        return real(*args, **kwargs)
    xla_program.lower_program = counting
    from user_xla import f
    x = d2s.to_tensor(np.array([1.0, 2.0, 3.0], "float32"))
    print(json.dumps({"out": d2s.jit.to_static(f)(x).numpy().tolist(), "traced": len(traced)}))
    """)

XLA_MODULE = textwrap.dedent("""\
    import d2s


    def f(x):
        return d2s.tanh(x * 3.0) + x
    """)


def _xla_child(tmp_path, script, *args):
    env = dict(os.environ, D2S_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT,
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path), *args], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_flipped_bit_in_an_xla_lowered_entry_is_detected(tmp_path):
    pytest.importorskip("jax")
    (tmp_path / "user_xla.py").write_text(XLA_MODULE)
    first = _xla_child(tmp_path, XLA_CHILD)
    expected = (np.tanh(np.array([1.0, 2.0, 3.0], "float32") * 3.0) + [1.0, 2.0, 3.0]).tolist()
    np.testing.assert_allclose(first["out"], expected, rtol=1e-6)
    folder = tmp_path / "cache" / "xla-lowered"
    [name] = os.listdir(folder)
    good = (folder / name).read_bytes()
    header_end = good.index(b"\n", len(b"d2s-xla-lowered\n"))
    # one bit in the header's metadata (a result shape), one in the module's bytes
    for position in (good.index(b'"results"') + 14, header_end + 40):
        (folder / name).write_bytes(good)
        _flip(folder / name, position)
        again = _xla_child(tmp_path, XLA_CHILD)
        assert again["traced"] == 1 and again["out"] == first["out"], position
    assert _xla_child(tmp_path, XLA_CHILD)["traced"] == 0    # rewritten, then read


JAX_CHILD = textwrap.dedent("""\
    import json, sys
    import jax, jax.numpy as jnp
    import numpy as np
    from d2s.backends.xla import persistent
    def f(x):
        return jnp.sin(x) * 3.0 + jnp.cos(x) @ jnp.ones((4, 4))
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    with persistent.watching_cache_hits() as hits:
        compiled = persistent.compile(jax.jit(f).lower(x))
    print(json.dumps({"hits": len(hits), "out": np.asarray(compiled(x)).tolist(),
                      "want": np.asarray(f(x)).tolist()}))
    """)


def test_a_flipped_bit_in_an_xla_compilation_cache_entry_is_detected(tmp_path):
    pytest.importorskip("jax")
    first = _xla_child(tmp_path, JAX_CHILD)
    assert first["hits"] == 0
    np.testing.assert_allclose(first["out"], first["want"], rtol=1e-6)
    folder = tmp_path / "cache" / "xla"
    entries = [n for n in os.listdir(folder) if n.endswith("-cache")]
    assert len(entries) == 1
    assert _xla_child(tmp_path, JAX_CHILD)["hits"] == 1         # read back
    path = folder / entries[0]
    good = path.read_bytes()
    # d2s's store wrote it (JAX's own files carry no checksum)
    assert cache_dir.digest(entries[0], good[:-32]) == good[-32:].hex()
    for position in (len(good) // 3, len(good) - 5):
        path.write_bytes(good)
        _flip(path, position)
        again = _xla_child(tmp_path, JAX_CHILD)
        assert again["hits"] == 0 and again["out"] == first["out"], position


# ---- eviction ---------------------------------------------------------------------------------

def test_each_folder_stays_under_its_bound_least_recently_used_first(cache, monkeypatch,
                                                                     compiles):
    monkeypatch.setenv(cache_dir.MAX_MB_VAR, str(12_000 / 2**20))      # 12 kB
    texts = [f"def outer(a):\n    return [a * {i}.0, '{'y' * 900}']\n" for i in range(12)]
    folder = cache / "bytecode"
    now = 1_000_000_000
    for i, text in enumerate(texts[:8]):
        bytecode_cache.compile_module(text, f"<{i}>")
        os.utime(bytecode_cache.entry_path(text), (now + i, now + i))  # written in order
    assert len(compiles) == 8
    bytecode_cache.compile_module(texts[0], "<again>")                # a hit: used now
    assert len(compiles) == 8
    for i, text in enumerate(texts[8:], 8):
        bytecode_cache.compile_module(text, f"<{i}>")
        sizes = [p.stat().st_size for p in folder.iterdir()]
        assert sum(sizes) <= 12_000
    kept = set(os.listdir(folder))
    assert 6 <= len(kept) < 12                                    # one eviction
    assert bytecode_cache.entry_name(texts[0]) in kept         # used lately: kept
    assert bytecode_cache.entry_name(texts[1]) not in kept     # the oldest unused: gone
    assert bytecode_cache.entry_name(texts[-1]) in kept        # the newest


WRITER = textwrap.dedent("""\
    import sys
    from d2s import bytecode_cache
    seed = int(sys.argv[1])
    for i in range(60):
        text = f"def outer(a):\\n    return [a * {i % 20}.0, '{'z' * 900}', {seed}]\\n"
        namespace = {}
        exec(bytecode_cache.compile_module(text, "<w>"), namespace)
        assert namespace["outer"](2.0)[0] == 2.0 * (i % 20), i
    print("ok")
    """)


def test_concurrent_processes_writing_and_evicting_never_fail(cache, monkeypatch):
    monkeypatch.setenv(cache_dir.MAX_MB_VAR, str(20_000 / 2**20))
    env = dict(os.environ, D2S_CACHE_DIR=str(cache), PYTHONPATH=ROOT,
               PYTHONWARNINGS="error::RuntimeWarning")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(seed % 2)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and out.strip() == "ok", err
    cache_dir.evict("bytecode")
    held = [p.stat().st_size for p in (cache / "bytecode").iterdir() if not p.name.startswith(".")]
    assert 0 < sum(held) <= 20_000


def test_eviction_survives_entries_removed_by_another_process(cache, monkeypatch):
    folder = cache / "bytecode"
    for i in range(5):
        bytecode_cache.compile_module(f"x = {i}\n", "<x>")
    listed = cache_dir._entry_groups

    def racing(dfd):
        groups = listed(dfd)
        for name in os.listdir(folder):    # another process evicted them all meanwhile
            os.unlink(folder / name)
        return groups
    monkeypatch.setattr(cache_dir, "_entry_groups", racing)
    monkeypatch.setenv(cache_dir.MAX_MB_VAR, str(1 / 2**20))
    assert cache_dir.evict("bytecode") == 0
    assert not [n for n in os.listdir(folder) if not n.startswith(".")]


def test_a_large_folders_recorded_size_spares_the_next_process_a_listing(cache, monkeypatch):
    monkeypatch.setattr(cache_dir, "_MARKED_FROM", 3)
    folder = cache_dir.subfolder("convert")
    for i in range(3):                                          # left by earlier processes
        with open(os.path.join(folder, f"e{i}"), "wb") as f:
            f.write(b"x" * 100)
    cache_dir.write_entry("convert", "e3", b"x" * 100)
    assert (cache / "convert" / ".size").read_text() == "400"   # listed at the first write
    listings = []
    real = cache_dir._entry_groups
    monkeypatch.setattr(cache_dir, "_entry_groups", lambda dfd: listings.append(1) or real(dfd))
    monkeypatch.setattr(cache_dir, "_sizes", {})                # another process
    cache_dir.write_entry("convert", "e9", b"x" * 100)
    assert listings == []
    monkeypatch.setenv(cache_dir.MAX_MB_VAR, str(450 / 2**20))  # past the bound: listed
    cache_dir.write_entry("convert", "e10", b"x" * 100)
    assert listings == [1]
    assert sum(p.stat().st_size for p in (cache / "convert").iterdir()
               if not p.name.startswith(".")) <= 450


def test_the_bound_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv(cache_dir.MAX_MB_VAR, raising=False)
    assert cache_dir.max_bytes() == cache_dir.DEFAULT_MAX_MB * 2**20
    monkeypatch.setenv(cache_dir.MAX_MB_VAR, "0")
    assert cache_dir.max_bytes() is None
    monkeypatch.setenv(cache_dir.MAX_MB_VAR, "lots")
    with pytest.warns(RuntimeWarning, match="D2S_CACHE_MAX_MB"):
        assert cache_dir.max_bytes() == cache_dir.DEFAULT_MAX_MB * 2**20


def test_missing_folders_on_the_way_are_created_private(tmp_path, monkeypatch, compiles):
    root = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv(cache_dir.ENV_VAR, str(root))
    bytecode_cache.compile_module(TEXT, "<a>")
    bytecode_cache.compile_module(TEXT, "<b>")
    assert compiles == ["<a>"]
    for folder in (tmp_path / "a", root, root / "bytecode"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_entries_are_private(cache):
    bytecode_cache.compile_module(TEXT, "<a>")
    assert stat.S_IMODE(os.stat(bytecode_cache.entry_path(TEXT)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(cache / "bytecode").st_mode) == 0o700


# ---- globals frozen at the trace: warned once ------------------------------------------------

GLOBALS_MODULE = textwrap.dedent("""\
    import d2s

    SCALE = 2.0
    SHIFT = (1.0, 0.5)


    def f(x):
        return x * SCALE + SHIFT[0]
    """)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_traced_global_rebound_later_is_guarded(tmp_path, monkeypatch, backend):
    if backend == "xla":
        pytest.importorskip("jax")
    import d2s
    from d2s.jit import global_watch
    monkeypatch.setenv(cache_dir.ENV_VAR, "")
    (tmp_path / "globals_mod.py").write_text(GLOBALS_MODULE)
    namespace = {"__name__": "globals_mod"}
    exec(compile(GLOBALS_MODULE, str(tmp_path / "globals_mod.py"), "exec"), namespace)
    f = d2s.jit.to_static(namespace["f"], backend=backend)
    x = d2s.to_tensor(np.array([1.0, 2.0], "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # unchanged globals: no warning
        for _ in range(3):
            np.testing.assert_allclose(f(x).numpy(), [3.0, 5.0])
    traced = namespace["SCALE"], namespace["SHIFT"]
    namespace["SCALE"] = float("2.0")                 # the same value, rebound: no warning
    namespace["SHIFT"] = tuple([1.0, 0.5])
    assert namespace["SCALE"] is not traced[0] and namespace["SHIFT"] is not traced[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            np.testing.assert_allclose(f(x).numpy(), [3.0, 5.0])
    assert len(f.program_cache) == 1               # equal data: the same program
    namespace["SCALE"] = 20.0                      # other data: traced again for it
    np.testing.assert_allclose(f(x).numpy(), [21.0, 41.0])
    namespace["SCALE"] = 2.0                       # back: the first program again
    np.testing.assert_allclose(f(x).numpy(), [3.0, 5.0])
    namespace["SCALE"] = 20.0
    np.testing.assert_allclose(f(x).numpy(), [21.0, 41.0])
    with pytest.warns(RuntimeWarning, match=r"global\(s\) 'SCALE' read by f .*values") as record:
        for k in range(global_watch.MAX_VALUES + 2):   # past the limit: warned once
            namespace["SCALE"] = float(k + 100)
            np.testing.assert_allclose(f(x).numpy(), [k + 101.0, 2 * k + 201.0])
    assert len(_d2s_warnings(record)) == 1
    assert "globals_mod.py" in str(record[0].message)


def test_globals_the_function_assigns_are_not_watched():
    from d2s.jit import global_watch
    namespace = {"__name__": "writes_mod"}
    exec(textwrap.dedent("""\
        MODE = "train"
        STEPS = 0

        def f(x):
            global STEPS
            if MODE == "train":
                STEPS += 1
            return x
        """), namespace)
    watch = global_watch.watch(namespace["f"])
    assert [name for name, _ in watch.watched] == ["MODE"]
