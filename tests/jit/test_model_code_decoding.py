"""Decoding loops as people write them: greedy decoding over a Python
`range(max_len)` that breaks on an end token, a tensor `while` with a step
counter, tokens appended to a Python list and stacked or concatenated.

Found by this file (each failed before its fix):
* a Python `range` loop with a `break` on a tensor that appends to a list
  raised "'outs' holds a value computed inside the other branch of an `if`":
  the rest of the loop is unrolled into `cond`s, and an append inside one
  could not leave it. The list is now carried through them as a tensor
  array (the loop target stays a Python int).
* `d2s.concat(outs)` and `d2s.stack(outs, axis=1)` of a list appended in a
  tensor loop raised "cannot iterate over static Variable": only
  `stack(outs)` (axis 0) knew the list was one stacked Variable.
* `outs.append(x)` under a tensor `if` (no loop) appended `x` for every
  input (a silent wrong answer): the branch changed the list in place, which
  the other branch and the code after it saw too. An append in a branch now
  gives a tensor array and leaves the list as it was; the same made a
  conditional append or a `continue` before an append in an unrolled Python
  loop work (they raised "'outs' holds a value computed inside the other
  branch").
* `outs.extend([a, b])` and `outs = outs + [a]` in a tensor loop raised (a
  value of the loop body used outside it; `PendingArray + list`): only
  `append` and `+=` were carried as tensor array appends.
"""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.jit import to_static

from model_code_helpers import assert_same, assert_same_run, program_ops, tensor

RNG = np.random.default_rng(7)


