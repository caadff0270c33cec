"""StaticFunction: caching per signature, InputSpec, the switch, fallback, threads."""
import threading
import warnings

import numpy as np
import pytest

import d2s
from d2s.jit import InputSpec, to_static


def _ops(sf, *args):
    prog = sf.get_concrete_program(*args).main_program
    return [op.type for op in prog.all_ops()]


def scale_then_branch(x, k):
    y = x * k
    if y.sum() > 0:
        y = y + 1.0
    else:
        y = y - 1.0
    return y


def _ref(x, k):
    y = x * k
    return y + 1.0 if y.sum() > 0 else y - 1.0


def test_one_program_per_signature_and_python_values_in_key():
    sf = to_static(scale_then_branch)
    a = np.array([1.0, 2.0], np.float32)
    for k in (2.0, 2.0, -3.0):
        out = sf(d2s.to_tensor(a), k)
        np.testing.assert_allclose(out.numpy(), _ref(a, k))
    assert len(sf.program_cache) == 2  # k=2.0 and k=-3.0
    sf(d2s.to_tensor(np.ones((3,), np.float32)), 2.0)  # new shape
    sf(d2s.to_tensor(np.ones((2,), np.float64)), 2.0)  # new dtype
    assert len(sf.program_cache) == 4
    assert "cond" in _ops(sf, d2s.to_tensor(a), 2.0)


def test_input_spec_none_dim_serves_every_size():
    sf = to_static(scale_then_branch, input_spec=[InputSpec([None], "float32")])
    for n in (1, 4, 9):
        a = np.linspace(-1, 1, n).astype(np.float32) + 0.3
        np.testing.assert_allclose(sf(d2s.to_tensor(a), 2.0).numpy(), _ref(a, 2.0), rtol=1e-6)
    assert len(sf.program_cache) == 1
    concrete = sf.get_concrete_program(d2s.to_tensor(np.ones(2, np.float32)), 2.0)
    assert concrete.inputs[0].shape == (None,)
    assert concrete.outputs[0].shape == (None,)


@pytest.mark.parametrize("value, message", [
    (np.ones((2,), np.float64), "argument 'x': dtype float64 does not match"),
    (np.ones((2, 2), np.float32), r"argument 'x': shape \[2, 2\] does not match"),
])
def test_input_spec_mismatch_is_a_clear_error_and_cache_stays_clean(value, message):
    sf = to_static(scale_then_branch, input_spec=[InputSpec([None], "float32")])
    with pytest.raises(ValueError, match=message):
        sf(d2s.to_tensor(value), 1.0)
    assert len(sf.program_cache) == 0
    assert sf(d2s.to_tensor(np.ones(2, np.float32)), 1.0).numpy().tolist() == [2.0, 2.0]


def test_enable_to_static_false_runs_the_original_eagerly():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2.0

    sf = to_static(f)
    x = d2s.to_tensor([1.0])
    try:
        d2s.jit.enable_to_static(False)
        for _ in range(3):
            assert sf(x).numpy().tolist() == [2.0]
        assert len(calls) == 3 and len(sf.program_cache) == 0
    finally:
        d2s.jit.enable_to_static(True)
    for _ in range(3):
        assert sf(x).numpy().tolist() == [2.0]
    assert len(calls) == 4  # Python side effects happen once per trace
    assert len(sf.program_cache) == 1


def test_code_and_dygraph_function():
    sf = to_static(scale_then_branch)
    assert sf.dygraph_function is scale_then_branch
    assert "convert_ifelse" in sf.code and "def scale_then_branch" in sf.code


def test_set_code_level_logs_converted_code(capsys):
    def g(x):
        return x + 1.0

    d2s.jit.set_code_level(1)
    try:
        to_static(g)(d2s.to_tensor([1.0]))
    finally:
        d2s.jit.set_code_level(0)
    assert "def g(x)" in capsys.readouterr().out


@d2s.jit.not_to_static
def _python_helper(x, log):
    log.append("called")
    return x * 3.0


def test_not_to_static_functions_run_as_plain_python_while_tracing():
    log = []

    def f(x):
        return _python_helper(x, log) + 1.0

    sf = to_static(f)
    assert sf(d2s.to_tensor([1.0])).numpy().tolist() == [4.0]
    assert sf(d2s.to_tensor([2.0])).numpy().tolist() == [7.0]
    assert log == ["called"]  # traced once


