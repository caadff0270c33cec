"""The xla backend's engine: dtypes, promotion, x64 scoping, per-shape
executables, StableHLO, fallbacks and lowering failures."""
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import static  # noqa: E402
from d2s.backends.xla import LoweringError  # noqa: E402
from d2s.core.registry import OPS  # noqa: E402
from d2s.static.backend import BackendFallbackWarning  # noqa: E402

from xla_helpers import assert_same, both, run, xla_program  # noqa: E402


def _program(build, feeds):
    prog = static.Program()
    with static.program_guard(prog):
        xs = [static.data(name, shape, dtype) for name, (shape, dtype) in feeds.items()]
        outs = build(*xs)
    return prog, outs if isinstance(outs, (list, tuple)) else [outs]


def test_64_bit_values_stay_64_bit_and_the_users_jax_config_is_untouched():
    assert jax.config.jax_enable_x64 is False
    prog, outs = _program(lambda x, n: [x * 3.0, n * 3, d2s.cast(n, "float64") / 7.0],
                          {"x": ([4], "float64"), "n": ([4], "int64")})
    feed = {"x": np.arange(4.0) / 3.0, "n": np.array([1, 2, 3, 2 ** 40])}
    want, got = both(prog, feed, outs)
    assert [g.dtype for g in got] == [np.float64, np.int64, np.float64]
    assert got[1][3] == 3 * 2 ** 40  # would wrap in 32 bits
    assert jax.config.jax_enable_x64 is False
    assert jax.numpy.asarray(1.0).dtype == np.float32  # the user's JAX: still 32-bit


@pytest.mark.parametrize("a, b", [("int64", "float32"), ("float32", "float64"),
                                  ("int32", "int64"), ("bool", "float32"), ("int64", "bool")])
def test_operands_promote_by_numpy_2_rules(a, b):
    """JAX gives float32 for int64 * float32; numpy (and d2s) float64."""
    prog, outs = _program(lambda x, y: [x * y, x + y, d2s.maximum(x, y), d2s.where(x > 0, x, y),
                                        d2s.concat([d2s.cast(x, a), y])],
                          {"x": ([3], a), "y": ([3], b)})
    feed = {"x": np.array([1, 0, 1]).astype(a), "y": np.array([1.5, 2, 0]).astype(b)}
    want, got = both(prog, feed, outs)
    expected = np.result_type(np.dtype(a), np.dtype(b))
    assert all(g.dtype == expected for g in got)


def test_one_executable_per_concrete_shape_and_results_per_shape():
    prog, outs = _program(lambda x: [d2s.tanh(x @ d2s.ones([3, 2])).sum(axis=0)],
                          {"x": ([None, 3], "float32")})
    for n in (1, 4, 4, 7, 1):
        both(prog, {"x": np.random.default_rng(n).normal(size=(n, 3)).astype("float32")}, outs)
    assert len(xla_program(prog)._executables) == 3


def test_stablehlo_is_viewable_and_control_flow_lowers_to_case_and_while():
    def build(x):
        y = static.nn.cond(x.sum() > 0, lambda: x * 2.0, lambda: -x)
        (z,) = static.nn.while_loop(lambda z: z.sum() < 100.0, lambda z: [z * 1.5 + 1.0], [y])
        return [z]
    prog, outs = _program(build, {"x": ([3], "float32")})
    assert {"cond", "while"} <= {op.type for op in prog.all_ops()}
    feed = {"x": np.array([1.0, -2.0, 0.5], np.float32)}
    text = static.Executor(backend="xla").lowered_text(prog, feed=feed, fetch_list=outs)
    assert "stablehlo.case" in text and "stablehlo.while" in text
    both(prog, feed, outs)
    source = static.Executor(backend="numpy").lowered_text(prog, feed=feed, fetch_list=outs)
    assert source.startswith("def executor(") and "while True:" in source


