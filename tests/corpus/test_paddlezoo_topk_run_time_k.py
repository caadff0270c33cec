"""`paddle.topk(scores, min(k, scores.shape[1]))` under an InputSpec that
leaves that dim None (a detection post-process exported for any number of
anchors): k is then a value of the run, and the number of results with it.
The error says so and what to write (an int k, or the dim in the spec);
with the dim known, `min` gives an int and the code converts."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec

from harness import BACKENDS


def top_scores(scores):
    values, _ = d2s.topk(scores, min(3, scores.shape[1]), axis=1)
    return values


@pytest.mark.parametrize("backend", BACKENDS)
def test_topk_of_a_run_time_k_says_what_to_write(backend):
    scores = d2s.to_tensor(np.random.default_rng(0).random((2, 5)).astype("float32"))
    known = d2s.jit.to_static(top_scores, backend=backend, input_spec=[InputSpec([None, 5])])
    np.testing.assert_array_equal(known(scores).numpy(), top_scores(scores).numpy())
    unknown = d2s.jit.to_static(top_scores, backend=backend, input_spec=[InputSpec([None, None])])
    with pytest.raises(TypeError, match=r"min\(k, x.shape\[1\]\).*Pass k as a Python int, "
                                        r"or give that dim a size in the InputSpec"):
        unknown(scores)
