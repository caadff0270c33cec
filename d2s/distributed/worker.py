"""What each rank of `d2s.distributed.launch` runs: the user's script, as
`python script.py` would, with the rank's failure written where the
launcher reads it (`$D2S_LAUNCH_DIR/rank<r>.err`) before the rank exits
non-zero.

Under mpiexec the rank comes from the MPI launcher's environment and is
copied to `D2S_RANK`, so that every part of d2s reads one variable.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback

from . import env


def _report(rank, text, code):
    """`text` on stderr and, for the launcher, in `rank<r>.err`, with the exit
    code the rank is about to exit with in `rank<r>.code` (written first: its
    time says which rank failed first)."""
    where = os.environ.get("D2S_LAUNCH_DIR")
    sys.stderr.write(text)
    sys.stderr.flush()
    if where:
        for suffix, content in ((".code", str(code)), (".err", text)):
            path = os.path.join(where, f"rank{rank}{suffix}")
            with open(path + ".tmp", "w") as f:
                f.write(content)
            os.replace(path + ".tmp", path)  # the launcher never reads half a report


def main():
    rank = env.get_rank()
    os.environ["D2S_RANK"] = str(rank)
    script, args = sys.argv[1], sys.argv[2:]
    sys.argv = [script] + args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            # (Python's rule: an integer is the exit code, anything else exits with 1)
            _report(rank, f"SystemExit: {e.code}\n", e.code if isinstance(e.code, int) else 1)
        raise
    except BaseException:
        _report(rank, traceback.format_exc(), 1)
        sys.stdout.flush()
        os._exit(1)  # no atexit hooks: a runtime waiting on the others must not hang here


if __name__ == "__main__":
    main()
