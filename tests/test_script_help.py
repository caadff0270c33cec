"""Every example and benchmark script answers `--help` at once, without
running anything, and every option it lists says what it does."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for folder in ("examples", "benchmarks") for p in (ROOT / folder).glob("*.py")
                 if "__main__" in p.read_text())


def _options(help_text):
    """{option: its help text} from argparse's "options:" section."""
    section = help_text.split("options:", 1)[1]
    entries, current = {}, None
    for line in section.splitlines():
        if line.startswith("  -"):
            spec, _, text = line.strip().partition("  ")
            current = re.findall(r"(?:^|[ ,])(--?[\w-]+)", spec)[-1]
            entries[current] = text.strip()
        elif current and line.startswith(" " * 8) and line.strip():
            entries[current] = (entries[current] + " " + line.strip()).strip()
        elif not line.strip():
            current = None
    return entries


def test_every_script_is_found():
    names = {p.name for p in SCRIPTS}
    assert {"demo.py", "train.py", "deploy_onnx.py", "compare_modes.py"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_help_prints_and_runs_nothing(script, tmp_path):
    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                          text=True, cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:"), proc.stdout[:300]
    assert list(tmp_path.iterdir()) == []          # nothing written where it was run
    options = _options(proc.stdout)
    assert "--help" in options or "-h" in options
    missing = [o for o, text in options.items() if len(text) < 8]
    assert missing == [], f"{script.name}: options without help text: {missing}"
