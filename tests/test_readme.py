"""Every Python snippet of the README and of docs/ runs on its own, in a fresh
process, as a reader who copies just that one would run it."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _snippets():
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        for k, code in enumerate(blocks):
            yield pytest.param(code, id=f"{page.relative_to(ROOT)}#{k}")


SNIPPETS = list(_snippets())


def test_the_pages_have_snippets_and_links_that_resolve():
    assert len(SNIPPETS) >= 15
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", page.read_text()):
            assert (page.parent / target).is_file(), f"{page.name} links to missing {target}"


@pytest.mark.parametrize("code", SNIPPETS)
def test_snippet_runs_alone(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=str(tmp_path), timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if "collatz_steps(d2s.to_tensor(27))" in code:
        assert "111" in proc.stdout
