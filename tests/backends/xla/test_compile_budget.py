"""The compile budget of tiered compilation (d2s/backends/xla/background.py):
a new shape runs on numpy until its numpy-tier calls took
`D2S_XLA_COMPILE_BUDGET` times the expected compile cost, and is queued for
compiling only then ("ski rental"); 0 queues it at once.

Deterministic: the clocks are fakes (each reading advances them one step,
so every numpy-tier call costs exactly one step), and the expected cost is
set through the per-op constant; no wall time decides anything. Results
are compared with the numpy backend on the same inputs on either tier."""
import numpy as np
import pytest

pytest.importorskip("jax")

import d2s  # noqa: E402
from d2s import nn  # noqa: E402
from d2s.backends.xla import background  # noqa: E402
from d2s.static import InputSpec  # noqa: E402

STEP = 0.25  # seconds each fake clock reading advances: one numpy call's cost


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += STEP
        return self.now


@pytest.fixture
def budget(monkeypatch):
    """Set the factor (`budget(f)`); fake clocks; a process with no compile
    measured yet, so that the expected cost is `OP_SECONDS` per op."""
    monkeypatch.setattr(background, "clock", FakeClock())
    monkeypatch.setattr(background, "compile_clock", FakeClock())
    monkeypatch.setattr(background._WORKER, "op_seconds", None)
    assert background.wait_idle(120)

    def set_factor(factor):
        monkeypatch.setenv(background.BUDGET_ENV, str(factor))
    yield set_factor
    assert background.wait_idle(120)


def _forward(sf, x):
    with d2s.no_grad():
        return sf(x)


def _program(sf, x):
    return sf.get_concrete_program(x)._runners["xla"]._forward.xla


def _model():
    lin = nn.Linear(4, 3)

    def f(x):
        return d2s.tanh(lin(x)) * 2.0 + x.sum(axis=1, keepdim=True)
    spec = [InputSpec([None, 4], "float32")]
    return (d2s.jit.to_static(f, input_spec=spec, backend="xla", compile="async"),
            d2s.jit.to_static(f, input_spec=spec, backend="numpy"))


def _x(n, seed=0):
    return d2s.to_tensor(np.random.default_rng(seed).normal(size=(n, 4)).astype("float32"))


def _check(sf, ref, x):
    np.testing.assert_allclose(_forward(sf, x).numpy(), _forward(ref, x).numpy(),
                               rtol=1e-5, atol=1e-6)


def _calls_to_budget(xla, factor):
    """numpy-tier calls whose time reaches the budget (each costs `STEP`)."""
    budget = factor * xla.tiers.expected_seconds()
    calls, spent = 0, 0.0
    while spent < budget or not calls:
        calls, spent = calls + 1, spent + STEP
    return calls if factor else 0


@pytest.mark.parametrize("factor", [0.0, 1.0, 2.5])
def test_numpy_serves_until_the_budget_is_spent_then_xla(budget, monkeypatch, factor):
    budget(factor)
    monkeypatch.setattr(background, "OP_SECONDS", 0.2)
    sf, ref = _model()
    x = _x(3)
    _check(sf, ref, x)                               # numpy tier, 1 call charged
    xla = _program(sf, x)
    need = _calls_to_budget(xla, factor)
    assert factor == 0 or need > 3                  # (the budget spans several calls)
    for i in range(1, max(need, 1)):
        assert background.wait_idle(120)
        assert not xla._executables and not xla.tiers.jobs       # renting: nothing queued
        _check(sf, ref, _x(3, seed=i))              # numpy keeps serving, correctly
    # the call that spent the budget queued the compile (factor 0: the first call)
    assert len(xla.tiers.jobs) == 1
    assert background.wait_idle(120)
    assert len(xla._executables) == 1 and not xla.pending([x.numpy()])
    _check(sf, ref, x)                              # xla tier
    assert xla.tiers.spent == {} and xla.tiers.waiting == {}


def test_each_shape_rents_on_its_own_and_the_last_compile_sets_the_next_budget(
        budget, monkeypatch):
    budget(1.0)
    monkeypatch.setattr(background, "OP_SECONDS", 0.2)
    sf, ref = _model()
    a, b = _x(2), _x(5)
    _check(sf, ref, a)
    xla = _program(sf, a)
    need = _calls_to_budget(xla, 1.0)
    for _ in range(need - 1):
        _check(sf, ref, b)                          # another shape's calls pay nothing of a's
    assert not xla.tiers.jobs
    assert [v for k, v in xla.tiers.spent.items() if k[0][0][0] == (2, 4)] \
        == [pytest.approx(STEP)]
    for _ in range(need - 1):
        _check(sf, ref, a)
    assert background.wait_idle(120) and len(xla._executables) == 1
    # the compile's measured cost (two fake CPU readings: one STEP) is b's budget now
    assert xla.tiers.last_cost == pytest.approx(STEP)
    assert xla.tiers.expected_seconds() == pytest.approx(STEP)
    _check(sf, ref, b)                              # b had spent (need - 1) steps: queued
    assert background.wait_idle(120) and len(xla._executables) == 2
    _check(sf, ref, a)
    _check(sf, ref, b)


