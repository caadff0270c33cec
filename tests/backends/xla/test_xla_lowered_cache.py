"""The lowered-program cache (`d2s.backends.xla.lowered_cache`): a second
process reads what the first lowered instead of tracing again, loads what it
compiled instead of compiling again (where the compiler environment is the
same), computes the same numbers (parameters on the device, a donating training step), leaves
programs with host effects or error sites (but kernels' checks) to the
uncached path, and ignores
damaged entries (rewriting them).

Whether a process traced a program is observed by counting calls of
`lower_program` (the d2s ops traced by JAX), whether it compiled one by
counting calls of `persistent.compile`, never by timing.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import static  # noqa: E402
from d2s.backends.xla import lowered_cache  # noqa: E402
from d2s.backends.xla.program import XlaProgram  # noqa: E402
from d2s.backends.xla._jax import x64  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
JIT_TESTS = os.path.join(ROOT, "tests", "jit")

CHILD = textwrap.dedent('''\
    import json, os, sys
    sys.path[:0] = {paths!r}
    import numpy as np
    import d2s
    from d2s.jit import to_static
    from d2s.backends.xla import program as xla_program
    from train_step_helpers import MLP, batch, make, standard_step

    traced = []
    real = xla_program.lower_program
    def counting(*args, **kwargs):
        traced.append(1)
        return real(*args, **kwargs)
    xla_program.lower_program = counting
    from d2s.backends.xla import persistent
    compiled = []
    real_compile = persistent.compile
    def counting_compile(*args, **kwargs):
        compiled.append(1)
        return real_compile(*args, **kwargs)
    persistent.compile = counting_compile
    d2s.jit.set_backend("xla")

    w = d2s.to_tensor(np.linspace(-1, 1, 12).reshape(3, 4).astype("float32"))

    @to_static
    def dense(x):
        return d2s.tanh(x @ w) + 1.0

    @to_static
    def grow(x):
        while x.sum() < 100.0:
            x = x * 2.0 + 1.0
        return x

    @to_static
    def shout(x):
        print("sum", x.sum())
        return x * 2.0

    @to_static
    def checked(x):
        if x.sum() > 1000.0:
            raise ValueError("too big")
        return x - 1.0

    @to_static
    def looped(x, v):
        h = x * v
        while h.sum() < 50.0:
            h = h * 1.5 + v
        if h.mean() > 10.0:
            h = h * 0.5
        return h

    def gradients():
        # a forward-only converted function differentiated: its forward keeps
        # residuals on the device, its backward is given them
        xg = d2s.to_tensor(np.arange(6, dtype="float32").reshape(2, 3) / 10 + 1.0,
                           stop_gradient=False)
        vg = d2s.to_tensor(np.full(3, 0.5, "float32"), stop_gradient=False)
        h = looped(xg, vg)
        (h * h).sum().backward()
        return [h.numpy().tolist(), xg.grad.numpy().tolist(), vg.grad.numpy().tolist()]

    def bad_labels(step, model):
        # a label out of range: the step's cross_entropy check (a stored
        # program's error site) raises numpy's error and changes nothing
        x0, y0 = batch(0)
        bad = d2s.to_tensor(np.where(np.arange(len(y0.numpy())) == 3, 7, y0.numpy()))
        before = [p.numpy().copy() for p in model.parameters()]
        try:
            step(x0, bad)
            error = None
        except ValueError as e:
            error = str(e)
        return [error, all(np.array_equal(a, p.numpy())
                           for a, p in zip(before, model.parameters()))]

    x = d2s.to_tensor(np.arange(6, dtype="float32").reshape(2, 3) / 10)
    out = {{name: f(x).numpy().tolist()
           for name, f in [("dense", dense), ("grow", grow), ("shout", shout),
                           ("checked", checked)]}}
    out["grads"] = gradients()
    # the StableHLO stays viewable (a loaded executable's module is lowered on demand)
    out["text"] = "stablehlo.tanh" in dense.lowered_text(x)
    model, opt = make(MLP, "sgd")
    step = to_static(standard_step(model, opt))
    out["losses"] = [float(step(*batch(i)).numpy()) for i in range(3)]
    out["params"] = [p.numpy().tolist() for p in model.parameters()]
    out["bad_labels"] = bad_labels(step, model)
    # the reference: the same functions and step on the numpy backend
    d2s.jit.set_backend("numpy")
    ref = {{name: f(x).numpy().tolist()
           for name, f in [("dense", dense), ("grow", grow), ("checked", checked)]}}
    ref["grads"] = gradients()
    model, opt = make(MLP, "sgd")
    step = to_static(standard_step(model, opt))
    ref["losses"] = [float(step(*batch(i)).numpy()) for i in range(3)]
    ref["params"] = [p.numpy().tolist() for p in model.parameters()]
    ref["bad_labels"] = bad_labels(step, model)
    out["numpy"] = ref
    folder = os.path.join(os.environ["D2S_CACHE_DIR"], "xla-lowered")
    out["entries"] = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    out["traced"] = len(traced)
    out["compiled"] = len(compiled)
    print(json.dumps(out))
''')


def _child(cache, prelude=""):
    """Run CHILD (from a file: to_static converts source) in a fresh process,
    after `prelude` (code run first)."""
    script = cache.parent / "child_script.py"
    script.write_text(prelude + CHILD.format(paths=[ROOT, JIT_TESTS]))
    env = dict(os.environ, D2S_CACHE_DIR=str(cache), JAX_PLATFORMS="cpu")
    env.pop("D2S_BACKEND", None)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("sum")  # the print op printed, in both processes
    return json.loads(lines[-1])


NUMBERS = ("dense", "grow", "shout", "checked", "grads", "losses", "params", "bad_labels")


def test_a_second_process_reads_the_lowered_programs_and_computes_the_same(tmp_path):
    first = _child(tmp_path / "cache")
    # dense, grow, looped's forward (keeping residuals) and backward (given them)
    # and the training step are stored; the print and the raise are not.
    assert len(first["entries"]) == 5
    assert first["traced"] == 7
    second = _child(tmp_path / "cache")
    assert second["entries"] == first["entries"]
    assert second["traced"] == 2  # only the print and the raise are traced again
    assert first["compiled"] == 7 and second["compiled"] == 2  # ... and compiled again
    assert first["text"] and second["text"]
    for name in NUMBERS:
        assert second[name] == first[name], name  # the same executables: equal numbers
    x = np.arange(6, dtype="float32").reshape(2, 3) / 10
    w = np.linspace(-1, 1, 12).reshape(3, 4).astype("float32")
    np.testing.assert_allclose(first["dense"], np.tanh(x @ w) + 1.0, rtol=1e-6)
    for name, ref in second["numpy"].items():  # the numpy backend on the same programs
        if name == "bad_labels":
            continue  # (an error and a flag: compared below)
        np.testing.assert_allclose(np.concatenate([np.ravel(a) for a in second[name]]),
                                   np.concatenate([np.ravel(a) for a in ref]),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    assert first["losses"][2] < first["losses"][0]  # the step trained (donated parameters)
    # its label check (an error site the entry records): numpy's error, nothing changed
    assert first["bad_labels"] == second["bad_labels"] == first["numpy"]["bad_labels"]
    assert first["bad_labels"][0].startswith("cross_entropy: labels must lie in [0, 4), got")
    assert first["bad_labels"][1]


def test_damaged_entries_are_ignored_and_rewritten(tmp_path):
    first = _child(tmp_path / "cache")
    folder = tmp_path / "cache" / "xla-lowered"
    damages = [lambda data: data[:len(data) // 2],            # truncated
               lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # checksum no longer matches
               lambda data: b"not an entry\n" + data]         # foreign file
    for i, name in enumerate(first["entries"]):  # every entry, damaged one way or another
        damage = damages[i % len(damages)]
        path = folder / name
        path.write_bytes(damage(path.read_bytes()))
    second = _child(tmp_path / "cache")
    assert second["traced"] == first["traced"]  # every damaged entry missed
    for name in NUMBERS:
        assert second[name] == first[name], name
    third = _child(tmp_path / "cache")
    assert third["traced"] == 2  # rewritten: read again
    assert third["compiled"] == 2


def _set_environment(path, env):
    """Rewrite the executable's environment in the entry at `path` (its checksum,
    which covers what follows the header, stays valid)."""
    magic, header, blob = path.read_bytes().split(b"\n", 2)
    entry = json.loads(header)
    assert entry["env"] is not None  # an executable was stored
    entry["env"] = env
    path.write_bytes(magic + b"\n" + json.dumps(entry).encode() + b"\n" + blob)


def test_an_executable_from_another_compiler_environment_is_compiled_again(tmp_path):
    first = _child(tmp_path / "cache")
    folder = tmp_path / "cache" / "xla-lowered"
    for name in first["entries"]:
        _set_environment(folder / name, "platform cpu another version")
    second = _child(tmp_path / "cache")
    assert second["traced"] == 2  # the lowered modules are still read ...
    assert second["compiled"] == 7  # ... but compiled here, not loaded
    for name in NUMBERS:
        assert second[name] == first[name], name
    third = _child(tmp_path / "cache")  # rewritten for this environment: loaded
    assert (third["traced"], third["compiled"]) == (2, 2)


def _program(build, shapes):
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(f"x{i}", shape, "float32") for i, shape in enumerate(shapes)]
        outs = build(*xs)
    return prog, [v.name for v in outs]


def _key(prog, fetch, shapes):
    xp = XlaProgram(prog, [f"x{i}" for i in range(len(shapes))], fetch)
    with x64():
        specs = [jax.ShapeDtypeStruct(s, np.float32) for s in shapes]
        return lowered_cache.program_key(xp, specs)


def test_the_key_names_constants_by_value_and_shapes():
    keys = set()
    for constant in (2.0, 3.0):
        prog, fetch = _program(lambda x: [x * constant], [[2]])
        keys.add(_key(prog, fetch, [(2,)]))
    prog, fetch = _program(lambda x: [x * 2.0], [[None]])
    keys |= {_key(prog, fetch, [(4,)]), _key(prog, fetch, [(3,)])}
    assert None not in keys and len(keys) == 4


def test_a_program_whose_attributes_cannot_be_named_is_not_keyed():
    prog, fetch = _program(lambda x: [x * 2.0], [[2]])
    op = prog.global_block().ops[-1]
    op.attrs["opaque"] = object()  # no exact name: never shares a key by accident
    assert _key(prog, fetch, [(2,)]) is None


def test_result_structures_round_trip_through_their_description():
    from d2s.backends.xla import result_tree
    from d2s.backends.xla.values import History, TensorArray
    results = (1, 2, {"a": (3, None), "b": TensorArray(4, 5, 7), "c": {},
                      "d": History({"h": (6, [7])}, 8)})
    tree = jax.tree_util.tree_structure(results)
    description = json.loads(json.dumps(result_tree.describe(tree)))  # as an entry stores it
    assert jax.tree_util.tree_structure(result_tree.example(description)) == tree
    assert result_tree.describe(jax.tree_util.tree_structure((1, {2: 3}))) is None  # key not text
    assert result_tree.example(["set", None, []]) is None


def test_the_compiler_environment_names_the_xla_flags_and_compile_options(monkeypatch):
    from d2s.backends.xla import stored_executable
    base = stored_executable.environment()
    assert stored_executable.environment() == base
    flags = os.environ.get("XLA_FLAGS", "")
    monkeypatch.setenv("XLA_FLAGS", flags + " --xla_cpu_enable_fast_math=true")
    flagged = stored_executable.environment()
    monkeypatch.undo()
    with jax.default_matmul_precision("highest"):
        precise = stored_executable.environment()
    assert len({base, flagged, precise}) == 3


def test_an_entry_without_an_executable_is_compiled_through_jax_s_cache(tmp_path):
    """(JAX could not serialize the executable: the entry holds the module only.)"""
    first = _child(tmp_path / "cache")
    folder = tmp_path / "cache" / "xla-lowered"
    for name in first["entries"]:
        path = folder / name
        magic, header, blob = path.read_bytes().split(b"\n", 2)
        entry = json.loads(header)
        blob = blob[:entry["module"]]
        entry.update(env=None)
        entry["checksum"] = lowered_cache._checksum(name, entry, blob)  # a valid entry
        path.write_bytes(magic + b"\n" + json.dumps(entry).encode() + b"\n" + blob)
    jax_cache = tmp_path / "cache" / "xla"
    before = set(os.listdir(jax_cache))  # so far: the program with a run-time check
    for _ in range(2):  # the entries stay as they are: compiled every time, never traced
        later = _child(tmp_path / "cache")
        assert (later["traced"], later["compiled"]) == (2, 7)
        for name in NUMBERS:
            assert later[name] == first[name], name
    added = {f.rsplit("-", 1)[0] for f in set(os.listdir(jax_cache)) - before}  # <name>-<hash>
    assert len(added) >= 5  # JAX's compilation cache holds the five stored programs now


def test_executables_jax_loaded_from_a_users_own_cache_are_not_stored(tmp_path):
    """A user who turned JAX's compilation cache on globally: a later process
    with an empty d2s cache gets d2s's compiles from the user's JAX cache.
    Such an executable serializes without its kernels, so it is not stored
    (a third process loading it would fail with "Function ... not found"):
    the entries hold the module only, and the third process computes the
    same numbers through JAX's cache."""
    users_cache = tmp_path / "users-jax-cache"
    prelude = (f"import jax\njax.config.update('jax_compilation_cache_dir', {str(users_cache)!r})\n"
               "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n")
    first = _child(tmp_path / "first", prelude)
    assert os.listdir(users_cache)  # the user's cache holds d2s's compiles now
    second = _child(tmp_path / "second", prelude)  # empty d2s cache: served by JAX's
    third = _child(tmp_path / "second", prelude)   # reads what the second stored
    assert len(second["entries"]) == 5 and third["entries"] == second["entries"]
    # the five stored programs are read, not traced, and compiled (through JAX's
    # cache), as are the print and the raise
    assert (third["traced"], third["compiled"]) == (2, 7)
    for later in (second, third):
        for name in NUMBERS:
            assert later[name] == first[name], name


