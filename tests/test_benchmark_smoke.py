"""Smoke test of benchmarks/compare_modes.py: a --quick run on three workloads."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "compare_modes.py")


def test_compare_modes_quick(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--quick", "--workloads", "W1,W2,W5", "--json", str(out),
         "--png", "", "--targets"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert set(data["workloads"]) == {"W1", "W2", "W5"}
    for key, entry in data["workloads"].items():
        assert "error" not in entry, entry.get("traceback")
        assert entry["equal"] is True, (key, entry["max_abs_diff"])
        for mode in ("eager", "static", "numpy"):
            assert entry["modes"][mode]["median_s"] > 0, (key, mode)
        assert entry["first_call_s"] > 0 and entry["first_call_cold_s"] > 0
        assert entry["ratios"]["eager/static"] > 0
        assert entry["per_op_s"]["eager"] > 0
        if "static xla" in entry["modes"]:  # (jax installed) the first call both ways
            assert entry["xla_first_call_s"] > 0 and entry["xla_first_call_tiered_s"] > 0
    # kernels per eager call: W2 is zeros, then per trip sum, <, *, +, + (steps), and a
    # last sum and < that end the loop
    w2 = data["workloads"]["W2"]
    assert w2["eager_ops"] == 1 + 5 * w2["info"]["trips"] + 2
    assert "workload" in proc.stdout and "targets" in proc.stdout   # the table was printed
    # the report fits a 100-column terminal; each target says what it is for
    assert max(map(len, proc.stdout.splitlines())) <= 100, proc.stdout
    assert all(t["why"] for t in data["targets"]), data["targets"]
    # the progress total (the workloads) is known from the start
    assert [ln.split("]")[0] for ln in proc.stderr.splitlines() if ln.startswith("[")] == \
        ["[1/3", "[2/3", "[3/3"]


def test_step_floor_times_every_mode():
    """benchmarks/step_floor.py: W6's matmul floor beside the ways to run its step."""
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "step_floor.py"), "--rounds", "2",
         "--no-xla"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line[:14].strip(): line[14:].split() for line in proc.stdout.splitlines()
            if line[:14].strip() in ("8 matmuls", "hand numpy", "to_static", "eager")}
    assert set(rows) == {"8 matmuls", "hand numpy", "to_static", "eager"}
    assert all(float(r[0].rstrip("us")) > 0 for r in rows.values())
    assert "to_static >= 2x eager needs a step of" in proc.stdout
