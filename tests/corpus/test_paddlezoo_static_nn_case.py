"""`paddle.static.nn.case` / `switch_case` in converted code (a piecewise
schedule or a per-stage head chosen by a tensor index, as older Paddle
model code writes them), and `to_static(build_strategy=...)` accepted as
ported calls pass it.

Each is a chain of `cond`: one program serves every index (the choice is
made when it runs), on numpy and xla, as eager chooses."""
import numpy as np
import pytest

import d2s
from d2s.static import InputSpec
from d2s.static.nn import case, switch_case

from harness import BACKENDS


def staged(x, stage):
    y = switch_case(stage, {0: lambda: x * 0.5, 2: lambda: x + 1.0}, default=lambda: -x)
    z = switch_case(stage, [lambda: x.sum(), lambda: x.mean()])  # no default: the last
    w = case([(x.sum() > 10.0, lambda: x * 3.0), (x.sum() > 0.0, lambda: x * 2.0)],
             default=lambda: x)
    v = case([(stage > 0, lambda: x - 1.0), (stage < 0, lambda: x + 1.0)])  # last is default
    return y, z, w, v


@pytest.mark.parametrize("backend", BACKENDS)
def test_case_and_switch_case_choose_when_the_program_runs(backend):
    static = d2s.jit.to_static(staged, backend=backend, build_strategy=object(),
                               input_spec=[InputSpec([3]), InputSpec([], "int64")])
    for values in ([1.0, 2.0, 3.0], [-1.0, -2.0, 0.5], [4.0, 5.0, 6.0]):
        for stage in (0, 1, 2, 5):
            x = d2s.to_tensor(np.array(values, "float32"))
            k = d2s.to_tensor(np.array(stage, "int64"))
            expected = staged(x, k)  # eager: the chosen function runs
            got = static(x, k)
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)
    assert len(static.program_cache) == 1
    ops = {op.type for op in static.concrete_program.main_program.all_ops()}
    assert "cond" in ops


def test_switch_case_rejects_what_it_cannot_choose_from():
    with pytest.raises(TypeError, match="branches must map ints to functions"):
        switch_case(d2s.to_tensor(0), {"a": lambda: 1})
    with pytest.raises(ValueError, match="branch_index must hold one integer"):
        switch_case(d2s.ones([2], "int64"), [lambda: 1])
    with pytest.raises(TypeError, match=r"item 0 of pred_fn_pairs must be a \(pred, fn\)"):
        case([lambda: 1])
