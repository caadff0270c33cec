"""Model-output containers as HuggingFace-style code returns them: a
dataclass (`BaseModelOutput(last_hidden_state=..., attentions=None)`), an
`OrderedDict` subclass whose constructor takes fields, a plain
`OrderedDict`, and a namedtuple holding an optional loss. The converted
function returns the same type holding the run's Tensors (never the trace's
static values inside an opaque object); `jit.save` -> `jit.load` gives them
back as plain dicts and tuples."""
import collections
import dataclasses
from typing import Optional, Tuple

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t


@dataclasses.dataclass
class BaseModelOutput:
    last_hidden_state: Optional[d2s.Tensor] = None
    pooler_output: Optional[d2s.Tensor] = None
    attentions: Optional[Tuple] = None


class MappingOutput(collections.OrderedDict):
    """A mapping built from keyword fields (how model-output classes are made)."""

    def __init__(self, **fields):
        super().__init__(**fields)


Classified = collections.namedtuple("Classified", ["logits", "loss"])


class Encoder(nn.Layer):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.pool = nn.Linear(4, 4)

    def forward(self, x, kind="dataclass", output_attentions=False):
        h = self.proj(x)
        attn = F.softmax(d2s.matmul(h, h, transpose_y=True), axis=-1)
        h = d2s.matmul(attn, h)
        pooled = F.tanh(self.pool(h[:, 0]))
        attentions = (attn,) if output_attentions else None
        if kind == "dataclass":
            return BaseModelOutput(last_hidden_state=h, pooler_output=pooled,
                                   attentions=attentions)
        if kind == "mapping":
            return MappingOutput(last_hidden_state=h, pooler_output=pooled)
        return collections.OrderedDict(last_hidden_state=h, pooler_output=pooled)


def _values(out):
    if dataclasses.is_dataclass(out):
        out = {f.name: getattr(out, f.name) for f in dataclasses.fields(out)}
    return {k: (None if v is None else [a.numpy() for a in v] if isinstance(v, tuple)
                else v.numpy()) for k, v in out.items()}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind,attn", [("dataclass", False), ("dataclass", True),
                                       ("mapping", False), ("ordered", False)])
def test_output_container_comes_back_as_its_type(kind, attn, backend):
    d2s.seed(0)
    model = Encoder()
    static = d2s.jit.to_static(lambda x: model(x, kind=kind, output_attentions=attn),
                               backend=backend)
    x = np.random.RandomState(0).randn(2, 3, 4).astype("float32")
    expected = model(t(x), kind=kind, output_attentions=attn)
    for _ in range(2):
        out = static(t(x))
        assert type(out) is type(expected)
        got, want = _values(out), _values(expected)
        assert set(got) == set(want)
        for k in want:
            if want[k] is None:
                assert got[k] is None, k
            elif isinstance(want[k], list):
                assert len(got[k]) == len(want[k])
                for a, e in zip(got[k], want[k]):
                    close(a, e, backend, k)
            else:
                close(got[k], want[k], backend, k)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclass_output_trains(backend):
    """The loss read from the returned dataclass differentiates into the layer."""
    d2s.seed(0)
    eager = Encoder()
    model = Encoder()
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model.forward, backend=backend)
    x = np.random.RandomState(1).randn(2, 3, 4).astype("float32")
    grads = []
    for m, f in ((eager, eager), (model, static)):
        out = f(t(x))
        (out.pooler_output.sum() + out.last_hidden_state.mean()).backward()
        grads.append({n: p.grad.numpy() for n, p in m.named_parameters()})
    for n, g in grads[0].items():
        close(grads[1][n], g, backend, f"grad of {n}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_namedtuple_with_optional_loss(backend):
    d2s.seed(0)
    lin = nn.Linear(4, 3)

    def classify(x, labels=None):
        logits = lin(x)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits, labels)
        return Classified(logits, loss)

    static = d2s.jit.to_static(classify, backend=backend)
    x = np.random.RandomState(2).randn(5, 4).astype("float32")
    y = np.array([0, 2, 1, 1, 0], "int64")
    for args in ((t(x),), (t(x), t(y))):
        out, expected = static(*args), classify(*args)
        assert type(out) is Classified
        close(out.logits.numpy(), expected.logits.numpy(), backend, "logits")
        if expected.loss is None:
            assert out.loss is None
        else:
            close(out.loss.numpy(), expected.loss.numpy(), backend, "loss")


def test_saved_output_containers_load_as_plain(tmp_path):
    d2s.seed(0)
    model = Encoder()
    model.eval()
    x = np.random.RandomState(3).randn(2, 3, 4).astype("float32")
    expected = model(t(x))
    d2s.jit.save(model, str(tmp_path / "enc"), input_spec=[InputSpec([None, 3, 4], "float32")])
    out = d2s.jit.load(str(tmp_path / "enc"))(t(x))
    assert type(out) is dict and out["attentions"] is None
    np.testing.assert_allclose(out["pooler_output"].numpy(), expected.pooler_output.numpy(),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_output_container_passed_to_a_converted_decoder(backend):
    """An encoder's dataclass output (and an OrderedDict) handed to a converted
    function as an argument: its tensors are the program's inputs, each call
    reads the values it is given."""
    d2s.seed(0)
    lin = nn.Linear(4, 4)

    def decode(x, enc, extra):
        h = lin(x) * enc.last_hidden_state
        if enc.attentions is not None:
            h = h + enc.attentions[0].sum()
        return h.sum(-1) + extra["bias"]

    static = d2s.jit.to_static(decode, backend=backend)
    rng = np.random.RandomState(4)
    for i in range(3):
        x = rng.randn(2, 4).astype("float32")
        enc = BaseModelOutput(last_hidden_state=t(rng.randn(2, 4)), pooler_output=None,
                              attentions=(t(rng.randn(2, 2)),) if i == 2 else None)
        extra = collections.OrderedDict(bias=t(rng.randn(2)))
        close(static(t(x), enc, extra).numpy(), decode(t(x), enc, extra).numpy(), backend,
              f"call {i}")


def test_saved_namedtuple_output_loads_as_a_tuple(tmp_path):
    """A namedtuple output is written as a tuple (the loading process need not
    have the class); before, the file could not be loaded."""
    d2s.seed(0)
    lin = nn.Linear(4, 3)

    class Head(nn.Layer):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            logits = self.lin(x)
            return Classified(logits, F.softmax(logits).sum())

    model = Head()
    model.eval()
    x = t(np.random.RandomState(5).randn(2, 4))
    d2s.jit.save(model, str(tmp_path / "head"), input_spec=[InputSpec([None, 4], "float32")])
    out = d2s.jit.load(str(tmp_path / "head"))(x)
    assert type(out) is tuple and len(out) == 2
    np.testing.assert_allclose(out[0].numpy(), model(x).logits.numpy(), rtol=1e-6, atol=1e-6)
