"""Program.clone (independent copies) and prune_program (DCE on the IR itself)."""
import numpy as np

import d2s
from d2s import static
from d2s.static.backward import gradients
from d2s.static.passes.dce import prune_program


def _loop_program():
    """y = sum(x * 2**n) through a while op, plus a dead op and a parameter."""
    prog = static.Program()
    w = d2s.to_tensor(np.array([1.0, -1.0]), stop_gradient=False)
    with static.program_guard(prog):
        x = static.data("x", [2], "float64")
        _dead = x * 7.0
        i0 = d2s.zeros([], "int64")
        _, z = static.nn.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0),
                                    [i0, x * w])
        y = z.sum()
    return prog, x, y, w


def _run(prog, fetch, xv):
    return static.Executor().run(prog, feed={"x": xv}, fetch_list=fetch)


def test_clone_is_independent_and_runs_the_same():
    prog, x, y, w = _loop_program()
    text = str(prog)
    copy = prog.clone()
    assert str(copy) == text
    assert copy.captured == prog.captured and copy.counterpart(y) is not y
    assert copy.counterpart(y).name == y.name
    xv = np.array([0.5, 3.0])
    np.testing.assert_allclose(_run(copy, [copy.counterpart(y).name], xv)[0],
                               (xv * w.numpy() * 8).sum())

    with static.program_guard(copy):
        gx, = gradients([copy.counterpart(y)], [copy.counterpart(x)])
    assert str(prog) == text                                   # the original is untouched
    assert not any(k.startswith("save_") for op in prog.all_ops() for k in op.attrs)
    assert str(copy) != text
    np.testing.assert_allclose(_run(copy, [gx], xv)[0], 8 * w.numpy())


def test_prune_program_drops_dead_ops_and_their_variables_only():
    prog, x, y, w = _loop_program()
    xv = np.array([0.5, 3.0])
    expected = _run(prog, [y], xv)[0]
    dead = next(op for op in prog.global_block().ops
                if op.type == "multiply" and op.inputs[0] is x)
    prune_program(prog, [y.name])
    assert dead not in prog.global_block().ops
    assert dead.outputs[0].name not in prog.global_block().vars
    assert "while" in [op.type for op in prog.global_block().ops]
    assert x.name in prog.global_block().vars and list(prog.captured.values()) == [w]
    np.testing.assert_allclose(_run(prog, [y], xv)[0], expected)
    # loop placeholders and body results (named in attributes) are kept
    loop = next(op for op in prog.global_block().ops if op.type == "while")
    scope = prog.blocks[loop.attrs["loop_scope"]]
    assert all(name in scope.vars for name in loop.attrs["loop_vars"])


def test_prune_program_keeps_side_effects():
    prog = static.Program()
    with static.program_guard(prog):
        x = static.data("x", [2], "float64")
        d2s.static.nn.cond(x.sum() > 0, lambda: x * 1.0, lambda: x * -1.0)  # unused
        y = x + 1.0
    from d2s.static.side_effects import append_print
    with static.program_guard(prog):
        append_print((x,), sep=" ", end="\n")
    prune_program(prog, [y.name])
    types = [op.type for op in prog.global_block().ops]
    assert "cond" not in types and "print" in types and "add" in types
