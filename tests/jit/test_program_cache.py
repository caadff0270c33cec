"""The bounded program cache: LRU eviction, set_cache_limit, one warning per function."""
import gc
import threading
import warnings
import weakref

import numpy as np
import pytest

import d2s
from d2s.jit import InputSpec, to_static
from d2s.jit.program_cache import DEFAULT_CACHE_LIMIT


@pytest.fixture
def limit():
    """Set the cache limit for one test; the default comes back after it."""
    yield d2s.jit.set_cache_limit
    d2s.jit.set_cache_limit(DEFAULT_CACHE_LIMIT)


@pytest.fixture
def caught():
    """Every UserWarning raised during the test, duplicates included."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        yield lambda: [w for w in record if issubclass(w.category, UserWarning)]


def _counting(log):
    """A function with a tensor `if` that logs each trace (one per program built)."""
    def scaled(x, k):
        log.append(k)
        y = x * k
        if y.sum() > 0:
            y = y + 1.0
        else:
            y = y - 1.0
        return y
    return scaled


def _ref(x, k):
    y = x * k
    return y + 1.0 if y.sum() > 0 else y - 1.0


X = np.array([1.0, -0.5, 2.0])


def _call(sf, k, **kwargs):
    out = sf(d2s.to_tensor(X), k, **kwargs).numpy()
    np.testing.assert_allclose(out, _ref(X, k), rtol=1e-12)
    return out


def test_least_recently_used_program_is_evicted(limit, caught):
    limit(3)
    log = []
    sf = to_static(_counting(log))
    for k in (1.0, 2.0, 3.0):
        _call(sf, k)
    _call(sf, 1.0)            # fast path: 1.0 is now the most recently used
    _call(sf, 2.0)            # 3.0 is the least recently used
    assert log == [1.0, 2.0, 3.0]
    _call(sf, 4.0)            # evicts 3.0
    assert len(sf.program_cache) == 3
    _call(sf, 1.0)
    _call(sf, 2.0)
    assert log == [1.0, 2.0, 3.0, 4.0]
    _call(sf, 3.0)            # evicted: built again (and 4.0 goes)
    assert log == [1.0, 2.0, 3.0, 4.0, 3.0]
    _call(sf, 4.0)
    assert log[-1] == 4.0 and len(sf.program_cache) == 3


def test_uses_through_the_full_signature_path_count_as_recent(limit, caught):
    limit(2)
    log = []
    sf = to_static(_counting(log))
    _call(sf, k=1.0)          # keyword arguments skip the fast path
    _call(sf, k=2.0)
    _call(sf, k=1.0)
    _call(sf, k=3.0)          # evicts 2.0, not 1.0
    _call(sf, k=1.0)
    assert log == [1.0, 2.0, 3.0]


def test_the_cache_stays_bounded_and_rebuilt_programs_are_right(caught):
    log = []
    sf = to_static(_counting(log))
    values = [float(k) - 20.0 for k in range(2 * DEFAULT_CACHE_LIMIT)]
    for k in values:
        _call(sf, k)
    assert len(sf.program_cache) == DEFAULT_CACHE_LIMIT
    for k in values[:5]:      # long evicted: built again, same answers
        _call(sf, k)
    assert len(log) == len(values) + 5
    assert len(sf.program_cache) == DEFAULT_CACHE_LIMIT
    types = [op.type for op in sf.get_concrete_program(d2s.to_tensor(X), 1.0)
             .main_program.all_ops()]
    assert "cond" in types


def test_python_values_of_the_cache_key_keep_python_semantics(limit, caught):
    limit(1)

    def pick(x, flag):
        if flag:              # a Python bool: plain Python branch, no cond op
            return x * 2.0
        return x - 1.0

    sf = to_static(pick)
    for flag in (True, False, True, False):
        np.testing.assert_allclose(sf(d2s.to_tensor(X), flag).numpy(),
                                   X * 2.0 if flag else X - 1.0)
        types = [op.type for op in sf.get_concrete_program(d2s.to_tensor(X), flag)
                 .main_program.all_ops()]
        assert "cond" not in types
    assert len(sf.program_cache) == 1
    assert len(caught()) == 1 and "'flag'" in str(caught()[0].message)


def test_an_evicted_program_is_not_kept_alive_by_the_fast_path(limit, caught):
    limit(2)
    sf = to_static(_counting([]))
    _call(sf, 1.0)
    _call(sf, 1.0)            # now in the fast table
    first = weakref.ref(sf.get_concrete_program(d2s.to_tensor(X), 1.0))
    assert any(entry.program is first() for entry, _ in sf.program_cache.fast.values())
    _call(sf, 2.0)
    _call(sf, 3.0)            # evicts 1.0
    assert all(entry.signature.key in sf.program_cache
               for entry, _ in sf.program_cache.fast.values())
    gc.collect()
    assert first() is None


def test_one_warning_per_function_naming_the_changing_python_argument(caught):
    sf = to_static(_counting([]))
    for k in range(3 * DEFAULT_CACHE_LIMIT):
        _call(sf, float(k))
    assert len(caught()) == 1
    message = str(caught()[0].message)
    assert "'k'" in message and "'x'" not in message and "tensor" in message
    assert caught()[0].filename == __file__     # points at the user's call

    other = to_static(_counting([]))           # another function warns for itself
    for k in range(12):
        _call(other, float(k))
    assert len(caught()) == 2


def test_the_warning_names_a_tensor_whose_shape_keeps_changing_and_suggests_input_spec():
    def total(scale, x):
        return (x * scale).sum()

    sf = to_static(total)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 15):
            out = sf(2.0, d2s.to_tensor(np.ones(n)))
            assert out.item() == 2.0 * n
    assert len(caught) == 1
    assert "'x'" in str(caught[0].message) and "InputSpec" in str(caught[0].message)

    specced = to_static(total, input_spec=[None, InputSpec([None], "float64")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 15):
            assert specced(2.0, d2s.to_tensor(np.ones(n))).item() == 2.0 * n
    assert len(specced.program_cache) == 1


def test_a_small_limit_warns_at_the_first_eviction(limit, caught):
    limit(2)
    sf = to_static(_counting([]))
    _call(sf, 1.0)
    _call(sf, 2.0)
    assert caught() == []
    _call(sf, 3.0)
    assert len(caught()) == 1


def test_a_lower_limit_applies_at_the_next_build(limit, caught):
    sf = to_static(_counting([]))
    for k in range(6):
        _call(sf, float(k))
    limit(2)
    assert len(sf.program_cache) == 6
    _call(sf, 10.0)
    assert len(sf.program_cache) == 2


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "8", None])
def test_set_cache_limit_rejects_what_is_not_a_positive_int(bad):
    with pytest.raises(ValueError, match="positive int"):
        d2s.jit.set_cache_limit(bad)
    sf = to_static(_counting([]))
    for k in range(DEFAULT_CACHE_LIMIT + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _call(sf, float(k))
    assert len(sf.program_cache) == DEFAULT_CACHE_LIMIT   # the limit is unchanged


def test_threads_calling_with_many_values_share_one_bounded_cache(limit, caught):
    limit(4)
    log = []
    sf = to_static(_counting(log))
    errors, barrier = [], threading.Barrier(8)

    def worker(seed):
        try:
            barrier.wait()
            for i in range(30):
                _call(sf, float((seed * 7 + i) % 10 - 4))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(sf.program_cache) <= 4
    assert all(entry.signature.key in sf.program_cache
               for entry, _ in sf.program_cache.fast.values())
    assert len(caught()) == 1


def _f(x, items, k=1):
    return x


def test_varying_arguments_names_what_changed_most():
    from d2s.jit.signature import make_signature, varying_arguments
    x = d2s.to_tensor(X)
    by_value = [make_signature(_f, (x, (1, 2), k), {}) for k in range(4)]
    assert varying_arguments(by_value) == (["'k'"], "python")
    by_shape = [make_signature(_f, (d2s.to_tensor(np.ones(n)), (1, 2)), {}) for n in (1, 2)]
    assert varying_arguments(by_shape) == (["'x'"], "tensor")
    by_structure = [make_signature(_f, (x, tuple(range(n))), {}) for n in (1, 2, 3)]
    assert varying_arguments(by_structure)[1] == "structure"
    by_mode = [make_signature(_f, (x, ()), {}, training=t) for t in (True, False)]
    assert varying_arguments(by_mode)[1] == "training"
