"""Every program of the conversion table (tests/jit/test_conversion_table.py),
exported to ONNX and run in ONNX Runtime, gives the eager numbers.

Programs holding print / assert / raise / random ops must raise
`ExportError` naming the op (and those returning no tensor, saying so);
every other program must export, pass ONNX's full checker and equal the
eager run (dtypes, shapes, values to rtol 1e-5).
The test prints how many programs export and pass (shown with `pytest -rA`).
"""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from onnx_helpers import UNEXPORTABLE, assert_same, export_and_run, program_ops

from d2s.jit import to_static
from d2s.onnx import ExportError
from d2s.static.pytree import flatten

_TABLE = pathlib.Path(__file__).resolve().parents[1] / "jit" / "test_conversion_table.py"


def _load_table():
    spec = importlib.util.spec_from_file_location("_conversion_table_for_onnx", _TABLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TABLE = _load_table()


def _runs():
    """(id, entry, args) for every tensor run of the table that should succeed."""
    return [(f"{e.fn.__name__}-{k}", e, args) for e in TABLE.CASES
            if e.tensors and e.raises is None and "tensor" not in e.xfail
            for k, args in enumerate(e.tensors)]


_OUTCOMES = {}  # run id -> "pass" | ("unexportable", ops) | an error text


def _outcome(run_id, entry, args):
    """'pass', or ('unexportable', op names) when ExportError named such an
    op; raises AssertionError on a wrong model. Memoized per run."""
    if run_id in _OUTCOMES:
        return _OUTCOMES[run_id]
    _OUTCOMES[run_id] = f"{run_id}: failed"
    sf = to_static(entry.fn)
    concrete = sf.get_concrete_program(*TABLE._tensorize(args))
    feeds = [a for a in flatten(list(args))[0] if isinstance(a, np.ndarray)]
    forbidden = program_ops(concrete.main_program) & UNEXPORTABLE
    outputs, positions = concrete.result_outputs()  # (written state is not exported)
    if not outputs:  # only Python values come back: a model needs an output
        with pytest.raises(ExportError, match="returns no tensor"):
            export_and_run(concrete, feeds)
        result = ("unexportable", {"no tensor output"})
    elif forbidden:
        with pytest.raises(ExportError) as info:
            export_and_run(concrete, feeds)
        assert any(f"'{op}'" in str(info.value) for op in forbidden), str(info.value)
        result = ("unexportable", forbidden)
    else:
        got = export_and_run(concrete, feeds)
        eager = entry.fn(*TABLE._tensorize(args))
        leaves = flatten(eager)[0]
        assert len(got) == len(positions)
        for k, (value, i) in enumerate(zip(got, positions)):
            assert_same(value, leaves[i], f"{run_id}{args} output {k}")
        result = "pass"
    _OUTCOMES[run_id] = result
    return result


@pytest.mark.parametrize("run_id,entry,args", [pytest.param(*r, id=r[0]) for r in _runs()])
def test_table_program_exports_and_runs(run_id, entry, args):
    _outcome(run_id, entry, args)


def test_export_coverage_of_the_table():
    """Counts and prints the programs that export and pass; the target is
    every program without print/assert/raise/random ops. The count goes to the
    test's captured output (`pytest -rA tests/onnx` shows it), not among the dots."""
    passed, unexportable, failed = 0, [], []
    for run_id, entry, args in _runs():
        try:
            result = _outcome(run_id, entry, args)
        except Exception as e:  # noqa: BLE001 - collected and reported below
            _OUTCOMES[run_id] = result = f"{run_id}: {type(e).__name__}: {str(e)[:300]}"
        if result == "pass":
            passed += 1
        elif isinstance(result, tuple):
            unexportable.append(f"{run_id} ({', '.join(sorted(result[1]))})")
        else:
            failed.append(result)
    print(f"ONNX export of the conversion table: {passed} of {len(_runs())} programs "
          f"export and pass in ONNX Runtime; {len(unexportable)} hold ops with no ONNX "
          f"form: {'; '.join(unexportable) or 'none'}")
    assert not failed, "\n".join(failed)
