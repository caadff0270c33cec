"""The README's Python snippets run as written (in one file, in order)."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_snippets_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 5
    script = tmp_path / "readme_snippets.py"
    script.write_text("\n".join(blocks))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=str(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "111" in proc.stdout  # collatz_steps(27)
