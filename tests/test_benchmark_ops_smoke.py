"""Smoke test of benchmarks/ops.py (issue 27's op-level table): two families,
one round; every mode timed, the ratios computed, the table printed."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ops_table_quick(tmp_path):
    out = tmp_path / "ops.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "ops.py"), "--rounds", "1",
         "--families", "math,search", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert set(data) == {"math", "search"}
    for entry in data.values():
        for mode in ("eager", "static", "numpy"):
            assert entry["seconds_per_call"][mode] > 0
        assert entry["static/numpy"] > 0
    assert "targets: static/numpy" in proc.stdout
