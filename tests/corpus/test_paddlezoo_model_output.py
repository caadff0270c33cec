"""PaddleNLP's `ModelOutput` returned by a converted `forward` (`return_dict=
True`): a dataclass that is an OrderedDict of its fields that are set,
read both ways (`out.logits`, `out["logits"]`, `out[0]`). Converted code
returned a plain dict (`out.logits` raised AttributeError); it comes back
as the same class, on numpy and xla, also through a tensor `if` and from a
sublayer. `jit.save` -> `load` gives a plain dict of the same items."""
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Optional, Tuple

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS


class ModelOutput(OrderedDict):
    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                self[f.name] = value

    def __getitem__(self, k):
        return dict(self.items())[k] if isinstance(k, str) else tuple(self.values())[k]


@dataclass
class CausalLMOutput(ModelOutput):
    loss: Optional[d2s.Tensor] = None
    logits: d2s.Tensor = None
    past_key_values: Optional[Tuple] = None


class TinyLM(nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10)

    def forward(self, ids, labels=None):
        h = self.emb(ids)
        logits = self.out(h)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape([-1, 10]), labels.reshape([-1]))
        if logits.mean() > 0:  # a tensor `if` around the output's construction
            out = CausalLMOutput(loss=loss, logits=logits, past_key_values=(h, h * 2))
        else:
            out = CausalLMOutput(loss=loss, logits=-logits, past_key_values=(h, h * 2))
        return out


class Head(nn.Layer):
    def __init__(self):
        super().__init__()
        self.lm = TinyLM()

    def forward(self, ids, labels):
        out = self.lm(ids, labels=labels)
        return OrderedDict(loss=out.loss, first=out[0], logits=out["logits"])


def _ids():
    return d2s.to_tensor(np.array([[1, 2, 3], [4, 5, 0]], "int64"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_output_comes_back_as_its_class(backend):
    d2s.seed(0)
    eager = TinyLM()
    model = TinyLM()
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model, backend=backend,
                               input_spec=[InputSpec([None, None], "int64")])
    expected, got = eager(_ids()), static(_ids())
    assert type(got) is CausalLMOutput and list(got.keys()) == ["logits", "past_key_values"]
    assert got.loss is None and isinstance(got.past_key_values, tuple)
    np.testing.assert_allclose(got.logits.numpy(), expected.logits.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got[1][1].numpy(), expected[1][1].numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ordered_dict_of_a_sublayers_output_keeps_its_order(backend):
    d2s.seed(0)
    eager = Head()
    model = Head()
    model.set_state_dict(eager.state_dict())
    static = d2s.jit.to_static(model, backend=backend)
    labels = d2s.to_tensor(np.array([[2, 3, -100], [5, -100, -100]], "int64"))
    expected, got = eager(_ids(), labels), static(_ids(), labels)
    assert type(got) is OrderedDict and list(got) == ["loss", "first", "logits"]
    for k in got:
        np.testing.assert_allclose(got[k].numpy(), expected[k].numpy(), rtol=1e-6)


def test_saved_program_of_a_model_output_loads_as_a_dict(tmp_path):
    d2s.seed(0)
    model = TinyLM()
    model.eval()
    d2s.jit.save(model, str(tmp_path / "lm"), input_spec=[InputSpec([None, None], "int64")])
    loaded = d2s.jit.load(str(tmp_path / "lm"))(_ids())
    assert type(loaded) is dict and list(loaded) == ["logits", "past_key_values"]
    np.testing.assert_allclose(loaded["logits"].numpy(), model(_ids()).logits.numpy(),
                               rtol=1e-6)
