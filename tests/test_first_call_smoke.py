"""Smoke test of benchmarks/first_call.py: its --quick run (40 and 160 lines)."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "first_call.py")


def test_first_call_quick(tmp_path):
    out = tmp_path / "first_call.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--quick", "--json", str(out), "--png", ""],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert [e["lines"] for e in data["results"]] == [43, 163]
    for entry in data["results"]:
        for kind in ("cold", "second_process"):
            assert entry[kind]["convert_s"] > 0 and entry[kind]["trace_s"] > 0
            assert entry[kind]["second_call_s"] > 0
        # the second process read the first one's conversion: it converted nothing
        [cold], [second] = entry["runs"]["cold"], entry["runs"]["second_process"]
        assert cold["conversions"] == 1 and second["conversions"] == 0
    assert "ms/line" in proc.stdout and "2nd process" in proc.stdout
    assert "2nd call" in proc.stdout
