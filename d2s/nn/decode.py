"""Paddle's `nn.BeamSearchDecoder` and `nn.dynamic_decode`: beam search
over a recurrent cell, step by step (Paddle's decoder protocol:
`initialize`, `step`, `finalize`), written with d2s ops (log_softmax, topk,
take_along_axis, gather_tree), so each step is differentiable and runs in
converted code too. `dynamic_decode` loops until every beam has finished
(or `max_step_num`): the number of steps is decided by the values, so in
converted code the loop runs while tracing and the program is specialized
to that count.

Beam semantics are Paddle's: only beam 0 is alive at the start; a finished
beam can only emit `end_token` at no cost; the scores are the summed log
probabilities (no length penalty); the ids are traced back by
`gather_tree`."""
from __future__ import annotations

import collections

import numpy as np

from ..core.ops import (all as _all, cast, full, logical_not, logical_or, reshape, stack,
                        take_along_axis, tile, topk, transpose, unsqueeze, where)
from ..core.dispatch import eager_now
from ..core.ops._base import lift
from ..core.ops.nn_ops import log_softmax
from .sequence_functional import gather_tree

__all__ = ["BeamSearchDecoder", "dynamic_decode"]


def _map(fn, nest):
    if isinstance(nest, (list, tuple)) and not hasattr(nest, "_fields"):
        return type(nest)(_map(fn, x) for x in nest)
    if hasattr(nest, "_fields"):  # namedtuple
        return type(nest)(*[_map(fn, x) for x in nest])
    if isinstance(nest, dict):
        return {k: _map(fn, v) for k, v in nest.items()}
    return fn(nest)


class BeamSearchDecoder:
    """Beam search with `cell` (called as `cell(inputs, states, **kwargs)`
    on `batch * beam_size` rows); `embedding_fn` maps token ids to the next
    inputs and `output_fn` the cell's outputs to vocabulary logits."""

    OutputWrapper = collections.namedtuple("OutputWrapper",
                                           ("scores", "predicted_ids", "parent_ids"))
    StateWrapper = collections.namedtuple("StateWrapper",
                                          ("cell_states", "log_probs", "finished", "lengths"))
    tracks_own_finished = True

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None,
                 output_fn=None):
        if int(beam_size) < 1:
            raise ValueError(f"BeamSearchDecoder: beam_size must be positive, got {beam_size}")
        self.cell, self.embedding_fn, self.output_fn = cell, embedding_fn, output_fn
        self.start_token, self.end_token = int(start_token), int(end_token)
        self.beam_size = int(beam_size)

    # ---- [batch, ...] <-> [batch, beam, ...] <-> [batch * beam, ...] -------------------------
    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """`x` [batch, ...] repeated per beam: [batch * beam_size, ...], the
        beams of a sample adjacent (for attention memories)."""
        x = lift(x)
        rest = list(x.shape[1:])
        tiled = tile(unsqueeze(x, 1), [1, int(beam_size)] + [1] * len(rest))
        return reshape(tiled, [-1] + rest)

    def _expand(self, x):
        x = lift(x)
        return tile(unsqueeze(x, 1), [1, self.beam_size] + [1] * (len(x.shape) - 1))

    def _merge(self, x):
        return reshape(x, [-1] + list(x.shape[2:]))

    def _split(self, x):
        return reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _gather_beams(self, x, beam_indices):
        """x [batch, beam, ...] rows picked per sample by beam_indices [batch, beam]."""
        idx = reshape(beam_indices, list(beam_indices.shape) + [1] * (len(x.shape) - 2))
        return take_along_axis(x, idx, 1)

    # ---- Paddle's decoder protocol ------------------------------------------------------------
    def initialize(self, initial_cell_states):
        """(initial inputs, initial StateWrapper, finished) for cell states of
        shape [batch, ...] (a nest)."""
        first = initial_cell_states
        while isinstance(first, (list, tuple)):
            first = first[0]
        batch = lift(first).shape[0]
        if batch is None:
            raise ValueError("BeamSearchDecoder: the batch size of the initial states must be "
                             "known")
        cell_states = _map(self._expand, initial_cell_states)
        dtype = lift(first).dtype
        alive = np.full((batch, self.beam_size), -np.inf, dtype)
        alive[:, 0] = 0.0
        log_probs = lift(alive)
        finished = full([batch, self.beam_size], False, "bool")
        lengths = full([batch, self.beam_size], 0, "int64")
        ids = full([batch, self.beam_size], self.start_token, "int64")
        inputs = self.embedding_fn(ids) if self.embedding_fn is not None else ids
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        vocab = logits.shape[-1]
        step_log_probs = log_softmax(logits, axis=-1)          # [batch, beam, vocab]
        # a finished beam: only end_token, at no cost
        only_end = np.full((vocab,), -np.inf, np.dtype(step_log_probs.dtype))
        only_end[self.end_token] = 0.0
        step_log_probs = where(unsqueeze(beam_state.finished, -1), lift(only_end),
                               step_log_probs)
        log_probs = step_log_probs + unsqueeze(beam_state.log_probs, -1)
        scores = reshape(log_probs, [-1, self.beam_size * vocab])
        top_scores, top_indices = topk(scores, self.beam_size, axis=-1)
        beam_indices = top_indices // vocab
        token_indices = top_indices % vocab
        next_cell_states = _map(lambda s: self._gather_beams(s, beam_indices), next_cell_states)
        finished = take_along_axis(beam_state.finished, beam_indices, 1)
        lengths = take_along_axis(beam_state.lengths, beam_indices, 1) + cast(
            logical_not(finished), "int64")
        finished = logical_or(finished, token_indices == self.end_token)
        out = self.OutputWrapper(top_scores, token_indices, beam_indices)
        return out, self.StateWrapper(next_cell_states, top_scores, finished, lengths)

    def step(self, time, inputs, states, **kwargs):
        """One step for every beam: (OutputWrapper, StateWrapper, next inputs,
        finished)."""
        merged_inputs = _map(self._merge, inputs)
        merged_states = _map(self._merge, states.cell_states)
        cell_outputs, next_cell_states = self.cell(merged_inputs, merged_states, **kwargs)
        cell_outputs = _map(self._split, cell_outputs)
        next_cell_states = _map(self._split, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        outputs, next_states = self._beam_search_step(time, cell_outputs, next_cell_states,
                                                      states)
        ids = outputs.predicted_ids
        next_inputs = self.embedding_fn(ids) if self.embedding_fn is not None else ids
        return outputs, next_states, next_inputs, next_states.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        """The full id sequences ([time, batch, beam], time-major) traced back
        through the parents by `gather_tree`."""
        return gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False,
                   impute_finished=False, is_test=False, return_length=False, **kwargs):
    """Run `decoder` from `decoder.initialize(inits)` until every sequence
    has finished, or after step `max_step_num` (steps 0..max_step_num);
    returns (outputs, final states) and, with `return_length`, the lengths.
    Outputs are batch-major ([batch, time, ...]) unless `output_time_major`."""
    inputs, states, finished = decoder.initialize(inits)
    own = getattr(decoder, "tracks_own_finished", False)
    lengths = cast(finished, "int64") * 0
    if not eager_now() and isinstance(decoder, BeamSearchDecoder):
        # a program is being built: the loop becomes a `while` op (the step count
        # is decided by the values at run time)
        ids, parents, scores, states, lengths = _beam_loop_in_program(
            decoder, inputs, states, finished, -1 if max_step_num is None else
            int(max_step_num), kwargs)
        stacked = decoder.OutputWrapper(stack(scores, 0), stack(ids, 0), stack(parents, 0))
        return _finish(decoder, stacked, states, lengths, output_time_major, return_length)
    if not eager_now():
        raise NotImplementedError(
            f"dynamic_decode in converted code: only BeamSearchDecoder is supported there "
            f"(got {type(decoder).__name__}); call it eagerly, or write the loop in the "
            f"converted function")
    outputs = []
    step = 0
    while True:
        out, next_states, next_inputs, next_finished = decoder.step(step, inputs, states,
                                                                    **kwargs)
        if own:
            lengths = getattr(next_states, "lengths", lengths)
        else:
            next_finished = logical_or(next_finished, finished)
            lengths = lengths + cast(logical_not(finished), "int64")
            if impute_finished:
                def keep(new, old, done=finished):
                    mask = reshape(done, list(done.shape) + [1] * (len(new.shape) - 2))
                    return where(mask, old, new)
                next_states = _zip_map(keep, next_states, states)
        outputs.append(out)
        inputs, states, finished = next_inputs, next_states, next_finished
        step += 1
        if bool(_all(finished)) or (max_step_num is not None and step > int(max_step_num)):
            break
    return _finish(decoder, _zip_stack(outputs), states, lengths, output_time_major,
                   return_length)


