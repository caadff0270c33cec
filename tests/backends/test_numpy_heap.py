"""The numpy backend keeps freed array memory mapped between a program's
calls (d2s/backends/numpy/heap.py): a compiled program's second call makes
no fresh page faults for its batch-sized intermediates, and the user's own
malloc settings or D2S_KEEP_HEAP=0 leave glibc's defaults alone."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    GLIBC = os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
except (AttributeError, ValueError, OSError):
    GLIBC = False

# A converted function whose intermediates (2 MiB each, freed at its end) go
# back to the system under glibc's defaults: the minor page faults of its
# later calls are counted.
SCRIPT = textwrap.dedent("""
    import resource, numpy as np, d2s
    from d2s.backends.numpy import heap

    @d2s.jit.to_static
    def f(x):
        a = x * 2.0
        b = a + x
        c = b * a
        return (c - b).sum()

    x = d2s.to_tensor(np.ones((512, 1024), np.float32))
    for _ in range(3):
        f(x)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        f(x)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5
    print(heap.keep_freed_pages(), faults)
""")


def _run(tmp_path, **env):
    script = tmp_path / "calls.py"
    script.write_text(SCRIPT)
    full = dict(os.environ, PYTHONPATH=ROOT, **env)
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES",
                 "D2S_KEEP_HEAP"):
        if name not in env:
            full.pop(name, None)
    out = subprocess.run([sys.executable, str(script)], env=full, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    applied, faults = out.stdout.split()
    return applied == "True", float(faults)


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc's")
def test_calls_reuse_freed_pages_and_opt_outs_keep_the_defaults(tmp_path):
    applied, faults = _run(tmp_path)
    assert applied
    # 3 intermediates of 2 MiB: about 1500 faults a call when unmapped and
    # mapped again; kept, none (a few for Python's own small allocations)
    assert faults < 100, faults
    for env in ({"D2S_KEEP_HEAP": "0"}, {"MALLOC_TRIM_THRESHOLD_": "131072"}):
        applied, faults = _run(tmp_path, **env)
        assert not applied
        assert faults > 500, (env, faults)


def test_keep_freed_pages_is_idempotent():
    from d2s.backends.numpy import heap
    first = heap.keep_freed_pages()
    assert heap.keep_freed_pages() is first
