"""Each pass, before and after, on small programs (printed views compared)."""
import numpy as np
import pytest

import d2s
from d2s import static
import d2s.static.side_effects  # noqa: F401
from d2s.backends.numpy import inplace
from d2s.backends.numpy.passes import PIPELINE, optimize
from d2s.static.passes import ProgramView, constant_folding, cse, dce


def _view(build, outputs_of):
    prog = static.Program()
    with static.program_guard(prog):
        env = build()
    outs = [v.name for v in outputs_of(env)]
    inputs = [v.name for v in prog.feed_vars.values()] + list(prog.captured)
    return ProgramView(prog, prog.global_block().ops, outs, inputs), env


def _types(view, idx=0):
    return [op.type for op in view.blocks[idx]]


def test_constant_folding_evaluates_constant_subgraphs():
    def build():
        x = static.data("x", [3], "float32")
        k = d2s.full([3], 2.0) * d2s.full([3], 4.0) + 1.0   # all constant
        return {"y": x * k}

    view, env = _view(build, lambda e: [e["y"]])
    assert _types(view) == ["full", "full", "multiply", "full", "add", "multiply"]
    after = constant_folding.run(view)
    assert _types(after) == ["multiply"]
    folded = after.blocks[0][0].inputs[1].name
    np.testing.assert_array_equal(after.consts[folded], np.full(3, 9.0, np.float32))
    assert _types(view) == ["full", "full", "multiply", "full", "add", "multiply"]  # unchanged


def test_constant_folding_never_folds_parameters_or_random_ops():
    w = d2s.to_tensor(np.ones(3, np.float32))

    def build():
        x = static.data("x", [3], "float32")
        return {"y": x * (w * 2.0) + d2s.rand([3])}

    view, env = _view(build, lambda e: [e["y"]])
    after = constant_folding.run(view)
    assert "uniform" in _types(after) and _types(after).count("multiply") == 2


def test_cse_merges_equal_ops_and_redirects_uses():
    def build():
        x = static.data("x", [3], "float32")
        a = d2s.exp(x)
        b = d2s.exp(x)
        return {"y": a + b}

    view, env = _view(build, lambda e: [e["y"]])
    after = cse.run(view)
    assert _types(after) == ["exp", "add"]
    add = after.blocks[0][1]
    assert add.inputs[0] is add.inputs[1]
    assert view.blocks[0][2].inputs[0] is not view.blocks[0][2].inputs[1]


def test_dce_drops_unused_ops_but_keeps_side_effects():
    def build():
        x = static.data("x", [3], "float32")
        unused = d2s.tanh(x) * 3.0
        static.side_effects.append_print(["x is", x])
        return {"y": x + 1.0, "unused": unused}

    view, env = _view(build, lambda e: [e["y"]])
    after = dce.run(view)
    assert "tanh" not in _types(after) and "print" in _types(after)
    assert _types(after)[-1] == "add"


def test_dce_keeps_reads_of_a_value_that_may_be_undefined():
    # Reading it raises NameError when no path assigned it (a loop that ran
    # zero times): a side effect, even when the result is unused. Values that
    # surely exist are pruned as before, and so is an unused loop.
    from d2s.static.control_ops.undefined import append_undefined

    def build():
        x = static.data("x", [3], "float32")
        n = static.data("n", [], "int64")
        block = static.default_main_program().global_block()
        start = block.create_var([3], "float32", prefix="undefined")
        append_undefined(block, start, "h")
        i, h = static.nn.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, x * 2.0),
                                    [d2s.zeros([], "int64"), start])
        return {"y": x + 1.0, "read": h * 3.0, "dead": d2s.tanh(x), "i": i}

    view, env = _view(build, lambda e: [e["y"]])
    after = dce.run(view)
    kept = _types(after)
    assert "tanh" not in kept
    assert kept.count("multiply") == 1 and {"undefined", "while"} <= set(kept)
    prog = view.program
    for n, raises in ((0, True), (2, False)):
        feed = {"x": np.ones(3, np.float32), "n": np.array(n)}
        if raises:
            with pytest.raises(NameError, match="'h'"):
                static.Executor().run(prog, feed=feed, fetch_list=[env["y"]])
        else:
            got, = static.Executor().run(prog, feed=feed, fetch_list=[env["y"]])
            np.testing.assert_array_equal(got, np.full(3, 2.0, np.float32))


def test_dce_inside_sub_blocks():
    def build():
        x = static.data("x", [3], "float32")
        y = static.nn.cond(x.sum() > 0, lambda: (x * 2.0, d2s.exp(x) * 5.0),
                           lambda: (x - 1.0, x))[0]
        return {"y": y}

    view, env = _view(build, lambda e: [e["y"]])
    after = dce.run(view)
    cond = next(op for op in after.blocks[0] if op.type == "cond")
    # the second output is unused but the cond op still returns it: its ops stay
    assert "exp" in _types(after, cond.attrs["true_block"])


