"""JAX's warnings about a compilation cache it cannot write (a full disk)
are folded into d2s's one warning about its cache folder (issue 24 item 4):
many programs compiled, one warning; other warnings still shown."""
import errno
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s.backends.xla import cache_warnings  # noqa: E402
from jax._src import compilation_cache  # noqa: E402


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_gives_one_d2s_warning_not_one_per_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("D2S_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("D2S_XLA_SYNC", "1")
    monkeypatch.setattr(compilation_cache, "put_executable_and_time", _full_disk)
    x = d2s.to_tensor(np.arange(6, dtype="float32"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(6):  # six programs, six compiles through JAX's cache
            def fn(a, k=k):  # (a random op: left to JAX's cache, see persistent)
                return d2s.tanh(a) * (k + 1.5) - a + d2s.rand([6]) * 0.0
            got = d2s.jit.to_static(fn, backend="xla")(x).numpy()
            assert np.allclose(got, np.tanh(x.numpy()) * (k + 1.5) - x.numpy(),
                               rtol=1e-5, atol=1e-6)
    texts = [str(w.message) for w in caught]
    assert not [t for t in texts if "persistent compilation cache" in t], texts
    ours = [t for t in texts if t.startswith("d2s: not caching in")]
    assert len(ours) == 1, texts
    assert "No space left on device" in ours[0] and str(tmp_path / "cache" / "xla") in ours[0]


def test_other_warnings_raised_during_a_compile_are_still_shown():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cache_warnings.folded_cache_warnings("xla"):
            warnings.warn("something else", UserWarning)
    assert [str(w.message) for w in caught] == ["something else"]
