"""`tile` with a repeat count known only at run time (`scores.tile([b])`,
`b = input_ids.shape[0]` of a `None` batch dim, as a batched beam search
writes it; found by the GPT-2 corpus model): it used to raise "a repeat
count must be known while building"; it now equals eager tiling, values and
gradients, with one program for every batch size."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec

from harness import BACKENDS, close


def tiled(x, y):
    b = x.shape[0]
    return y.tile([b]), y.reshape([1, 3]).tile([b, 2]), x.tile([2, b])


@pytest.mark.parametrize("backend", BACKENDS)
def test_tile_by_a_run_time_count_matches_eager(backend):
    static = d2s.jit.to_static(tiled, input_spec=[InputSpec([None, 2]), InputSpec([3])],
                               backend=backend)
    rng = np.random.default_rng(0)
    for n in (1, 3):
        x = d2s.to_tensor(rng.normal(size=(n, 2)).astype("float32"))
        y = d2s.to_tensor(rng.normal(size=3).astype("float32"))
        x.stop_gradient = y.stop_gradient = False
        got = {}
        for name, fn in (("static", static), ("eager", tiled)):
            outs = fn(x, y)
            w = [d2s.to_tensor(np.arange(o.size, dtype="float32").reshape(o.shape)) for o in outs]
            sum((o * wi).sum() for o, wi in zip(outs, w)).backward()
            got[name] = ([o.numpy() for o in outs], x.grad.numpy().copy(), y.grad.numpy().copy())
            x.clear_grad()
            y.clear_grad()
        for i, (a, e) in enumerate(zip(got["static"][0], got["eager"][0])):
            close(a, e, backend, f"output {i} for batch {n}")
        close(got["static"][1], got["eager"][1], backend, "grad of x")
        close(got["static"][2], got["eager"][2], backend, "grad of y")
    assert len(static.program_cache) == 1
