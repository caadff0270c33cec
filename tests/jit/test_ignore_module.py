"""jit.ignore_module: functions of an ignored module (and its submodules)
are not converted when converted code calls them; others still are."""
import sys
import textwrap

import numpy as np
import pytest

import d2s
from d2s.convert import api as convert_api
from d2s.jit import ignore_module, to_static

HELPER = textwrap.dedent("""
    def pick(x):
        if x.sum() > 0:   # a tensor condition: a cond op when converted
            return x * 2.0
        return x - 1.0
""")


@pytest.fixture
def helper(tmp_path, monkeypatch):
    pkg = tmp_path / "apidiff_ignored"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "helper.py").write_text(HELPER)
    monkeypatch.syspath_prepend(str(tmp_path))
    import apidiff_ignored.sub.helper as mod
    yield mod
    convert_api._ignored_modules.discard("apidiff_ignored")
    convert_api._convertible_code.clear()
    for name in [n for n in sys.modules if n.startswith("apidiff_ignored")]:
        del sys.modules[name]


def test_ignored_module_functions_run_unconverted(helper):
    def step(x):
        return helper.pick(x)

    pos, neg = d2s.to_tensor(np.ones(2)), d2s.to_tensor(-np.ones(2))
    converted = to_static(step)
    np.testing.assert_array_equal(converted(pos).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(converted(neg).numpy(), [-2.0, -2.0])  # one program, a cond
    assert convert_api.is_convertible(helper.pick)

    import apidiff_ignored
    ignore_module([apidiff_ignored])  # the package: its submodules too
    assert not convert_api.is_convertible(helper.pick)
    assert convert_api.is_convertible(step)
    # run as plain Python while tracing: still the eager answers for either sign
    plain = to_static(lambda x: helper.pick(x))
    np.testing.assert_array_equal(plain(pos).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(plain(neg).numpy(), [-2.0, -2.0])
    with pytest.raises(TypeError, match="modules or module names"):
        ignore_module([3])
