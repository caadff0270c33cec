"""benchmarks/cnn_cpu_time.py: its clock counts the work a call does, not the
time it waits (what makes it usable on a busy machine), and its floor times
real products."""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import cnn_cpu_time  # noqa: E402


def _spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_time_counts_work_and_not_waiting():
    slept, _ = cnn_cpu_time.cpu_ms(lambda: time.sleep(0.05), calls=3, warmup=0)
    spun, _ = cnn_cpu_time.cpu_ms(lambda: _spin(0.02), calls=3, warmup=0)
    assert slept < 10
    assert 15 < spun < 200


def test_the_gemm_floor_times_the_products():
    lo, med = cnn_cpu_time.gemm_floor_ms(calls=2)
    assert 0 < lo <= med
