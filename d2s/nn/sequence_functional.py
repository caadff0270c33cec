"""`d2s.nn.functional.temporal_shift` (the Temporal Shift Module's shift) and
`gather_tree` (a beam search's backtrace), as in Paddle."""
from __future__ import annotations

from ..core.dispatch import bind
from ..core.ops import concat, reshape, zeros_like
from ..core.ops._base import lift
from ..core.registry import OPS

__all__ = ["temporal_shift", "gather_tree"]


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None, data_format="NCHW"):
    """`x` is [N*T, C, H, W] (or [N*T, H, W, C]) with T = `seg_num`. Per clip,
    the first `int(C * shift_ratio)` channels take the previous frame's
    values, the next as many the following frame's (zeros past either end),
    the rest stay: a composition of slices, so it has every backend's rules
    and its gradient."""
    x = lift(x)
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"temporal_shift: data_format must be 'NCHW' or 'NHWC', got "
                         f"{data_format!r}")
    if len(x.shape) != 4:
        raise ValueError(f"temporal_shift: expects a 4-D input [N*T, C, H, W], got shape "
                         f"{list(x.shape)}")
    if isinstance(seg_num, bool) or not isinstance(seg_num, int) or seg_num <= 0:
        raise TypeError(f"temporal_shift: seg_num must be a positive int, got {seg_num!r}")
    if not 0.0 <= shift_ratio <= 0.5:
        raise ValueError(f"temporal_shift: shift_ratio must lie in [0, 0.5], got {shift_ratio}")
    nt = x.shape[0]
    if nt is not None and nt % seg_num:
        raise ValueError(f"temporal_shift: the first dim {nt} is not a multiple of seg_num "
                         f"{seg_num}")
    last = data_format == "NHWC"
    c = x.shape[3 if last else 1]
    if c is None:
        raise ValueError("temporal_shift: the channel dim must be known")
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    rest_shape = list(x.shape[1:])
    v = reshape(x, [-1, seg_num] + rest_shape)
    axis = 4 if last else 2

    def channels(a, b):
        index = (slice(None),) * axis + (slice(a, b),)
        return v[index]

    def shifted(part, later):
        if seg_num == 1:
            return zeros_like(part)
        zero = zeros_like(part[:, :1])
        return concat([part[:, 1:], zero], axis=1) if later else concat([zero, part[:, :-1]],
                                                                        axis=1)
    pieces = []
    if c1 > 0:
        pieces.append(shifted(channels(0, c1), later=False))
    if c2 > c1:
        pieces.append(shifted(channels(c1, c2), later=True))
    if c > c2:
        pieces.append(channels(c2, c))
    out = pieces[0] if len(pieces) == 1 else concat(pieces, axis=axis)
    return reshape(out, [-1] + rest_shape)


def gather_tree(ids, parents):
    """The full sequences of a beam search: `ids` and `parents` are [max_time,
    batch, beam] integer tensors (the token and the parent beam chosen at each
    step); the result follows each final beam's parents back to step 0."""
    ids, parents = lift(ids), lift(parents)
    OPS["gather_tree"].infer(ids, parents)  # eager calls check their arguments too
    return bind("gather_tree", ids, parents)
