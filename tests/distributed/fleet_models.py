"""A Llama-style feed-forward language model written with Paddle's fleet
names (as PaddleNLP writes its tensor-parallel layers), shared by the
fleet tests."""
import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.distributed import fleet

mp = fleet.meta_parallel
VOCAB, DIM, HIDDEN = 16, 8, 24


class TinyParallelLM(nn.Layer):
    """Vocabulary-parallel embedding, a SwiGLU MLP (gate/up column-parallel,
    down row-parallel), a column-parallel head and a parallel loss."""

    def __init__(self):
        super().__init__()
        self.embed = mp.VocabParallelEmbedding(VOCAB, DIM)
        self.gate = mp.ColumnParallelLinear(DIM, HIDDEN, has_bias=False, gather_output=False)
        self.up = mp.ColumnParallelLinear(DIM, HIDDEN, has_bias=False, gather_output=False)
        self.down = mp.RowParallelLinear(HIDDEN, DIM, has_bias=True, input_is_parallel=True)
        self.head = mp.ColumnParallelLinear(DIM, VOCAB, has_bias=False, gather_output=False)
        self.loss = mp.ParallelCrossEntropy()

    def forward(self, ids, labels):
        h = self.embed(ids)
        h = h + self.down(F.silu(self.gate(h)) * self.up(h))
        return self.loss(self.head(h), labels).mean()


def make_lm(seed=0):
    d2s.seed(seed)
    return TinyParallelLM()
