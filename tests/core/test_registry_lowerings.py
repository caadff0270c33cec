"""Every registered op declares, beside its kernel, how each compiling backend
lowers it: a rule, or an explicit `NotLowerable(reason)`. No backend library
is needed to check the declarations."""
import pytest

import d2s  # noqa: F401  (registers every op, tensor arrays included)
import d2s.backends.xla.rules  # noqa: F401  (each target registers its own rules: no jax needed)
import d2s.onnx.rules  # noqa: F401  (no onnx needed)
from d2s.core.registry import OPS, TARGETS, NotLowerable, describe, register_lowering, register_op

# every target whose rules package loaded and says it covers every op
BACKENDS = sorted(name for name, (_, every_op) in TARGETS.items() if every_op)


def test_the_targets_with_rules_are_found():
    assert {"xla", "onnx"} <= set(BACKENDS)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_op_has_a_rule_or_a_reason(backend):
    missing = sorted(name for name, op in OPS.items() if backend not in op.lowerings)
    assert not missing, f"ops with neither an {backend} rule nor NotLowerable(reason): {missing}"
    for name, op in OPS.items():
        rule = op.lowerings[backend]
        if isinstance(rule, NotLowerable):
            assert rule.reason.strip(), f"{name}: NotLowerable needs a reason"
        else:
            assert callable(rule), name


def test_every_op_lowers_to_xla_and_the_random_ones_draw_on_the_host():
    """The lists a reviewer should see change on purpose only: no op is
    refused by xla but the MPI all-reduce of SyncBatchNorm across numpy
    processes (xla processes reduce through shardings); the random ones are drawn on the host (`OpDef.draws`),
    never folded or deduplicated (stateful)."""
    refused = sorted(n for n, op in OPS.items() if isinstance(op.lowerings["xla"], NotLowerable))
    assert refused == ["c_allreduce_sum"]
    drawing = sorted(n for n, op in OPS.items() if op.draws)
    assert drawing == ["dropout", "gaussian", "python_draw", "uniform"]
    assert all(OPS[n].stateful for n in drawing)


def test_a_lowering_must_be_a_rule_or_a_reason():
    op = register_op("_lowering_probe", lambda x: x, lambda x: x)
    try:
        with pytest.raises(TypeError, match="callable or NotLowerable"):
            op.lowering(xla="jnp.exp")
        assert op.lowering(xla=NotLowerable("why not")) is op
        assert op.lowerings["xla"].reason == "why not"
    finally:
        del OPS["_lowering_probe"]


def test_rules_registered_by_a_target_package_are_described_where_they_live():
    op = register_op("_placement_probe", lambda x: x, lambda x: x)
    try:
        def probe_rule(ns, x):
            return x
        register_lowering("xla", "_placement_probe", probe_rule)
        register_lowering("onnx", op, NotLowerable("a probe"))
        found = describe("_placement_probe")
        assert found["xla"].startswith(f"{__name__}.{probe_rule.__qualname__}:")
        assert found["onnx"] == "not lowerable: a probe"
        assert found["vjp"] is None and found["kernel"] is not None
        with pytest.raises(KeyError, match="no op of that name"):
            register_lowering("xla", "_no_such_op", probe_rule)
        with pytest.raises(TypeError, match="callable or NotLowerable"):
            register_lowering("xla", op, "jnp.exp")
    finally:
        del OPS["_placement_probe"]
