"""Finding a function's source: the cheap block, and inspect where it is cut short."""
import inspect

import pytest

from d2s.convert import convert_function
from d2s.convert.source import function_source, parse_function

import source_cases as cases

FAST = ["decorated", "one", "two"]
CUT_SHORT = ["string_at_margin", "backslash", "bracket"]   # text reaches the left margin


@pytest.mark.parametrize("name", FAST + CUT_SHORT)
def test_source_found_and_converted(name):
    fn = getattr(cases, name)
    parsed = parse_function(fn)
    assert parsed.node.name == name
    # the text parsed holds the whole def, as inspect finds it
    found = "".join(parsed.source.lines)
    assert "".join(inspect.getsourcelines(fn)[0]).strip() in found
    assert convert_function(fn)[0](1) == fn(1)


@pytest.mark.parametrize("name", FAST)
def test_cheap_block_used_when_it_parses(name):
    fn = getattr(cases, name)
    assert parse_function(fn).source == function_source(fn)


@pytest.mark.parametrize("name", CUT_SHORT)
def test_block_cut_short_falls_back_to_inspect(name):
    fn = getattr(cases, name)
    cheap = function_source(fn)
    parsed = parse_function(fn)
    assert parsed.source != cheap
    assert parsed.source.lines == inspect.getsourcelines(fn)[0]


def test_method_block_stops_at_class_level():
    fn = cases.K.method
    assert parse_function(fn).source == function_source(fn)
    assert convert_function(fn)[0](5) == 4


def _checks_positive(x):
    assert x > 0, "needs a positive value"
    return x + 1


def test_a_def_in_a_module_pytest_rewrote_matches_its_source():
    """pytest compiles its test modules with asserts rewritten: the source
    guard (convert.source_match) rewrites the parsed def the same way before
    comparing, so a test file edited just before the run still converts; the
    parsed def, which is what gets converted, keeps its plain `assert`."""
    import ast

    from d2s.convert import source_match
    assert "@pytest_ar" in globals()   # (this module was rewritten by pytest)
    parsed = parse_function(_checks_positive)
    assert source_match.matches(_checks_positive, parsed.node)
    assert any(isinstance(n, ast.Assert) for n in ast.walk(parsed.node))
