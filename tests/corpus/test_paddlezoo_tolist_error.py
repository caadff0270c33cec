"""`x.tolist()` of a traced tensor in converted code (a post-processing step
left inside `forward`): the error says what has no value and what to write
instead, as `float()`/`.item()` do, not numpy's "functions need values"."""
import pytest

import d2s
import d2s.nn as nn
from d2s.static import InputSpec

from harness import BACKENDS


class Decode(nn.Layer):
    def forward(self, scores):
        best = scores.argmax(-1)
        return [int(i) for i in best.tolist()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_tolist_of_a_traced_tensor_says_what_to_write(backend):
    layer = Decode()
    assert layer(d2s.to_tensor([[0.1, 0.9], [0.8, 0.2]])) == [1, 0]  # eager: values
    static = d2s.jit.to_static(layer, backend=backend, input_spec=[InputSpec([None, 2])])
    with pytest.raises(TypeError, match=r"\.tolist\(\) of static Variable '.*': its value exists "
                                        r"only when the program runs.*return it from the "
                                        r"converted function and call \.tolist\(\) on the result"):
        static(d2s.to_tensor([[0.1, 0.9], [0.8, 0.2]]))