_calls = 0


def _uses_global_in_branch(x):
    global _calls
    if x.sum() > 0:
        _calls += 1
    return x * 2.0


def test_full_graph_false_falls_back_with_one_warning():
    sf = to_static(_uses_global_in_branch, full_graph=False)
    with pytest.warns(UserWarning, match=r"(?s)global.*test_static_function.py\", line \d+") as record:
        out1 = sf(d2s.to_tensor([1.0]))
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out2 = sf(d2s.to_tensor([3.0]))
    assert out1.numpy().tolist() == [2.0] and out2.numpy().tolist() == [6.0]
    assert _calls == 2  # ran eagerly both times


def test_full_graph_true_raises_the_conversion_error():
    from d2s.static import ControlFlowError
    with pytest.raises(ControlFlowError, match="global _calls"):
        to_static(_uses_global_in_branch)(d2s.to_tensor([1.0]))


def test_a_failed_build_is_not_cached():
    def f(x, bad):
        if bad:
            raise RuntimeError("user error while tracing")
        return x + 1.0

    sf = to_static(f)
    with pytest.raises(RuntimeError, match="user error while tracing"):
        sf(d2s.to_tensor([1.0]), True)
    assert len(sf.program_cache) == 0
    assert sf(d2s.to_tensor([1.0]), False).numpy().tolist() == [2.0]


def test_concurrent_first_calls_build_once():
    def f(x):
        i = 0
        while x.sum() < 100.0:
            x = x * 2.0
            i += 1
        return x

    sf = to_static(f)
    results, errors = [], []
    barrier = threading.Barrier(8)

    def call(v):
        try:
            barrier.wait()
            results.append((v, sf(d2s.to_tensor(np.full(3, v, np.float32))).numpy()))
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=call, args=(float(v),)) for v in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 8
    assert len(sf.program_cache) == 1
    for v, got in results:
        ref = np.full(3, v, np.float32)
        while ref.sum() < 100.0:
            ref = ref * 2.0
        np.testing.assert_array_equal(got, ref)


def test_calling_inside_another_program_traces_inline():
    inner = to_static(lambda_free_double)

    @to_static
    def outer(x):
        return inner(x) + 1.0

    assert outer(d2s.to_tensor([2.0])).numpy().tolist() == [5.0]
    assert len(inner.program_cache) == 0  # traced into outer's program


def lambda_free_double(x):
    return x * 2.0


def _appends_under_tensor_if(x):
    out = [x]
    if x.sum() > 0:
        for i in range(2):
            out.append(x * i)
    return d2s.stack(out)


def _appends_to_a_list_in_a_dict_under_tensor_if(x):
    box = {"out": [x]}
    if x.sum() > 0:
        for i in range(2):
            box["out"].append(x * i)
    return d2s.stack(box["out"])


def test_list_appended_inside_a_tensor_branch_is_an_array_output():
    # (it was a clear error; the branch's appends now give a tensor array,
    # and the other branch keeps the list as it was)
    static = to_static(_appends_under_tensor_if)
    for values in ([1.0, 2.0], [-1.0, -2.0]):
        np.testing.assert_array_equal(static(d2s.to_tensor(values)).numpy(),
                                      _appends_under_tensor_if(d2s.to_tensor(values)).numpy())


def test_list_changed_inside_a_tensor_branch_is_a_clear_error():
    from d2s.static import ControlFlowError
    # (the error names the list and the user's line before anything is traced
    # into the list: convert/runtime/lists.py `convert_reached_list_call`)
    with pytest.raises(ControlFlowError, match=r"(?s)'box\['out'\]\.append\(\.\.\.\)' inside an "
                                               r"`if` or a loop on a tensor.*test_static_function.py"):
        to_static(_appends_to_a_list_in_a_dict_under_tensor_if)(d2s.to_tensor([1.0, 2.0]))
    # eagerly (the one switch) the same code runs as Python
    d2s.jit.enable_to_static(False)
    try:
        got = to_static(_appends_under_tensor_if)(d2s.to_tensor([1.0, 2.0])).numpy()
    finally:
        d2s.jit.enable_to_static(True)
    np.testing.assert_array_equal(got, [[1, 2], [0, 0], [1, 2]])
