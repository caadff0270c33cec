"""A linear-chain CRF Viterbi decoder written the way PaddleNLP's lexical
analysis ports it: a loop over the time-major emissions cut to the longest
length (`enumerate(inputs_t[:lengths.max()])`), a first step that takes the
emissions as they are (`if i == 0 and not with_start_stop_tag: alpha =
logit; continue`), back-pointers appended under `if i >= 1`, length masks,
cached index tensors on `self`, and the back-trace over the reversed
stacked history.

PaddleNLP writes the mask update `(ones - mask) * alpha` with an int64
`ones`: under NumPy 2 rules (the contract's) that is float64, so `alpha`
would be float32 on the first step's path and float64 on the other, which a
tensor `if` refuses with an error naming `alpha` and the line; the decoder
here writes `1 - mask` (a Python number keeps float32), as the error says."""
import itertools

import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from d2s.static.control_flow import ControlFlowError

from harness import BACKENDS, close, t, twins

TAGS = 4


class ViterbiDecoder(nn.Layer):
    def __init__(self, with_start_stop_tag=False):
        super().__init__()
        self.transitions = self.create_parameter([TAGS, TAGS])
        self.with_start_stop_tag = with_start_stop_tag
        self.num_tags = d2s.shape(self.transitions)[0]
        self.stop_idx = -2
        self._initial_alpha = None
        self._batch_index = None
        self.keep_from = 1      # PaddleNLP: an int64 `ones` tensor

    def _initialize_alpha(self, batch_size):
        if self._initial_alpha is None or batch_size > d2s.shape(self._initial_alpha)[0]:
            low = d2s.full([batch_size, self.num_tags - 1], -10000.0, dtype="float32")
            start = d2s.full([batch_size, 1], 0.0, dtype="float32")
            self._initial_alpha = d2s.concat([low, start], axis=1)
        return d2s.slice(self._initial_alpha, axes=[0], starts=[0], ends=[batch_size])

    def _batch_offsets(self, batch_size):
        if self._batch_index is None or batch_size != d2s.shape(self._batch_index)[0]:
            self._batch_index = d2s.arange(end=batch_size, dtype="int64")
        return self._batch_index

    def forward(self, inputs, lengths):
        shape = d2s.shape(inputs)
        batch_size, n_label = shape[0], shape[2]
        steps = inputs.transpose([1, 0, 2])
        trans = self.transitions.unsqueeze(0).expand([batch_size, n_label, n_label])
        history = []
        left = lengths.clone()
        longest = left.max()
        left = left.unsqueeze(-1).expand([batch_size, n_label])
        if self.with_start_stop_tag:
            alpha = self._initialize_alpha(batch_size)
        else:
            alpha = d2s.zeros((batch_size, self.num_tags), dtype="float32")
        zeros, ones = d2s.zeros([1], dtype="int64"), d2s.ones([1], dtype="int64")
        for i, logit in enumerate(steps[:longest]):
            if i == 0 and not self.with_start_stop_tag:
                alpha = logit
                left = left - ones
                continue
            total = alpha.unsqueeze(2) + trans
            best = total.max(1)
            if i >= 1:
                history.append(total.argmax(1))
            nxt = best + logit
            mask = d2s.cast(left > zeros, dtype="float32")
            alpha = mask * nxt + (self.keep_from - mask) * alpha
            if self.with_start_stop_tag:
                mask = d2s.cast(left == ones, dtype="float32")
                alpha += mask * trans[:, self.stop_idx]
            left = left - ones
        scores, last = alpha.max(1), alpha.argmax(1)
        history = d2s.reverse(d2s.stack(history), [0])
        left = left[:, 0]
        path = [last * d2s.cast(left >= zeros, "int64")]
        offsets = self._batch_offsets(batch_size) * n_label
        for back in history:
            left = left + ones
            keep = d2s.cast(left >= zeros, "int64")
            prev = d2s.gather(back.flatten(), offsets + last) * keep
            path.append(prev)
            last = prev + last * (ones - keep)
        return scores, d2s.reverse(d2s.stack(path, 1), [1])


