"""multinomial without replacement on weights with zeros (a top-k or top-p
filtered distribution): no numpy divide-by-zero warning, a zero-weight
category is never drawn, and the converted draw equals the eager one for
the same seed."""
import warnings

import numpy as np

import d2s


def draw(p):
    return d2s.multinomial(p, 2)


def test_zero_weights_warn_nothing_and_are_never_drawn():
    p = d2s.to_tensor(np.array([[0.0, 0.5, 0.0, 0.3, 0.2], [0.25, 0.0, 0.75, 0.0, 0.0]],
                               np.float32))
    static = d2s.jit.to_static(draw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for s in range(20):
            d2s.seed(s)
            eager = d2s.multinomial(p, 2).numpy()
            d2s.seed(s)
            assert np.array_equal(static(p).numpy(), eager)
            for row, picks in zip(p.numpy(), eager):
                assert (row[picks] > 0).all() and picks[0] != picks[1]