def test_a_product_of_matrix_transposes_contracts_the_matrices_themselves():
    """`a.T @ g` and `g @ w.T` (a gradient's products) lower to one dot_general
    each, contracting the other axis, as JAX's autodiff emits them: no
    transpose is left for XLA to compile. A transpose read elsewhere too, of
    more than two axes, or of a product of another dtype stays as it was."""
    def build(a, g, w, v, b):
        return [d2s.transpose(a) @ g, g @ d2s.transpose(w), d2s.transpose(a) @ d2s.transpose(v),
                d2s.transpose(b, [0, 2, 1]) @ g, d2s.transpose(a) @ d2s.cast(g, "float64")]
    shapes = {"a": [5, 3], "g": [5, 4], "w": [2, 4], "v": [3, 5], "b": [2, 5, 3]}
    prog, outs = _program(build, {n: (s, "float32") for n, s in shapes.items()})
    rng = np.random.default_rng(0)
    feed = {n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()}
    want, got = both(prog, feed, outs)
    a, g, w, v = (feed[n] for n in "agwv")
    for result, expected in zip(got, [a.T @ g, g @ w.T, a.T @ v.T]):
        np.testing.assert_allclose(result, expected, rtol=1e-5)
    text = static.Executor(backend="xla").lowered_text(prog, feed=feed, fetch_list=outs)
    assert text.count("stablehlo.transpose") == 2  # b's three axes; a.T for the float64 product
    assert "contracting_dims = [0] x [0]" in text and "contracting_dims = [1] x [1]" in text
    assert "contracting_dims = [0] x [1]" in text


@d2s.jit.to_static
def _scaled(x, flag, n):
    if flag:                 # Python values: plain Python, no op
        x = x * 2.0
    k = 0
    while k < n:
        x = x + 1.0
        k += 1
    if x.sum() > 0:          # a tensor: a cond op
        x = x - 1.0
    return x


def test_python_values_keep_python_semantics_tensor_values_build_ops():
    from xla_helpers import op_types, program_of
    x = d2s.to_tensor(np.array([1.0, 2.0]))
    prog, feed, fetch = program_of(_scaled, x, True, 3)
    assert op_types(prog) & {"cond", "while"} == {"cond"}
    _, (got,) = both(prog, feed, fetch)
    np.testing.assert_array_equal(got, [4.0, 6.0])
    prog, feed, fetch = program_of(_scaled, x, False, 0)
    _, (got,) = both(prog, feed, fetch)
    np.testing.assert_array_equal(got, [0.0, 1.0])


