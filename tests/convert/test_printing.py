"""Printing once: astor's text, the statement lines reported by the same pass,
the `ast.unparse` fallback, and the indentation of the converted def."""
import ast
import inspect
import os

import astor
import pytest

from d2s.convert import convert_function, rewrite_exception
from d2s.convert.loader import generate_source
from d2s.convert.printing import ast_to_source, print_tree

THIS_FILE = os.path.abspath(__file__)

# Code whose astor printing wraps long lines, holds multi-line strings at
# every indentation, nested defs with decorators, try/except/finally, elif.
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
        del total, text
    finally:
        pass
    return x, y, lambda q: q + 1


class K:
    def m(self):
        return 1
'''


# The node kinds whose astor visitors the printer replaces (plain defs, calls,
# tuples, numbers, operators, comparisons, assignments, expression and return
# statements, nonlocal), each way astor may print them: the
# parentheses a tuple or number keeps or drops, keywords and `**`, wrapping.
INLINED_VISITORS = '''
def plain(a, b, c):
    nonlocal x, y
    def inner():
        return ()
    return a, (b,), ((a, b), c), f(*a, **b), g(x=1, **{'k': 2}), h((1, 2))

def with_defaults(a, b=(1, 2), *, c=-1, **kw) -> int:
    return (-1).bit_length(), 1.5.hex(), (-2.5) ** 2, 2 ** -1, -(1), 10 ** 400

async def coro(a, b):
    await a

def gen(a):
    b = yield a
    yield b
    return (yield from b)

