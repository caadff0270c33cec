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


def _build_two_ops():
    from d2s import static
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float32")
        y = x * 2.0
        z = y + x
    return prog, z


def test_op_origins_are_resolved_when_read_and_equal_user_origin():
    import inspect
    prog, _ = _build_two_ops()
    ops = [op for op in prog.global_block().ops if op.type in ("multiply", "add")]
    assert len(ops) == 2, [op.type for op in prog.global_block().ops]
    # Nothing read yet: the ops hold where they were built, not the line.
    assert all(type(op.origin_record) is ir.PendingOrigin for op in ops)
    first = inspect.getsource(_build_two_ops).splitlines()
    want = [(__file__, _build_two_ops.__code__.co_firstlineno + i, first[i].strip())
            for i, line in enumerate(first) if line.strip() in ("y = x * 2.0", "z = y + x")]
    assert [op.origin for op in ops] == want
    # Read once, kept: the record is now the resolved tuple.
    assert [op.origin_record for op in ops] == want


def test_a_clone_keeps_unresolved_origins_and_resolves_them_alike():
    prog, _ = _build_two_ops()
    copy = prog.clone()
    pairs = list(zip(prog.global_block().ops, copy.global_block().ops))
    assert all(type(new.origin_record) is ir.PendingOrigin for _, new in pairs)
    assert [new.origin for _, new in pairs] == [old.origin for old, _ in pairs]


def test_a_traced_op_keeps_its_origin_in_itself():
    # A program keeps every op until it is dropped: where an op was built is
    # two of its own fields (the code object, which the cyclic collector does
    # not track, and an offset), not one more object per op to scan.
    import gc
    prog, _ = _build_two_ops()
    for op in prog.global_block().ops:
        held = [r for r in gc.get_referents(op) if gc.is_tracked(r) and r is not type(op)]
        assert not any(isinstance(r, ir.PendingOrigin) for r in held), held
        assert all(r is op.block or r is op.inputs or r is op.outputs or r is op.attrs
                   for r in held), held
    first = [op.origin for op in prog.global_block().ops]
    assert all(o is not None and o[0] == __file__ for o in first)
