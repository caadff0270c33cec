"""The converted source as text: printed only when read (`.code`), by astor in
the house style, by `ast.unparse` where astor cannot print a tree faithfully,
and the same text whether the function was converted or read from the cache."""
import ast
import sys

import astor
import pytest

from d2s import cache_dir
from d2s.convert import api, code_text, convert_function
from d2s.convert.code_text import ConvertedCode, ast_to_source

# Code astor prints with wrapped long lines, multi-line strings, nested defs
# with decorators, try/except/finally, elif.
SAMPLE = '''
import os


@decorator(with_args=1)
def sample(a, b=2, *args, c, **kw):
    """Docstring
over several lines,
  some less indented than the code."""
    total = some_function_with_a_long_name(a, b, keyword_argument=c, other=kw) + another_call(a)
    text = """first
second"""
    if a:
        x = 1
    elif b:
        x = 2
    else:
        x = [element_number_one, element_number_two, element_number_three, element_four]
    try:
        y = f"{x!r:>{b}} and {a}"
    except (ValueError, TypeError) as e:
        del total
    finally:
        pass
    return x, y, lambda q: q + 1
'''


def test_text_is_astors_house_style():
    tree = ast.parse(SAMPLE)
    assert ast_to_source(tree) == astor.to_source(tree)
    assert ast_to_source(tree.body) == astor.to_source(tree)     # a statement list
    assert ast_to_source(ast.parse("x = (1 +\n 2)\ny = (a, )")) == "x = 1 + 2\ny = a,\n"


@pytest.mark.parametrize("text", [
    "x = f'{ {1, 2} }' + f'{ {k: 1 for k in y} }'",   # astor: an escaped brace
    "try:\n    pass\nexcept* ValueError:\n    x = 1\n",  # astor has no printer
    "match c:\n    case [a, b]:\n        pass\n",
])
def test_what_astor_cannot_print_faithfully_is_unparsed(text):
    tree = ast.parse(text)
    printed = ast_to_source(tree)
    assert printed == ast.unparse(tree) + "\n"
    assert ast.dump(ast.parse(printed)) == ast.dump(tree)


def documented(x, y):
    """A docstring
with lines at column zero,
        and deeper ones."""
    message = """line one
line two"""
    if x > y:
        z = x
    else:
        z = y
    return z, message


def test_code_is_the_converted_def_as_written():
    converted, code = convert_function(documented)
    assert converted(1, 2) == documented(1, 2) and converted(3, 2) == documented(3, 2)
    assert converted.__doc__ == documented.__doc__
    text = str(code)
    assert text.startswith("def documented(x, y):\n")
    assert "\nwith lines at column zero,\n        and deeper ones." in text
    assert "_jst.convert_ifelse(x > y" in text
    ast.parse(text)                                     # the text is Python


def with_defaults(a, b: int = 2, *, c=3) -> int:
    if a > b:
        a = a - c
    return a


def test_code_prints_no_definition_time_parts():
    # defaults and annotations were evaluated once, by the original def
    text = str(convert_function(with_defaults)[1])
    assert text.startswith("def with_defaults(a, b, *, c):\n")
    assert "int" not in text


def test_nothing_is_printed_until_code_is_read(monkeypatch):
    printed = []
    real = code_text.ast_to_source
    monkeypatch.setattr(code_text, "ast_to_source", lambda tree: printed.append(1) or real(tree))
    monkeypatch.setattr(api, "_by_code", {})
    monkeypatch.setattr(api, "_by_function", type(api._by_function)())

    def fresh(x):
        if x > 0:
            x = x - 1
        return x
    converted, code = convert_function(fresh)
    assert converted(3) == 2 and printed == []
    assert isinstance(code, ConvertedCode)
    assert "convert_ifelse" in code and printed == [1]
    assert code.count("def ") == 5 and printed == [1]     # printed once, then kept


def test_converted_code_acts_as_text():
    code = ConvertedCode(make=lambda: "def f(x):\n    return x\n")
    assert code == "def f(x):\n    return x\n" and str(code).startswith("def f")
    assert code.splitlines() == ["def f(x):", "    return x"]
    assert f"{code}" == str(code) and len(code) == 23 and "return" in code
    assert code[:5] == "def f"


CACHED_MODULE = '''\
class K:
    def f(self, x):
        total = 0
        while x > 0:
            total = total + x
            x = x - 1
        return total
'''


def test_code_of_a_cache_hit_is_the_fresh_conversions(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_dir.ENV_VAR, str(tmp_path / "cache"))
    path = tmp_path / "cached_code_mod.py"
    path.write_text(CACHED_MODULE)
    texts = []
    for attempt in range(2):
        monkeypatch.setattr(api, "_by_code", {})
        namespace = {"__name__": f"cached_code_mod{attempt}"}
        exec(compile(CACHED_MODULE, str(path), "exec"), namespace)
        converted, code = convert_function(namespace["K"].f)
        assert converted(None, 4) == 10
        texts.append(str(code))
    assert texts[0] == texts[1] and "convert_while_loop" in texts[0]
    assert len(list((tmp_path / "cache" / "convert").iterdir())) == 1


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* is Python 3.11")
def test_code_of_syntax_astor_lacks():
    from tests.convert.star_handlers import handled
    converted, code = convert_function(handled)
    assert converted(1) == handled(1) and converted(-1) == handled(-1)
    assert "except* ValueError as" in code


IMPORTS_CHILD = '''\
import sys
import numpy as np
import d2s
from user_mod_for_astor import f
static = d2s.jit.to_static(f)
x = d2s.to_tensor(np.array([1.0, -2.0], "float32"))
static(x), static(x)
before = "astor" in sys.modules
text = static.code
print(before, "astor" in sys.modules, "convert_ifelse" in text)
'''


def test_converting_and_running_never_import_the_printer(tmp_path):
    import os
    import subprocess
    (tmp_path / "user_mod_for_astor.py").write_text(
        "def f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, str(tmp_path)]),
               D2S_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", IMPORTS_CHILD], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]
