"""Saved control-flow ops are checked when loaded: their declared layout
(blocks, name lists) and their shape rule (outputs against what their blocks
give). A bad file raises `ProgramFormatError` saying what is wrong."""
import json
import os
import shutil

import pytest

import d2s
from d2s.jit import ProgramFormatError

LEGACY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "legacy_programs")


@pytest.fixture()
def collect(tmp_path):
    """A copy of a saved program with a `while` (3 loop variables) and `cond`s."""
    for ext in (".json", ".npz"):
        shutil.copy(os.path.join(LEGACY, "collect" + ext), tmp_path / ("collect" + ext))
    return str(tmp_path / "collect")


def _edit(path, change):
    with open(path + ".json") as f:
        doc = json.load(f)
    change(doc)
    with open(path + ".json", "w") as f:
        json.dump(doc, f)


def _op(doc, op_type, k=0):
    return [op for op in doc["blocks"][0]["ops"] if op["type"] == op_type][k]


def _var(doc, name):
    return next(v for b in doc["blocks"] for v in b["vars"] if v["name"] == name)


@pytest.mark.parametrize("change, message", [
    (lambda d: _op(d, "cond", 1)["attrs"].update(true_block=99), r"cond.true_block names no block"),
    (lambda d: _op(d, "while")["attrs"].update(loop_scope=0), r"while.loop_scope names no block"),
    (lambda d: _op(d, "while")["attrs"].update(loop_vars="loop_var_18"),
     r"while.loop_vars must list variable names"),
    (lambda d: _op(d, "while")["attrs"].update(body_outs=[1, 2, 3]),
     r"while.body_outs must list variable names"),
    (lambda d: _op(d, "cond", 1)["attrs"]["true_outs"].__setitem__(1, "ghost"),
     r"cond: true_outs names unknown variable 'ghost'"),
    (lambda d: _op(d, "cond", 1)["attrs"]["false_outs"].pop(),
     r"cond: false_outs has 1 names for 2 outputs"),
    (lambda d: _var(d, "while_32").update(dtype="float64"),
     r"while output: 'while_32' is float64 but 'loop_var_19' is float32"),
    (lambda d: _var(d, "cond_44").update(shape=[4, 3]),
     r"cond output \(true branch\): 'cond_44' has shape \[4, 3\]"),
    (lambda d: _op(d, "while")["attrs"].update(cond_out="add_30"),
     r"while: the condition 'add_30' is not a bool value"),
])
def test_bad_control_flow_ops_raise_clear_errors(collect, change, message):
    d2s.jit.load(collect)  # loads as written
    _edit(collect, change)
    with pytest.raises(ProgramFormatError, match=message):
        d2s.jit.load(collect)