def test_an_op_that_cannot_lower_runs_on_numpy_with_one_warning_naming_it():
    # a random draw under a tensor `if`: how many values a run draws depends on the data
    prog, outs = _program(lambda x: [static.nn.cond(
        x.sum() > 0, lambda: x + d2s.rand([3]) * 0.0, lambda: x)],  # the line the warning names
        {"x": ([3], "float32")})
    feed = {"x": np.ones(3, np.float32)}
    exe = static.Executor(backend="xla")
    with pytest.warns(BackendFallbackWarning,
                      match=r"op 'uniform' at .*test_xla_engine.py, line \d+ .*d2s.rand.*numpy"):
        got = exe.run(prog, feed=feed, fetch_list=outs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = exe.run(prog, feed=feed, fetch_list=outs)  # decided once: no second warning
    assert_same(got, [np.ones(3, np.float32)])
    assert_same(again, got)


def test_a_data_dependent_shape_found_while_tracing_falls_back_once():
    prog, outs = _program(lambda x: [x[x > 0].sum()], {"x": ([4], "float64")})
    feed = {"x": np.array([1.0, -2.0, 3.0, -4.0])}
    with pytest.warns(BackendFallbackWarning, match="bool mask"):
        got = run("xla", prog, feed, outs)
    assert_same(got, run("numpy", prog, feed, outs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run("xla", prog, feed, outs)


def test_same_errors_as_numpy_for_bad_feeds_and_kernel_errors():
    prog, outs = _program(lambda x, m: [d2s.matmul(x, m)],
                          {"x": ([2, None], "float32"), "m": ([None, 2], "float32")})
    bad = {"x": np.ones((2, 3), np.float32), "m": np.ones((4, 2), np.float32)}
    errors = []
    for backend in ("numpy", "xla"):
        with pytest.raises(ValueError) as info:
            run(backend, prog, bad, outs)
        errors.append(str(info.value))
        with pytest.raises(ValueError, match="expected dtype float32, got float64"):
            run(backend, prog, {"x": np.ones((2, 3)), "m": bad["m"]}, outs)
    assert errors[0] == errors[1] and "op 'matmul'" in errors[0]


def test_a_constant_out_of_range_index_raises_index_error_on_both():
    prog, outs = _program(lambda x: [x[np.array([0, 5])]], {"x": ([3], "float64")})
    messages = []
    for backend in ("numpy", "xla"):
        with pytest.raises(IndexError) as info:
            run(backend, prog, {"x": np.ones(3)}, outs)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "out of bounds" in messages[0]


def test_a_dynamic_out_of_range_index_is_clamped_on_xla():
    """Documented in the README: XLA clamps indices only known at run time."""
    prog, outs = _program(lambda x, i: [x[i]], {"x": ([3], "float64"), "i": ([], "int64")})
    feed = {"x": np.array([1.0, 2.0, 3.0]), "i": np.int64(7)}
    with pytest.raises(IndexError):
        run("numpy", prog, feed, outs)
    assert run("xla", prog, feed, outs)[0] == 3.0


def test_a_rule_giving_the_wrong_dtype_is_a_loud_error_and_caches_nothing(monkeypatch):
    prog, outs = _program(lambda x: [d2s.exp(x)], {"x": ([2], "float32")})
    feed = {"x": np.zeros(2, np.float32)}
    exp = OPS["exp"]
    monkeypatch.setitem(exp.lowerings, "xla", lambda ns, x: ns.jnp.exp(x).astype("float64"))
    with pytest.raises(LoweringError, match=r"op 'exp' gave float64\[2\].*says float32\[2\]"):
        run("xla", prog, feed, outs)
    assert xla_program(prog)._executables == {}  # nothing half-built was kept
    monkeypatch.undo()
    assert_same(run("xla", prog, feed, outs), [np.ones(2, np.float32)])


def test_a_failing_rule_leaves_no_cache_entry_and_names_the_op(monkeypatch):
    prog, outs = _program(lambda x: [d2s.tanh(x)], {"x": ([2], "float64")})
    feed = {"x": np.zeros(2)}

    def broken(ns, x):
        raise RuntimeError("rule bug")
    monkeypatch.setitem(OPS["tanh"].lowerings, "xla", broken)
    monkeypatch.setitem(OPS["tanh"].__dict__, "kernel", np.tanh)
    with pytest.raises(RuntimeError, match=r"rule bug \(op 'tanh' built at .*test_xla_engine"):
        run("xla", prog, feed, outs)
    assert xla_program(prog)._executables == {}
    monkeypatch.undo()
    assert_same(run("xla", prog, feed, outs), [np.zeros(2)])


def test_unknown_backend_names_are_rejected():
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        static.Executor(backend="tpu")
    with pytest.raises(ValueError, match="set_backend: unknown backend"):
        d2s.jit.set_backend("cuda")


def test_set_backend_makes_xla_the_default_and_back():
    prog, outs = _program(lambda x: [x * 2.0], {"x": ([2], "float32")})
    try:
        d2s.jit.set_backend("xla")
        assert d2s.jit.get_backend() == "xla"
        static.Executor().run(prog, feed={"x": np.ones(2, np.float32)}, fetch_list=outs)
        assert "_xla_runners" in prog.__dict__
    finally:
        from d2s import backends as backend
        backend._STATE["default"] = None
    assert d2s.jit.get_backend() in ("numpy", "xla")  # D2S_BACKEND decides again


@pytest.mark.parametrize("enabled", [True, False])
def test_compiles_pause_garbage_collection_and_restore_it_also_after_a_failure(
        enabled, monkeypatch):
    import gc
    from d2s.backends.xla import program as xla_program_module
    seen = []
    real_compile = xla_program_module.persistent.compile

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_compile(*args, **kwargs)
    monkeypatch.setattr(xla_program_module.persistent, "compile", recording)
    # a program of its own per case: the second case would otherwise load the
    # first one's executable from the cache folder, compiling nothing
    scale = 2.0 if enabled else 3.0
    prog, outs = _program(lambda x: d2s.tanh(x) * scale, {"x": ([3], "float32")})
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        want, got = both(prog, {"x": np.arange(3.0, dtype="float32")}, outs)
        assert_same(got, want)
        assert seen == [False] and gc.isenabled() is enabled  # paused, then as it was
        monkeypatch.setitem(OPS["exp"].lowerings, "xla",
                            lambda ns, x: ns.jnp.exp(x).astype("float64"))
        prog2, outs2 = _program(lambda x: d2s.exp(x), {"x": ([3], "float32")})
        with pytest.raises(LoweringError):
            run("xla", prog2, {"x": np.zeros(3, "float32")}, outs2)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