for k, (a, b) in enumerate(pairs):
    x = a, b = 1, 2
    y = 1e1000, -1e1000, 1e1000 - 1e1000, 3j, (1 + 2j), True, None
    z = some_function_with_a_rather_long_name(first_argument, second_argument, (t, u), key=(1,))
    t = [(), (1,), (1, 2)][0:1], {(1, 2): 3}, (yield 1, 2)
    u = (a + b) * c - (d - e) + a ** b ** c + (a ** b) ** c + -a ** 2 + (-a) ** 2 + a % (b // c)
    v = a < b < c, not a in b, (a < b) == (c is not d), (a if b else c) < d, a + (b < c)
    a, b = c = d
    print(a, b) if c else None
    yield
    return
'''


def _fragments(generator_class, tree):
    gen = generator_class(" " * 4)
    gen.visit(tree)
    del gen.write
    return gen.result


def test_inlined_visitors_write_astors_fragments():
    # Fragments, not only text: wrapping a long line splits it between them.
    from astor.code_gen import SourceGenerator

    from d2s.convert.printing import _RecordingGenerator

    # (short lines are written whole: see test_short_lines_are_astors_text)
    tree = ast.parse(INLINED_VISITORS)
    recorded = _RecordingGenerator()
    recorded.short_lines = False
    recorded.visit(tree)
    del recorded.write
    assert recorded.result == _fragments(SourceGenerator, tree)
    assert ast_to_source(tree) == astor.to_source(tree)


def _printed_both_ways(tree_of):
    """print_tree of a fresh `tree_of()` with short lines written whole, and
    with astor's fragments throughout (fresh trees: astor leaves `_pp` on nodes)."""
    from d2s.convert.printing import _RecordingGenerator

    printed = []
    for short in (True, False):
        _RecordingGenerator.short_lines = short
        try:
            printed.append(print_tree(tree_of()))
        finally:
            _RecordingGenerator.short_lines = True
    return printed


def _same_printing(short, fragments):
    assert short.text == fragments.text
    assert short.string_lines == fragments.string_lines
    assert ([(line, type(node)) for line, node in short.statements.items()]
            == [(line, type(node)) for line, node in fragments.statements.items()])


# Short statements of every kind short_lines spells, each way astor spells
# them (parentheses kept and dropped, quoting, wrapping when too long), and
# ones it leaves to astor (strings starting a line or spanning lines, slices,
# lambdas, numbers astor writes its own way, stale precedences).
SHORT_STATEMENTS = r'''
def f(a, b):
    x = y = (a, b), (a,), (), [a, (b,)], [], None, True, b'x', u'u', 'q"\''
    t = -1, 2.5, 0, [()], ((a, b),), (a, (b,))
    x += (a + b) * c - d ** -e ** f, (a ** b) ** c, -a ** 2, (-a) ** 2
    u = not a, ~(a + b), a ** (b ** c), a - (b - c), (a - b) - c, -(-a)
    r = a < b < c, (a < b) == (c is not d), a + (b < c), a and (b or c)
    s = (a and b) and c, not (a and b), a or not b, (a or b) and c
    z = f(a)(b)[c].d, f(*a, *b.c, k=1, **d), f((a, b)), f(a, (b, c))
    q = a[b, c], a[(b, c)], a[b][c], [a][0], f()[a + b]
    call(a, 'x', key=(1,)).method()[0](x=-1)
    w = (1).bit_length(), 1.5.hex(), 'x'.join(a), (a + b).c, (a, b)[0]
    w = a[1:2], (yield)
    'docstring-like expression'
    'x'.join(a)
    v = 'line one\nline two', f'{a}', lambda q: q + 1, a if b else c
    v = {a: b}, {a}
    n = 1e1000, -1e1000, 3j, 10 ** 400, ...
    very_long_name_number_one = some_function_with_a_long_name(argument_one, argument_two)
    nonlocal p, q
    global g
    return
    return a, b
    pass
    for k in a:
        break
        continue
'''


def test_short_lines_are_astors_text():
    for text in (SHORT_STATEMENTS, INLINED_VISITORS, SAMPLE):
        _same_printing(*_printed_both_ways(lambda: ast.parse(text)))


def test_short_lines_write_astors_fragments():
    # Unjoined, the fragments of every statement short_lines writes are
    # astor's own, the ones its wrapping of a long line splits between.
    from astor.code_gen import SourceGenerator

    from d2s.convert.printing import _RecordingGenerator

    for text in (SHORT_STATEMENTS, INLINED_VISITORS, SAMPLE):
        recorded = _RecordingGenerator()
        recorded.join_short = False
        recorded.visit(ast.parse(text))
        del recorded.write
        assert recorded.result == _fragments(SourceGenerator, ast.parse(text))


def test_converted_test_code_prints_the_same_with_short_lines():
    # Every function of the conversion test cases, converted, printed both ways.
    from d2s.convert.pipeline import convert_tree
    from d2s.convert.source import parse_function
    from tests.convert import convert_cases

    def converted(fn):
        return lambda: convert_tree(parse_function(fn).node, "<test>", fn.__qualname__)

    functions = [fn for fn, _ in convert_cases.CASES] + [documented, long_line_fails]
    assert len(functions) > 50
    for fn in functions:
        _same_printing(*_printed_both_ways(converted(fn)))


def _statement_lines(text):
    lines = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.stmt):
            lines.setdefault(node.lineno, set()).add(type(node))
    return lines


def test_text_is_astors_house_style():
    tree = ast.parse(SAMPLE)
    assert ast_to_source(tree) == astor.to_source(tree)


def test_statement_lines_reported_by_the_printing_pass():
    tree = ast.parse(SAMPLE)
    printed = print_tree(tree)
    reparsed = _statement_lines(printed.text)
    # every statement line of the text is reported, with that statement
    for line, kinds in reparsed.items():
        assert type(printed.statements[line]) in kinds, (line, printed.statements[line])
    # and every statement of the tree is reported on a line of its own kind
    reported = {id(node) for node in printed.statements.values()}
    assert all(id(n) in reported for n in ast.walk(tree) if isinstance(n, ast.stmt))


def test_string_lines_are_the_insides_of_multiline_strings():
    printed = print_tree(ast.parse(SAMPLE))
    lines = printed.text.split("\n")
    inside = {i + 1 for i, line in enumerate(lines)
              if line in ("over several lines,", "  some less indented than the code.\"\"\"",
                          "second\"\"\"")}
    assert inside and printed.string_lines == inside


def test_braced_fstring_field_falls_back_to_unparse():
    # astor would print f'{ {1, 2} }' as f'{{1, 2}}', an escaped brace
    tree = ast.parse("x = f'{ {1, 2} }' + f'{ {k: 1 for k in y} }'")
    text = ast_to_source(tree)
    assert ast.dump(ast.parse(text)) == ast.dump(tree)
    assert text == ast.unparse(tree) + "\n"


def test_syntax_astor_lacks_falls_back_to_unparse():
    tree = ast.parse("try:\n    pass\nexcept* ValueError:\n    x = 1\n")
    printed = print_tree(tree)
    assert ast.dump(ast.parse(printed.text)) == ast.dump(tree)
    assert type(printed.statements[1]) is ast.TryStar
    assert type(printed.statements[4]) is ast.Assign


def test_plain_code_is_not_printed_by_unparse():
    tree = ast.parse("x = (1 +\n 2)\ny = 'a'")
    assert ast_to_source(tree) == "x = 1 + 2\ny = 'a'\n"    # unparse: y = 'a' too,
    assert ast_to_source(ast.parse("x = (a, )")) == "x = a,\n"  # but (a,) there


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


def test_converted_def_keeps_multiline_strings_exactly():
    converted, code = convert_function(documented)
    assert converted(1, 2) == documented(1, 2) and converted(3, 2) == documented(3, 2)
    assert converted.__doc__ == documented.__doc__
    assert "\nwith lines at column zero,\n        and deeper ones." in code
    tree = ast.parse(inspect.getsource(documented))
    source = generate_source(tree.body[0], documented)
    # the module indents the def, except inside its strings
    assert "\nwith lines at column zero,\n" in source.module
    assert "\n    def __d2s_converted(x, y):\n" in source.module


def long_line_fails(values):
    total = values[0] + values[1] + values[2] + values[3] + values[4] + values[5] + values[99]
    return total


def test_error_in_a_wrapped_statement_names_the_user_line():
    converted, code = convert_function(long_line_fails)
    assert max(len(line) for line in code.splitlines()) <= 80   # astor wrapped it
    with pytest.raises(IndexError) as info:
        converted(list(range(10)))
    text = str(rewrite_exception(info.value))
    lines, start = inspect.getsourcelines(long_line_fails)
    assert f'File "{THIS_FILE}", line {start + 1}, in long_line_fails' in text
    assert "values[99]" in text
