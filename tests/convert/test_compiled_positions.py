"""Converted code is compiled from its tree at the user's own file lines:
every node the converters made has a position (the line of the code it
replaces), the code's line numbers are the function's, and what a frame of
converted code shows (errors, D2S_FULL_TRACEBACK frames, warnings) is the
user's line."""
import ast
import inspect
import linecache
import os
import sys
import traceback
import types

import pytest

from d2s.convert import api, convert_function, loader, origin, positions, rewrite_exception
from d2s.convert.source import parse_function

import convert_cases
import fused_cases

THIS_FILE = os.path.abspath(__file__)

FUNCTIONS = ([fn for fn, _ in convert_cases.CASES] + [fused_cases.Child.forward]
             + [v for v in vars(fused_cases).values() if isinstance(v, types.FunctionType)])


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__qualname__)
def test_every_converted_node_has_a_line_of_the_function(fn):
    node = api.converted_tree(fn, parse_function(fn))
    assert positions.missing(node) == []
    lines, start = inspect.getsourcelines(fn)
    for part in ast.walk(node):
        if "lineno" in part._attributes:
            assert start <= part.lineno <= part.end_lineno < start + len(lines), (
                type(part).__name__, part.lineno)
            found = getattr(part, origin.ORIGIN, None)
            assert found is not None and found.lineno == part.lineno, type(part).__name__


def test_code_lines_are_the_functions_own():
    converted, _ = convert_function(fused_cases.Child.forward)
    lines, start = inspect.getsourcelines(fused_cases.Child.forward)
    seen = set()

    def collect(code):
        seen.update(line for _, _, line in code.co_lines() if line is not None)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                collect(const)
    collect(converted.__code__)
    assert seen and seen <= set(range(start, start + len(lines)))


def test_a_node_left_without_a_position_gets_its_origins_line(monkeypatch):
    # a converter that forgot to give a node a position: compile refuses the
    # tree, and every such node is placed at its origin's line
    real = api.convert_tree

    def forgetful(*args, **kwargs):
        tree = real(*args, **kwargs)
        for part in ast.walk(tree):
            if isinstance(part, ast.Call) and getattr(part.func, "attr", "") == "convert_ifelse":
                del part.lineno, part.col_offset
        return tree
    monkeypatch.setattr(api, "convert_tree", forgetful)
    monkeypatch.setattr(api, "_by_code", {})
    placed = []
    monkeypatch.setattr(loader, "place", lambda tree, line: placed.append(
        len(positions.missing(tree))) or positions.place(tree, line))

    def branchy(x):
        y = x
        if x > 0:
            y = x + 1
        return y
    converted, _ = convert_function(branchy)
    assert converted(1) == 2 and converted(-1) == -1
    if_line = inspect.getsourcelines(branchy)[1] + 2
    lines = {line for _, _, line in converted.__code__.co_lines()}
    assert if_line in lines and placed == [1]


class Model:
    def forward(self, values, scale):
        total = 0
        for v in values:
            if v > scale:
                total = total + v / (
                    scale - 1)
            else:
                total = total - v
        return total


def _user_line(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_an_error_names_the_line_python_would():
    converted, _ = convert_function(Model.forward)
    with pytest.raises(ZeroDivisionError) as info:
        converted(Model(), [3.0], 1)
    message = str(rewrite_exception(info.value))
    # the division spans two lines; Python names the line of the operation
    line = _user_line(Model.forward, "total = total + v / (")
    try:
        Model().forward([3.0], 1)
    except ZeroDivisionError as eager:
        assert traceback.extract_tb(eager.__traceback__)[-1].lineno == line
    assert f'File "{THIS_FILE}", line {line}, in forward' in message
    assert "total = total + v / (" in message


@pytest.mark.skipif(sys.version_info < (3, 11), reason="frames have columns from Python 3.11")
def test_full_traceback_frames_show_the_users_line_and_columns():
    converted, _ = convert_function(Model.forward)
    with pytest.raises(ZeroDivisionError) as info:
        converted(Model(), [3.0], 1)
    frames = [f for f in traceback.extract_tb(info.value.__traceback__)
              if f.filename.startswith("<d2s converted")]
    assert frames
    innermost = frames[-1]
    line = _user_line(Model.forward, "total = total + v / (")
    assert innermost.lineno == line
    assert innermost.line == "total = total + v / ("        # the user's text, from linecache
    assert linecache.getline(innermost.filename, line).strip() == innermost.line
    # the user's columns, as in the file (the method's text was dedented to parse)
    file_line = linecache.getline(THIS_FILE, line)
    assert innermost.colno == file_line.index("v / (")
    # generated code at a line marks no column: the `if` that became a call
    outer = [f for f in frames if f.lineno == _user_line(Model.forward, "if v > scale")]
    assert outer and outer[0].colno is None


def test_lookup_outside_the_function_is_none():
    converted, _ = convert_function(Model.forward)
    name = converted.__code__.co_filename
    lines, start = inspect.getsourcelines(Model.forward)
    assert origin.lookup(name, start - 1) is None
    assert origin.lookup(name, inspect.getsourcelines(_user_line)[1]) is None
    assert origin.lookup(name, start).source_line == "def forward(self, values, scale):"
