"""`user_origin`'s line numbers: read from a per-code-object table, equal to `f_lineno`."""
import sys

from d2s.static import ir


def _lines_of_callers():
    pairs, f = [], sys._getframe(1)
    while f is not None:
        pairs.append((f.f_code.co_name, ir._lineno(f), f.f_lineno))
        f = f.f_back
    return pairs


def _spread_over_lines(flag):
    seen = [_lines_of_callers()]
    for i in range(2):
        if i:
            seen.append(
                _lines_of_callers())
    try:
        raise ValueError
    except ValueError:
        seen.append(_lines_of_callers())
    seen.append([pair for pair in (lambda: _lines_of_callers())()])
    return seen + ([_lines_of_callers()] if flag else [])


def test_table_lines_equal_f_lineno_in_every_frame():
    for flag in (True, False):
        for pairs in _spread_over_lines(flag):
            assert pairs, "no frames"
            for name, table_line, frame_line in pairs:
                assert table_line == frame_line, name


def test_user_origin_names_the_calling_line():
    def build():
        return ir.user_origin()  # user_origin looks two frames up: call it through one
    def caller():
        return build()
    origin = caller()
    assert origin[0] == __file__
    assert origin[2] == "return build()"
    assert origin[1] == caller.__code__.co_firstlineno + 1