class GreedyDecoder(nn.Layer):
    """Embedding -> tanh cell -> logits; the next token is the argmax."""

    def __init__(self, vocab=7, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.cell = nn.Linear(2 * dim, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, h, eos, max_len: int = 6):
        tok = d2s.zeros([1], dtype="int64")
        outs = []
        steps = 0
        for _ in range(max_len):
            e = self.embed(tok)
            h = d2s.tanh(self.cell(d2s.concat([e, h], axis=-1)))
            tok = self.head(h).argmax(axis=-1)
            outs.append(tok)
            steps += 1
            if tok[0] == eos:
                break
        return d2s.stack(outs), steps, h


def _decoder_and_tokens():
    d2s.seed(3)
    layer = GreedyDecoder()
    layer.eval()
    h0 = RNG.standard_normal((1, 6)).astype(np.float32)
    never = 99
    tokens, _, _ = layer(tensor(h0), never)
    return layer, h0, [int(t) for t in tokens.numpy().ravel()]


def test_greedy_decode_over_a_python_range_breaks_on_the_end_token():
    layer, h0, tokens = _decoder_and_tokens()
    static = to_static(layer.forward)
    # the end token is each step's token in turn, then one never produced
    for eos in [*sorted(set(tokens)), 99]:
        out = assert_same_run(static, layer.forward, lambda: (tensor(h0, grad=True), tensor(eos)),
                              grad_of=layer.parameters())
        n = tokens.index(eos) + 1 if eos in tokens else len(tokens)
        assert out[0].shape == (n, 1)
    ops = program_ops(static, tensor(h0, grad=True), tensor(99))
    assert {"cond", "array_append"} <= ops
    assert len(static.program_cache) == 1, "one program serves every end token"


def test_greedy_decode_on_python_values_keeps_python_semantics():
    def decode(start, stop_at, max_len: int = 8):
        outs, tok = [], start
        for _ in range(max_len):
            tok = (tok * 3 + 1) % 11
            outs.append(tok)
            if tok == stop_at:
                break
        return outs

    static = to_static(decode)
    for stop_at in (4, 10, 99):
        assert static(2, stop_at) == decode(2, stop_at)


def _two_break_decoder(x, limit, max_len: int = 5):
    """A tensor break after a Python one (the list is carried only once the
    break flag is a tensor) and a loop target read in the body."""
    outs = []
    for i in range(max_len):
        x = x * 1.5 + i
        outs.append(x)
        if i == 3:
            break
        if x.sum() > limit:
            break
    return d2s.concat(outs), len(outs)


@pytest.mark.parametrize("limit", [-100.0, 3.0, 12.0, 1e6])
def test_python_range_loop_with_tensor_break_carries_its_list(limit):
    x0 = np.array([0.5, 1.0], np.float32)
    static = to_static(_two_break_decoder)
    assert_same_run(static, _two_break_decoder, lambda: (tensor(x0, grad=True), tensor(limit)))
    assert {"cond", "array_append"} <= program_ops(static, tensor(x0), tensor(limit))


def _decode_while(h, w, eos):
    out = []
    n = d2s.zeros([], dtype="int64")
    while n < 10:
        h = d2s.tanh(h @ w)
        out.append(h.argmax(axis=-1))
        n += 1
        if out[-1][0] == eos:
            break
    return d2s.concat(out), n


def test_tokens_of_a_tensor_while_are_concatenated():
    h0 = RNG.standard_normal((1, 4)).astype(np.float32)
    w = RNG.standard_normal((4, 4)).astype(np.float32)
    static = to_static(_decode_while)
    for eos in range(4):
        assert_same_run(static, _decode_while, lambda: (tensor(h0), tensor(w), tensor(eos)))
    assert "while" in program_ops(static, tensor(h0), tensor(w), tensor(0))


def _collect(x, n, axis):
    outs = []
    for i in range(n):
        outs.append(x * (i + 1))
    return d2s.stack(outs, axis=axis), d2s.concat(outs, axis=axis), outs[-1]


@pytest.mark.parametrize("axis", [0, 1, -1, 2, -3])
def test_stack_and_concat_of_a_list_appended_in_a_tensor_loop(axis):
    x0 = RNG.standard_normal((2, 3)).astype(np.float32)
    static = to_static(_collect)
    if axis in (2, -3):  # valid for stack only: both modes raise
        with pytest.raises(ValueError):
            _collect(tensor(x0), tensor(3), axis)
        with pytest.raises(ValueError):
            static(tensor(x0), tensor(3), axis)
        return
    for n in (1, 3):
        assert_same_run(static, _collect, lambda: (tensor(x0, grad=True), tensor(n), axis))
    assert "while" in program_ops(static, tensor(x0), tensor(3), axis)


def _extend_and_concat(x, n):
    outs = [x]
    pairs = []
    for i in range(n):
        outs.extend([x * i, x + i])
        pairs = pairs + [x - i]
    return d2s.stack(outs), d2s.stack(pairs)


def test_extend_and_list_concat_in_a_tensor_loop():
    x0 = RNG.standard_normal(3).astype(np.float32)
    static = to_static(_extend_and_concat)
    for n in (1, 3):
        assert_same_run(static, _extend_and_concat, lambda: (tensor(x0, grad=True), tensor(n)))
    assert "while" in program_ops(static, tensor(x0), tensor(2))


def _grow(items, n):
    alias = items
    for i in range(n):
        items.extend((i, -i))
        alias = alias + [i]      # a new list: `items` does not see these
    return items, alias


def _grow_deque(items, n):
    for i in range(n):
        items.extend([i])
    return items


def test_extend_and_list_concat_keep_python_semantics():
    from collections import deque
    assert to_static(_grow)([0], 3) == _grow([0], 3) == ([0, 0, 0, 1, -1, 2, -2], [0, 0, 0, 0, 1, 2])
    assert to_static(_grow_deque)(deque([1]), 2) == _grow_deque(deque([1]), 2)


def _insert_in_a_tensor_loop(x, n):
    outs = [x]
    for i in range(n):
        outs.insert(0, x * i)
    return d2s.stack(outs)


def test_a_list_given_items_in_front_in_a_tensor_loop_is_a_tensor_array():
    # insert(0, v) puts v before the rows (tests/corpus/test_research_returns_insert_front.py)
    for n in (2, 0, 3):
        got = to_static(_insert_in_a_tensor_loop)(tensor([1.0, 2.0]), tensor(n))
        np.testing.assert_array_equal(
            got.numpy(), _insert_in_a_tensor_loop(tensor([1.0, 2.0]), tensor(n)).numpy())


def test_gradient_through_an_appended_list_on_xla_is_numpys():
    """Found here: on the xla backend the backward of any loop that appended to
    a list crashed with JAX's "carry input and carry output must have equal
    types" (the array's cotangent loses a row per trip); the list's cotangent
    is now carried as a tensor array, and the gradient lowers (no fallback)."""
    pytest.importorskip("jax")
    import warnings
    from d2s.static.backend import BackendFallbackWarning
    x0 = RNG.standard_normal((2, 3)).astype(np.float32)
    on_xla = to_static(_stacked, backend="xla")
    on_numpy = to_static(_stacked, backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error", BackendFallbackWarning)
        assert_same_run(on_xla, on_numpy, lambda: (tensor(x0, grad=True), tensor(3)))


def _stacked(x, n):
    outs = [x]
    for i in range(n):
        outs.append(x * (i + 1))
    return d2s.stack(outs)


def _append_under_tensor_if(x, bias):
    outs = [x * 0]
    if x.sum() > 0:
        outs.append(x)          # a value from before the `if`
        outs.append(bias)       # an eager parameter
    return d2s.stack(outs).sum(axis=0), len(outs)


def _append_on_both_paths(x):
    outs = []
    if x.sum() > 0:
        outs.append(x)
    else:
        outs += [x * 2, x * 3]
    return d2s.concat(outs)


def _kept_positive_steps(x):
    outs = [x[0] * 0]
    for i in range(4):          # unrolled: a `cond` per step
        if x[i] < 0:
            continue
        outs.append(x[i] * i)
    return d2s.stack(outs)


def _append_if_large(x):
    outs = [x[0] * 0]
    for i in range(4):
        if x[i] > 0.5:
            outs.extend([x[i], -x[i]])
    return d2s.stack(outs), len(outs)


@pytest.mark.parametrize("fn, extra", [(_append_under_tensor_if, (np.float32([0.5, 0.5]),)),
                                       (_append_on_both_paths, ()),
                                       (_kept_positive_steps, ()), (_append_if_large, ())])
@pytest.mark.parametrize("values", [[1.0, -2.0, 3.0, 0.25], [-1.0, 2.0, -3.0, -0.25],
                                    [-1.0, -1.0, -1.0, -1.0]])
def test_appends_under_a_tensor_if_follow_the_condition(fn, extra, values):
    x0 = np.array(values[:2] if extra else values, np.float32)
    static = to_static(fn)
    assert_same_run(static, fn, lambda: (tensor(x0, grad=True),)
                    + tuple(tensor(e, grad=True) for e in extra))
    assert "cond" in program_ops(static, tensor(x0), *(tensor(e) for e in extra))


def test_appends_under_a_python_if_keep_python_semantics():
    def collect(flags):
        outs = []
        for f in flags:
            if f:
                outs.append(f)
        if len(outs) > 1:
            outs.append("many")
        return outs

    for flags in ([1, 0, 2], [0, 0], [3]):
        assert to_static(collect)(flags) == collect(flags)


def _returns_a_list_from_each_branch(x, log):
    log.append(x.shape[0])       # a Python list both branches see, never appended
    if x.sum() > 0:
        return [x, x * 2], log
    return [x * 3, x], log


def test_a_list_no_branch_appends_to_stays_a_python_list():
    x0 = np.array([1.0, -0.5], np.float32)
    static = to_static(_returns_a_list_from_each_branch)
    for sign in (1.0, -1.0):
        assert_same_run(static, _returns_a_list_from_each_branch,
                        lambda: (tensor(x0 * sign, grad=True), []))
    out, log = static(tensor(x0), [7])
    assert isinstance(out, list) and log == [7, 2]


def _schedule_decoder(x, limit):
    """The loop target indexes a Python list after the break became a tensor."""
    outs = []
    scales = [1.0, 2.0, 3.0, 4.0]
    for i in range(4):
        x = x * scales[i]
        outs.append(x)
        if x.sum() > limit:
            break
    else:
        outs.append(x * 0)
    return d2s.stack(outs)


@pytest.mark.parametrize("limit", [0.0, 5.0, 1000.0])
def test_the_loop_target_stays_a_python_int_after_a_tensor_break(limit):
    x0 = np.array([0.5, 1.0, -0.3], np.float32)
    static = to_static(_schedule_decoder)
    assert_same_run(static, _schedule_decoder, lambda: (tensor(x0, grad=True), tensor(limit)))