def _layer_function(layer):
    """A converted function of `layer` (a closure: its parameters are captured)
    and the numpy reference of what it computes."""
    from d2s.jit import to_static

    def f(x):
        return d2s.tanh(layer(x))

    def reference(x):
        return np.tanh(x @ layer.weight.numpy() + layer.bias.numpy())
    return to_static(f, backend="xla"), reference


def _forward_key(static_fn, x):
    xla = static_fn.get_concrete_program(x)._runners["xla"]._forward.xla
    with x64():
        specs = [jax.ShapeDtypeStruct(x.shape, x.dtype)] + [
            jax.ShapeDtypeStruct(t.shape, t.dtype) for t in xla.params.tensors]
        return lowered_cache.program_key(xla, specs)


def test_the_same_function_built_after_other_layers_shares_its_entry(tmp_path, monkeypatch):
    """Parameters are named by a process-wide counter (`linear_0.w_0`, or
    `linear_3.w_0` after three layers): the key names them by position, so a
    function built after other code (as a later process may) reads the entry,
    and computes with its own parameters' values."""
    import d2s.nn as nn
    from d2s.backends.xla import program as xla_program
    monkeypatch.setenv("D2S_CACHE_DIR", str(tmp_path))
    traced = []
    real = xla_program.lower_program
    monkeypatch.setattr(xla_program, "lower_program",
                        lambda *a, **k: traced.append(1) or real(*a, **k))
    x = d2s.to_tensor(np.random.default_rng(0).normal(size=(4, 3)).astype("float32"))
    keys, names = [], []
    for made_before in (0, 3):
        for _ in range(made_before):
            nn.Linear(3, 3)  # moves the global name counter on
        d2s.seed(made_before)
        layer = nn.Linear(3, 2)
        f, reference = _layer_function(layer)
        with d2s.no_grad():
            np.testing.assert_allclose(f(x).numpy(), reference(x.numpy()), rtol=1e-5)
        keys.append(_forward_key(f, x))
        names.append(list(f.get_concrete_program(x).main_program.captured))
    assert names[0] != names[1]  # other names ...
    assert keys[0] is not None and keys[0] == keys[1]  # ... one key
    assert len(traced) == 1  # the second build read the entry the first wrote
    wider, _ = _layer_function(nn.Linear(3, 5))
    with d2s.no_grad():
        wider(x)
    assert _forward_key(wider, x) not in keys  # another program: another key