def test_inplace_fuses_elementwise_chain_into_one_buffer():
    w = d2s.to_tensor(np.ones((4, 5), np.float32))
    b = d2s.to_tensor(np.ones(5, np.float32))

    def build():
        x = static.data("x", [2, 4], "float32")
        return {"y": d2s.tanh(d2s.matmul(x, w) + b) * 2.0}

    view, env = _view(build, lambda e: [e["y"]])
    after = inplace.run(constant_folding.run(view))
    text = after.to_text()
    mm = next(op for op in after.blocks[0] if op.type == "matmul")
    assert text.count(f"[in place: {mm.outputs[0].name}]") == 3   # add, tanh, multiply


def test_inplace_never_writes_inputs_outputs_or_viewed_buffers():
    def build():
        x = static.data("x", [2, 3], "float32")
        a = x * 2.0                  # owned
        v = d2s.reshape(a, [3, 2])   # a view of a: a must not be overwritten
        b = d2s.exp(a)               # a dies here, but a view of it lives on
        c = b + 1.0                  # b dies here: may be reused
        return {"v": v, "c": c, "x": x}

    view, env = _view(build, lambda e: [e["v"], e["c"]])
    after = inplace.run(view)
    targets = set(after.inplace.values())
    a_name = next(op for op in view.blocks[0] if op.type == "multiply").outputs[0].name
    b_name = next(op for op in view.blocks[0] if op.type == "exp").outputs[0].name
    assert a_name not in targets and "x" not in targets
    assert targets == {b_name}
    # and the compiled program still computes the right thing
    prog = view.program
    got = static.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32)},
                                fetch_list=[env["v"], env["c"]])
    np.testing.assert_array_equal(got[0], np.full((3, 2), 2.0))
    np.testing.assert_allclose(got[1], np.exp(np.full((2, 3), 2.0)) + 1.0, rtol=1e-6)


def test_simplify_drops_exact_identities_only():
    from d2s.static.passes import simplify

    def build():
        x = static.data("x", [3], "float32")
        a = x * 1.0                 # identity
        b = 0.0 + a                 # identity
        c = b * d2s.ones([2, 3])    # broadcasts: kept
        d = x * 1.5                 # not neutral: kept
        return {"c": c, "d": d}

    view, env = _view(build, lambda e: [e["c"], e["d"]])
    after = simplify.run(constant_folding.run(view))
    assert _types(after) == ["multiply", "multiply"]
    first = after.blocks[0][0]
    assert first.inputs[0].name == "x" and first.outputs[0].shape == (2, 3)
    got = static.Executor().run(view.program, feed={"x": np.arange(3, dtype=np.float32)},
                                fetch_list=[env["c"], env["d"]])
    np.testing.assert_array_equal(got[0], np.tile(np.arange(3, dtype=np.float32), (2, 1)))


def _pruned_program():
    """A program with dead code, foldable constants, duplicates and an identity,
    pruned for `y`: what a traced function's program is when it is compiled."""
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [3], "float32")
        d2s.exp(x) * 3.0                                      # dead
        k = d2s.full([3], 2.0) * d2s.full([3], 4.0)             # folded
        a, b = d2s.tanh(x * k), d2s.tanh(x * k)                 # CSE merges them
        y = static.nn.cond(x.sum() > 0, lambda: (a + b) * 1.0, lambda: a - 0.0)  # identities
    dce.prune_program(prog, [y.name])
    return prog, x, y


def _emitted(view):
    """What the compiler reads of a view: its ops (with in-place notes),
    constants, outputs and renames."""
    return view.to_text(), dict(view.rename)


def _optimized_with_every_pass(view):
    for p in PIPELINE:
        view = p.run(view)
    return view


def test_dce_is_skipped_after_pruning_and_would_have_removed_nothing():
    prog, x, y = _pruned_program()
    view = ProgramView(prog, prog.global_block().ops, [y.name], [x.name])
    assert dce.finds_nothing(view)
    assert _emitted(optimize(view)) == _emitted(_optimized_with_every_pass(view))
    # more outputs than it was pruned for: nothing more to remove either
    assert dce.finds_nothing(ProgramView(prog, prog.global_block().ops, [y.name, x.name]))


def test_dce_runs_unless_the_program_is_as_pruned():
    prog, x, y = _pruned_program()
    ops = prog.global_block().ops
    assert not dce.finds_nothing(ProgramView(prog, ops, []))          # fewer outputs
    assert not dce.finds_nothing(ProgramView(prog, ops[:-1], [y.name]))  # other ops
    with static.program_guard(prog):
        d2s.exp(x)                                                     # an op added
    view = ProgramView(prog, prog.global_block().ops, [y.name], [x.name])
    assert not dce.finds_nothing(view)
    assert "exp" not in _types(optimize(view))
    fresh, _ = _view(lambda: {"y": static.data("x", [3], "float32") + 1.0},
                     lambda e: [e["y"]])
    assert not dce.finds_nothing(fresh)                                # never pruned
