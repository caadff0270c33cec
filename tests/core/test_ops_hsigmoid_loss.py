"""F.hsigmoid_loss / nn.HSigmoidLoss against a loop-based numpy reference of
Paddle's kernel (default tree codes `label + num_classes`; a custom tree from
path_table/path_code ended by -1): values, finite-difference gradients of
input, weight and bias, numpy+xla static, unknown batch dim and ONNX Runtime
(the shared ops_check)."""
import math

import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from ops_check import check

RNG = np.random.default_rng(23)


def _ref_default(x, w, label, b, num_classes):
    out = np.zeros((len(x), 1))
    for i in range(len(x)):
        c = int(label[i]) + num_classes
        length = int(math.floor(math.log2(c)))
        for j in range(length):
            idx = (c >> (j + 1)) - 1
            p = np.clip(w[idx] @ x[i] + b[idx], -40, 40)
            out[i, 0] += np.log1p(np.exp(p)) - ((c >> j) & 1) * p
    return out


def _ref_custom(x, w, table, code, b):
    out = np.zeros((len(x), 1))
    for i in range(len(x)):
        for j in range(table.shape[1]):
            if table[i, j] < 0:
                break
            idx = table[i, j]
            p = np.clip(w[idx] @ x[i] + b[idx], -40, 40)
            out[i, 0] += np.log1p(np.exp(p)) - code[i, j] * p
    return out


X = RNG.uniform(-1, 1, (5, 4))
LABEL = np.array([0, 3, 6, 7, 2])
W = RNG.uniform(-1, 1, (7, 4))
B = RNG.uniform(-1, 1, 7)
TABLE = np.array([[0, 2, -1, -1], [0, 1, 3, -1], [0, 1, 4, -1], [0, 2, -1, 5], [1, -1, 0, 0]])
CODE = np.array([[0, 0, -1, -1], [1, 1, 1, -1], [1, 0, 0, -1], [0, 1, -1, 1], [1, 0, 0, 0]])


def test_default_tree():
    check(lambda x, lab, w, b: F.hsigmoid_loss(x, lab, 8, w, b), [X, LABEL, W, B],
          lambda x, lab, w, b: _ref_default(x, w, lab, b, 8), unknown="first")


def test_custom_tree():
    check(lambda x, t, c, w, b: F.hsigmoid_loss(x, None, 6, w, b[:6], t, c),
          [X, TABLE, CODE, W[:6], B], lambda x, t, c, w, b: _ref_custom(x, w, t, c, b[:6]),
          unknown="first")


def test_layer_and_errors():
    layer = nn.HSigmoidLoss(4, 8, weight_attr=nn.initializer.Assign(W.astype("float32")),
                            bias_attr=nn.initializer.Assign(B.reshape(7, 1).astype("float32")))
    got = layer(d2s.to_tensor(X.astype("float32")), d2s.to_tensor(LABEL.reshape(-1, 1)))
    np.testing.assert_allclose(got.numpy(), _ref_default(X, W, LABEL, B, 8), rtol=1e-5)
    with pytest.raises(ValueError, match="path_table and path_code"):
        F.hsigmoid_loss(d2s.to_tensor(X), d2s.to_tensor(LABEL), 8, d2s.to_tensor(W),
                        path_table=d2s.to_tensor(TABLE))
    with pytest.raises(ValueError, match="is_custom"):
        nn.HSigmoidLoss(4, 6, is_custom=True)(d2s.to_tensor(X), d2s.to_tensor(LABEL))