def _beam_loop_in_program(decoder, inputs, states, finished, max_step_num, kwargs):
    """dynamic_decode's loop for a BeamSearchDecoder, written for conversion
    (one list per output field: they become tensor arrays of the `while`)."""
    scores, ids, parents = [], [], []
    step = 0
    going = True
    while going:
        out, states, inputs, finished = decoder.step(step, inputs, states, **kwargs)
        scores.append(out.scores)
        ids.append(out.predicted_ids)
        parents.append(out.parent_ids)
        step += 1
        going = logical_not(_all(finished))
        if max_step_num >= 0 and step > max_step_num:
            going = False
    return ids, parents, scores, states, states.lengths


# converted when converted code calls them (as user code is): the loop over
# steps becomes a `while` op whose trip count the values decide
_beam_loop_in_program._d2s_convert_as_user_code = True
dynamic_decode._d2s_convert_as_user_code = True


def _finish(decoder, stacked, states, lengths, output_time_major, return_length):
    final_outputs, final_states = stacked, states
    if hasattr(decoder, "finalize"):
        final_outputs, final_states = decoder.finalize(stacked, states, lengths)
    if not output_time_major:
        final_outputs = _map(lambda x: transpose(x, [1, 0] + list(range(2, len(x.shape)))),
                             final_outputs)
    return (final_outputs, final_states, lengths) if return_length else (
        final_outputs, final_states)


def _zip_map(fn, a, b):
    if hasattr(a, "_fields"):
        return type(a)(*[_zip_map(fn, x, y) for x, y in zip(a, b)])
    if isinstance(a, (list, tuple)):
        return type(a)(_zip_map(fn, x, y) for x, y in zip(a, b))
    return fn(a, b)


def _zip_stack(items):
    first = items[0]
    if hasattr(first, "_fields"):
        return type(first)(*[_zip_stack([getattr(i, f) for i in items]) for f in first._fields])
    if isinstance(first, (list, tuple)):
        return type(first)(_zip_stack([i[k] for i in items]) for k in range(len(first)))
    return stack(items, axis=0)

