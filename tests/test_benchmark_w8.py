"""benchmarks/workloads.py W8 (compare_modes' Llama greedy row): the
converted generation, eager generation and the hand-written numpy loop
(benchmarks/llm_peers.py) give the same tokens on the same weights."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import d2s  # noqa: E402
from d2s.jit import enable_to_static  # noqa: E402

import workloads  # noqa: E402


def test_w8_modes_generate_the_same_tokens():
    d2s.seed(0)
    wl = workloads.WORKLOADS["W8"](np.random.default_rng(0))
    with d2s.no_grad():
        static = wl.call().numpy()
        enable_to_static(False)
        try:
            eager = wl.call().numpy()
        finally:
            enable_to_static(True)
    by_hand = wl.numpy_call()
    assert static.shape == (1, wl.info["new_tokens"])
    np.testing.assert_array_equal(static, eager)
    np.testing.assert_array_equal(by_hand, eager)
