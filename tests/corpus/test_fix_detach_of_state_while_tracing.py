"""`self.buffer.detach()` / `self.weight.detach()` inside converted code
reads the parameter's or buffer's value of every run (found by the MoCo
corpus model's `matmul(q, self.queue.detach(), transpose_y=True)`). It used
to copy the value the tensor held while tracing into the program as a
constant: a silent wrong answer on every later call once the buffer had
been written back or the weight trained."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
from d2s import optimizer

from harness import BACKENDS, close, t, twins


class Queue(nn.Layer):
    def __init__(self):
        super().__init__()
        self.register_buffer("queue", d2s.ones([2, 3]))
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        neg = d2s.matmul(x, self.queue.detach(), transpose_y=True)          # a buffer
        target = d2s.matmul(x, self.proj.weight.detach())                 # a parameter
        loss = (neg.sum() - (self.proj(x) - target).pow(2).mean())
        self.queue = d2s.concat([x[:1], self.queue[:-1]], axis=0)
        return loss


@pytest.mark.parametrize("backend", BACKENDS)
def test_detach_of_a_buffer_or_parameter_reads_each_runs_value(backend):
    eager, model = twins(Queue)
    fn = d2s.jit.to_static(model.forward, backend=backend)
    opts = [optimizer.SGD(0.1, parameters=m.parameters()) for m in (eager, model)]
    rng = np.random.default_rng(0)
    for step in range(3):
        x = t(rng.normal(size=(2, 3)))
        losses = []
        for call, opt in ((eager, opts[0]), (fn, opts[1])):
            loss = call(x)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(loss.numpy())
        close(losses[1], losses[0], backend, f"loss {step}")
        close(model.queue.numpy(), eager.queue.numpy(), backend, f"queue {step}")
        close(model.proj.weight.numpy(), eager.proj.weight.numpy(), backend, f"weight {step}")
    assert len(fn.program_cache) == 1
