"""Programs saved by older d2s keep loading, printing and running.

The files in `legacy_programs/` were written by the code described in
`legacy_programs/make.py` (format version 1) with the eager results and
gradients beside them; they cover every control-flow op a saved program can
hold (`cond`, `while`, `undefined`, `raise`, tensor arrays, `assert`).
"""
import json
import os

import numpy as np
import pytest

import d2s
from d2s.jit.serialization import AttrEncoder, program_to_json

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "legacy_programs")
NAMES = ["loopnet", "collect", "first_large"]


def _cases(ref):
    k = 0
    while f"x{k}" in ref:
        yield k, ref[f"x{k}"], ref[f"n{k}"]
        k += 1


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


def _check(model, ref):
    for k, x, n in _cases(ref):
        for p in model.parameters():
            p.clear_grad()
        xt = d2s.to_tensor(x, stop_gradient=False)
        out = model(xt, d2s.to_tensor(n))
        np.testing.assert_allclose(out.numpy(), ref[f"out{k}"], **_tol(x.dtype))
        (out * out).sum().backward()
        np.testing.assert_allclose(xt.grad.numpy(), ref[f"gx{k}"], **_tol(x.dtype))
        for j, p in enumerate(model.parameters()):
            want = ref[f"gp{k}_{j}"]
            if np.isnan(want).all():  # no path to this parameter in that run
                assert p.grad is None or not np.any(p.grad.numpy())
            else:
                np.testing.assert_allclose(p.grad.numpy(), want, **_tol(want.dtype))


@pytest.mark.parametrize("name", NAMES)
def test_old_file_loads_and_gives_the_eager_numbers(name):
    model = d2s.jit.load(os.path.join(HERE, name))
    _check(model, np.load(os.path.join(HERE, name + ".ref.npz")))


@pytest.mark.parametrize("name", NAMES)
def test_old_file_prints_as_it_did(name):
    model = d2s.jit.load(os.path.join(HERE, name))
    with open(os.path.join(HERE, name + ".txt")) as f:
        assert str(model.program) + "\n" == f.read()


@pytest.mark.parametrize("name", NAMES)
def test_old_file_encodes_back_to_the_same_json(name):
    """Reading then writing an old program changes nothing in its blocks."""
    with open(os.path.join(HERE, name + ".json")) as f:
        doc = json.load(f)
    model = d2s.jit.load(os.path.join(HERE, name))
    program = model.program
    blocks = program_to_json(program, program.global_block().ops, AttrEncoder())
    assert json.loads(json.dumps(blocks)) == doc["blocks"]
