"""What the fuzz tests share: how many examples to run, the seed, and the
count of generated programs that the run summary prints (tests/conftest.py).

`D2S_FUZZ_EXAMPLES=N` runs N examples per fuzz test (a local campaign:
`D2S_FUZZ_EXAMPLES=20000 python -m pytest tests/jit/test_conversion_properties.py`);
`D2S_FUZZ_SEED=S` replays the programs of seed S. The default seed comes
from the day (UTC): each day's CI runs new programs, and a failure seen today
reproduces today, or any day with the seed the summary printed. CI runs the
suites twice (`.ci/run`: the default executor, then D2S_EXECUTOR=interpreter);
the two runs get different seeds, so a CI run checks twice the programs one
`pytest` run does (each of them on both executors).
"""
import collections
import os
import time

_COUNTS = collections.Counter()


def examples(default):
    value = os.environ.get("D2S_FUZZ_EXAMPLES")
    return int(value) if value else default


def seed():
    value = os.environ.get("D2S_FUZZ_SEED")
    if value:
        return int(value)
    day = int(time.time() // 86400)
    return 2 * day + (os.environ.get("D2S_EXECUTOR") == "interpreter")


def count(generator, n=1):
    """Record `n` generated programs checked by `generator` (a readable name)."""
    _COUNTS[generator] += n


def counts():
    return dict(_COUNTS)
