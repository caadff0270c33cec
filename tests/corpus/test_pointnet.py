"""PointNet classification (as ported from the PyTorch reference and
PaddlePaddle's 3-D examples): an input T-Net regressing a 3x3 transform
(identity added with `eye`) applied by `bmm`, shared per-point MLPs as
`Conv1D` with kernel 1 and BatchNorm1D, symmetric `max` pooling over the
points, and the feature-transform orthogonality regulariser
`||I - A A^T||`. Variable batch and number of points."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.static import InputSpec

from harness import BACKENDS, close, t, train_and_compare
from xla_budget import for_backend


class TNet(nn.Layer):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.conv1 = nn.Conv1D(k, 8, 1, bias_attr=False)     # BN follows
        self.bn1 = nn.BatchNorm1D(8)
        self.conv2 = nn.Conv1D(8, 16, 1, bias_attr=False)
        self.fc = nn.Linear(16, k * k, weight_attr=d2s.ParamAttr(
            initializer=nn.initializer.Constant(0.0)))

    def forward(self, x):                                    # [B, k, N]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = d2s.max(x, axis=2)                               # [B, 16]
        iden = d2s.eye(self.k).reshape([1, self.k * self.k])
        return (self.fc(x) + iden).reshape([-1, self.k, self.k])


class PointNet(nn.Layer):
    def __init__(self, classes=3):
        super().__init__()
        self.stn = TNet(3)
        self.conv1 = nn.Conv1D(3, 8, 1, bias_attr=False)
        self.bn1 = nn.BatchNorm1D(8)
        self.fstn = TNet(8)
        self.conv2 = nn.Conv1D(8, 16, 1, bias_attr=False)
        self.bn2 = nn.BatchNorm1D(16)
        self.head = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, classes))

    def forward(self, points, label):                        # points: [B, N, 3]
        x = points.transpose([0, 2, 1])
        trans = self.stn(x)
        x = d2s.bmm(trans, x)
        x = F.relu(self.bn1(self.conv1(x)))
        trans_feat = self.fstn(x)
        x = d2s.bmm(trans_feat, x)
        x = self.bn2(self.conv2(x))
        x = d2s.max(x, axis=2)                               # global feature
        logits = self.head(x)
        eye = d2s.eye(trans_feat.shape[1]).unsqueeze(0)
        reg = d2s.mean(d2s.norm(eye - d2s.bmm(trans_feat, trans_feat.transpose([0, 2, 1])),
                                axis=[1, 2]))
        return F.cross_entropy(logits, label) + 0.001 * reg


SPEC = [InputSpec([None, None, 3], "float32"), InputSpec([None], "int64")]
RNG = np.random.default_rng(18)
BATCHES = [(RNG.normal(size=(n, p, 3)), RNG.integers(0, 3, n)) for n, p in ((3, 6), (4, 5), (3, 6))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_pointnet_trains_then_evaluates_like_eager(backend):
    eager, model, fwd = train_and_compare(PointNet, for_backend(BATCHES, backend), backend, SPEC, opt="adam")
    assert len(fwd.program_cache) == 1
    eager.eval()
    model.eval()
    batch = [t(b) for b in BATCHES[0]]
    close(fwd(*batch).numpy(), eager(*batch).numpy(), backend, "eval loss")


def test_pointnet_is_order_invariant_after_conversion():
    model = PointNet()
    model.eval()
    fwd = d2s.jit.to_static(model.forward, input_spec=SPEC)
    pts, lab = BATCHES[0]
    perm = RNG.permutation(pts.shape[1])
    np.testing.assert_allclose(fwd(t(pts), t(lab)).numpy(),
                               fwd(t(pts[:, perm]), t(lab)).numpy(), rtol=1e-5)
