"""Tracing, passes and codegen build exactly the saved programs and code.

A fresh process (names of layers and parameters come from process-wide
counters) runs `program_snapshots.collect()` and the texts are compared
with tests/jit/program_snapshots.txt. Speed work on the trace path must
leave every program and every generated function as it was; a change meant
to alter them updates the file (see program_snapshots.py).
"""
import difflib
import os
import subprocess
import sys

import program_snapshots

ROOT = program_snapshots.ROOT


def _current(tmp_path):
    path = tmp_path / "snapshots.txt"
    # The snapshots were saved with the default executor and backend: a suite
    # run under D2S_EXECUTOR=interpreter, D2S_BACKEND=xla or tiered
    # (D2S_INTERPRETED_CALLS) compares the same.
    env = {k: v for k, v in os.environ.items() if k not in ("D2S_EXECUTOR", "D2S_BACKEND")}
    env["D2S_INTERPRETED_CALLS"] = "0"  # and with code generated on the first call
    env["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, program_snapshots.__file__, "--write", str(path)], cwd=ROOT,
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(path) as f:
        return program_snapshots.load(f)


def _diff(case, saved, now):
    def lines(texts):
        return [f"--- {kind}\n{text}" for kind, text in texts]
    diff = difflib.unified_diff("\n".join(lines(saved)).splitlines(),
                                "\n".join(lines(now)).splitlines(),
                                "saved", "now", lineterm="", n=2)
    return f"{case}:\n" + "\n".join(list(diff)[:60])


def test_programs_and_generated_code_are_unchanged(tmp_path):
    with open(program_snapshots.SNAPSHOT_FILE) as f:
        saved = program_snapshots.load(f)
    now = _current(tmp_path)
    # Cases added since the file was written are not compared; most must be.
    common = [case for case in saved if case in now]
    assert len(common) >= 0.9 * len(saved) and len(common) > 100, sorted(set(saved) - set(now))
    changed = [case for case in common if saved[case] != now[case]]
    assert not changed, (f"{len(changed)} of {len(common)} cases build other programs or "
                         "code:\n" + "\n\n".join(_diff(c, saved[c], now[c]) for c in changed[:3]))