def test_expected_cost_scales_the_last_compile_per_op(budget):
    small = background.Tiers("small", size=10)
    big = background.Tiers("big", size=40)
    assert big.expected_seconds() == pytest.approx(40 * background.OP_SECONDS)
    background._WORKER.op_seconds = 0.02              # a compile measured elsewhere
    assert small.expected_seconds() == pytest.approx(0.2)
    assert big.expected_seconds() == pytest.approx(0.8)
    big.last_cost = 0.5                                # this program's own last compile
    assert big.expected_seconds() == 0.5


def test_a_cached_shape_compiling_fast_does_not_make_the_next_look_cheap(budget):
    """Within a program the estimate is the dearest compile yet; the
    process-wide per-op rate is the last one's."""
    tiers = background.Tiers("f", size=10)
    for cost, expect in ((2.0, 2.0), (0.05, 2.0), (3.0, 3.0)):
        job = background._Job(None)
        job.cost = cost
        tiers._done(job, [[1, 4]])
        assert tiers.expected_seconds() == expect
        assert background._WORKER.op_seconds == pytest.approx(cost / 10)
    assert len(tiers.finished) == 3  # (reported at the program's next call)


def test_training_step_rents_then_switches_with_eager_results(budget, monkeypatch):
    """A whole step charged per call: numpy until the budget, then xla; the
    losses and parameters on both tiers equal eager's."""
    budget(1.0)
    monkeypatch.setattr(background, "OP_SECONDS", 100.0)

    def make():
        d2s.seed(5)
        net = nn.Linear(3, 2)
        opt = d2s.optimizer.Adam(learning_rate=0.1, parameters=net.parameters())

        def step(x):
            loss = (net(x) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return net, step

    xs = [np.random.default_rng(i).normal(size=(4, 3)).astype("float32") for i in range(12)]
    net_e, step_e = make()
    eager = [float(step_e(d2s.to_tensor(x))) for x in xs]
    net, step = make()
    sf = d2s.jit.to_static(step, backend="xla", compile="async")
    losses = [float(sf(d2s.to_tensor(xs[0])))]
    xla = sf.get_concrete_program(d2s.to_tensor(xs[0]))._runners["xla"]._part.xla
    # a budget of 5.5 calls, whatever the step's op count
    monkeypatch.setattr(background, "OP_SECONDS", 5.5 * STEP / xla.tiers.size)
    need = _calls_to_budget(xla, 1.0)
    assert need == 6
    for x in xs[1:need - 1]:
        losses.append(float(sf(d2s.to_tensor(x))))
        assert not xla.tiers.jobs                      # still renting
    losses.append(float(sf(d2s.to_tensor(xs[need - 1]))))   # spends the budget
    assert len(xla.tiers.jobs) == 1
    assert background.wait_idle(120) and len(xla._executables) == 1
    losses += [float(sf(d2s.to_tensor(x))) for x in xs[need:]]   # xla tier
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
    for p, q in zip(net.parameters(), net_e.parameters()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-7)


def test_default_factor_is_one_on_one_core_and_zero_with_spare_cores(monkeypatch):
    monkeypatch.delenv(background.BUDGET_ENV, raising=False)
    monkeypatch.setattr(background, "_one_core", lambda: True)
    assert background.compile_budget() == 1.0
    monkeypatch.setattr(background, "_one_core", lambda: False)
    assert background.compile_budget() == 0.0
    monkeypatch.setenv(background.BUDGET_ENV, "3")     # explicit: on any machine
    assert background.compile_budget() == 3.0


@pytest.mark.parametrize("text", ["-1", "fast", "nan"])
def test_bad_budget_is_a_clear_error(monkeypatch, text):
    monkeypatch.setenv(background.BUDGET_ENV, text)
    with pytest.raises(ValueError, match="D2S_XLA_COMPILE_BUDGET.*factor >= 0"):
        background.compile_budget()


def test_sync_ignores_the_budget(budget, monkeypatch):
    """compile="sync" compiles on the first call whatever the budget."""
    budget(1000.0)
    lin = nn.Linear(2, 2)
    sf = d2s.jit.to_static(lambda x: lin(x) * 2.0, backend="xla", compile="sync")
    x = d2s.to_tensor(np.ones((3, 2), "float32"))
    out = _forward(sf, x)
    assert len(_program(sf, x)._executables) == 1
    np.testing.assert_allclose(out.numpy(), (lin(x) * 2.0).numpy(), rtol=1e-6)


@pytest.mark.parametrize("one_core, factor, niced", [
    (True, "1", False),    # a paid-for compile shares the one core (else it starves)
    (True, "0", True),     # compile at once: the calls come first
    (False, "1", True),    # spare cores: the compile runs beside the calls
])
def test_worker_yields_to_the_calls_unless_one_core_under_a_budget(monkeypatch, one_core,
                                                                   factor, niced):
    monkeypatch.setattr(background, "_one_core", lambda: one_core)
    monkeypatch.setenv(background.BUDGET_ENV, factor)
    assert background._niced() is niced
