"""Suite-wide setup: conversions are cached in a temporary folder, never the user's.

Set before any test runs (subprocesses inherit it); tests of the cache
itself point `D2S_CACHE_DIR` at folders of their own.
"""
import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="d2s-test-cache-")
os.environ["D2S_CACHE_DIR"] = _CACHE


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)