def best_paths(emissions, lengths, trans):
    """Brute force over every tag sequence of each sequence's own length."""
    out = []
    for e, n in zip(emissions, lengths):
        best = max(itertools.product(range(TAGS), repeat=int(n)),
                   key=lambda p: sum(e[k, p[k]] for k in range(len(p)))
                   + sum(trans[p[k - 1], p[k]] for k in range(1, len(p))))
        out.append(list(best))
    return out


RNG = np.random.default_rng(23)
SPEC = [InputSpec([None, None, TAGS]), InputSpec([None], "int64")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("start_stop", [False, True], ids=["plain", "start_stop"])
def test_viterbi_decoder_matches_eager(backend, start_stop):
    eager, model = twins(ViterbiDecoder, start_stop)
    fn = d2s.jit.to_static(model, input_spec=SPEC, backend=backend)
    for shape, lengths in (((3, 5, TAGS), [5, 2, 3]), ((2, 4, TAGS), [3, 4])):
        x, n = t(RNG.normal(size=shape)), t(np.array(lengths))
        (s_static, p_static), (s_eager, p_eager) = fn(x, n), eager(x, n)
        close(s_static.numpy(), s_eager.numpy(), backend, "scores")
        np.testing.assert_array_equal(p_static.numpy(), p_eager.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_viterbi_paths_are_the_best_paths(backend):
    _, model = twins(ViterbiDecoder)
    fn = d2s.jit.to_static(model, input_spec=SPEC, backend=backend)
    x, lengths = RNG.normal(size=(3, 4, TAGS)).astype("float32"), np.array([4, 4, 4])
    _, paths = fn(t(x), t(lengths))
    assert paths.numpy().tolist() == best_paths(x, lengths, model.transitions.numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_int64_ones_that_widens_alpha_is_refused_naming_it(backend):
    _, model = twins(ViterbiDecoder)
    model.keep_from = d2s.ones([1], dtype="int64")
    fn = d2s.jit.to_static(model, input_spec=SPEC, backend=backend)
    with pytest.raises(ControlFlowError, match=r"'alpha' has dtype float\d+ and float\d+.*cast"):
        fn(t(RNG.normal(size=(2, 3, TAGS))), t(np.array([3, 2])))


class LocalOffsetsDecoder(ViterbiDecoder):
    """The decoder with its batch offsets computed per call, not cached."""

    def _batch_offsets(self, batch_size):
        return d2s.arange(end=batch_size, dtype="int64")


def test_saving_the_caching_decoder_names_the_cache_not_eval(tmp_path):
    model = ViterbiDecoder()
    model.eval()
    with pytest.raises(TypeError) as err:
        d2s.jit.save(model, str(tmp_path / "m"), input_spec=SPEC)
    assert "self._batch_index" in str(err.value) and "local variable" in str(err.value)
    assert "call layer.eval()" not in str(err.value)


def test_decoder_without_the_cache_saves_loads_and_decodes(tmp_path):
    """`self.num_tags`, an eager tensor read as a size, is saved as the
    constant it holds (as the parameters are)."""
    model = LocalOffsetsDecoder()
    model.eval()
    d2s.jit.save(model, str(tmp_path / "m"), input_spec=SPEC)
    loaded = d2s.jit.load(str(tmp_path / "m"))
    for shape, lengths in (((3, 5, TAGS), [5, 2, 3]), ((2, 3, TAGS), [3, 1])):
        x, n = t(RNG.normal(size=shape)), t(np.array(lengths))
        (scores, paths), (s_eager, p_eager) = loaded(x, n), model(x, n)
        np.testing.assert_array_equal(scores.numpy(), s_eager.numpy())
        np.testing.assert_array_equal(paths.numpy(), p_eager.numpy())
