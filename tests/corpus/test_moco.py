"""MoCo-style contrastive learning (as in PaddleClas / the MoCo reference):
a query encoder trained by backprop, a key encoder updated as a momentum
average of it (`set_value` on each parameter under `no_grad`), keys that
stop gradients, a queue of past keys kept as a buffer with its write
pointer, InfoNCE logits `[l_pos, l_neg]` against the queue, and the
enqueue of the batch's keys after the loss. The whole training step is
converted at once. The reference code enqueues by slicing the queue at
`ptr = int(self.queue_ptr)`; the second model writes the same FIFO by
`concat`."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s import optimizer
from d2s.static import InputSpec

from harness import BACKENDS, assert_no_variables_left, build, close, state, t
from xla_budget import for_backend

D_IN, DIM, K, B, M, TAU = 5, 4, 8, 4, 0.9, 0.2


def encoder():
    return nn.Sequential(nn.Linear(D_IN, 8), nn.ReLU(), nn.Linear(8, DIM))


class MoCo(nn.Layer):
    def __init__(self):
        super().__init__()
        self.encoder_q = encoder()
        self.encoder_k = encoder()
        for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            pk.set_value(pq)
            pk.stop_gradient = True
        self.register_buffer("queue", F.normalize(d2s.randn([K, DIM]), axis=1))
        self.register_buffer("queue_ptr", d2s.zeros([1], dtype="int64"))

    def momentum_update(self):
        with d2s.no_grad():
            for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                pk.set_value(pk * M + pq * (1.0 - M))

    def enqueue(self, keys):
        ptr = int(self.queue_ptr)
        self.queue[ptr:ptr + B] = keys
        self.queue_ptr[0] = (ptr + B) % K

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), axis=1)
        self.momentum_update()
        with d2s.no_grad():
            k = F.normalize(self.encoder_k(im_k), axis=1)
        l_pos = (q * k).sum(axis=1, keepdim=True)
        l_neg = d2s.matmul(q, self.queue.detach(), transpose_y=True)
        logits = d2s.concat([l_pos, l_neg], axis=1) / TAU
        labels = d2s.zeros([q.shape[0]], dtype="int64")
        loss = F.cross_entropy(logits, labels)
        self.enqueue(k)
        return loss


class ConcatQueueMoCo(MoCo):
    def enqueue(self, keys):
        self.queue = d2s.concat([keys, self.queue[:-B]], axis=0)


RNG = np.random.default_rng(24)
DATA = [(RNG.normal(size=(B, D_IN)), RNG.normal(size=(B, D_IN))) for _ in range(3)]


def train(cls, static, backend):
    model = build(cls)
    opt = optimizer.SGD(learning_rate=0.1, parameters=model.encoder_q.parameters())

    def step(im_q, im_k):
        loss = model(im_q, im_k)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    if static:
        step = d2s.jit.to_static(step, backend=backend,
                                 input_spec=[InputSpec([B, D_IN]), InputSpec([B, D_IN])])
    out = []
    for x, y in for_backend(DATA, backend):
        out.append(step(t(x), t(y)).numpy())
        if static:
            assert_no_variables_left(("model", model))
    return out, state(model)


@pytest.mark.parametrize("backend", BACKENDS)
def test_moco_concat_queue_trains_like_eager(backend):
    e_loss, e_state = train(ConcatQueueMoCo, False, backend)
    s_loss, s_state = train(ConcatQueueMoCo, True, backend)
    for i, (a, b) in enumerate(zip(s_loss, e_loss)):
        close(a, b, backend, f"loss {i}")
    for k, v in e_state.items():
        close(s_state[k], v, backend, k)
    # the key encoder moved by momentum, the queue holds the last keys
    assert not np.allclose(e_state["encoder_k.0.weight"], build(ConcatQueueMoCo)
                           .state_dict()["encoder_k.0.weight"].numpy())


@pytest.mark.parametrize("backend", BACKENDS)
def test_moco_pointer_queue_trains_like_eager(backend):
    # `int(self.queue_ptr)` is a value guard (jit.guards): a program per pointer value
    e_loss, e_state = train(MoCo, False, backend)
    s_loss, s_state = train(MoCo, True, backend)
    for i, (a, b) in enumerate(zip(s_loss, e_loss)):
        close(a, b, backend, f"loss {i}")
    for k, v in e_state.items():
        close(s_state[k], v, backend, k)
