"""`path.reverse()` of a list filled in a loop on a tensor (Viterbi
backtracking of a CRF tagger, a beam's backpointers followed to the start):
the list is carried as a tensor array, and `reverse()` rebinds the name to
its items last first, as `pop()` does. Compared with eager on numpy and
xla, with the sequence length known only at run time; a Python list still
reverses in place."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec

from harness import BACKENDS, close, t


def viterbi(emissions, transitions):
    steps = emissions.shape[0]
    score = emissions[0]
    history = []
    for i in range(1, steps):
        s = score[:, None] + transitions + emissions[i][None, :]
        history.append(s.argmax(0))
        score = s.max(0)
    best = score.argmax()
    path = [best]
    for backpointers in reversed(history):
        best = backpointers[best]
        path.append(best)
    path.reverse()
    return d2s.stack(path), score.max()


def viterbi_reference(e, tr):
    score, history = e[0], []
    for i in range(1, len(e)):
        s = score[:, None] + tr + e[i][None, :]
        history.append(s.argmax(0))
        score = s.max(0)
    path = [int(score.argmax())]
    for bp in reversed(history):
        path.append(int(bp[path[-1]]))
    return path[::-1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_viterbi_path_reversed_in_place(backend):
    static = d2s.jit.to_static(viterbi, input_spec=[InputSpec([None, 3]), InputSpec([3, 3])],
                               backend=backend)
    rng = np.random.RandomState(0)
    tr = rng.randn(3, 3).astype("float32")
    for steps in (5, 2, 1):
        e = rng.randn(steps, 3).astype("float32")
        path, best = static(t(e), t(tr))
        e_path, e_best = viterbi(t(e), t(tr))
        assert path.numpy().tolist() == e_path.numpy().tolist() == viterbi_reference(e, tr)
        close(best.numpy(), e_best.numpy(), backend, "best score")


@pytest.mark.parametrize("backend", BACKENDS)
def test_reverse_of_a_python_list_and_inside_the_loop(backend):
    def f(x):
        names = ["a", "b"]
        names.reverse()
        rows = []
        i = 0
        while i < x.shape[0]:
            rows.append(x[i] * (i + 1))
            i += 1
        rows.reverse()
        return d2s.stack(rows), names

    static = d2s.jit.to_static(f, input_spec=[InputSpec([None, 2])], backend=backend)
    x = np.arange(6, dtype="float32").reshape(3, 2)
    got, names = static(t(x))
    assert names == ["b", "a"]
    close(got.numpy(), f(t(x))[0].numpy(), backend, "reversed rows")
