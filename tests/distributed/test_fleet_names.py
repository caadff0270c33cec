"""Paddle's fleet names (`d2s.distributed.fleet`): the hybrid mesh
`fleet.init` makes, the placements the model-parallel layers give their
parameters, and numbers equal to the plain layers' (eagerly, and converted
on the numpy backend; the xla runs on 8 devices are in test_fleet_xla.py)."""
import numpy as np
import pytest

import d2s
import d2s.nn as nn
import d2s.nn.functional as F
from d2s.distributed import Replicate, Shard, fleet
from d2s.distributed.fleet import hybrid
from fleet_models import DIM, HIDDEN, VOCAB, make_lm

mp = fleet.meta_parallel


@pytest.fixture
def hybrid_mesh():
    """fleet.init with dp 2, mp 4; the process-wide mesh reset afterwards."""
    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": 2, "mp_degree": 4}
    fleet.init(is_collective=True, strategy=strategy)
    yield hybrid.hybrid_mesh()
    hybrid._state["mesh"] = None


def test_init_makes_a_dp_by_mp_mesh_and_the_group_reports_its_sizes(hybrid_mesh):
    assert hybrid_mesh.shape == [2, 4] and hybrid_mesh.dim_names == ["dp", "mp"]
    assert hybrid_mesh.process_ids == list(range(8))
    group = fleet.get_hybrid_communicate_group()
    assert group.get_model_parallel_world_size() == 4
    assert group.get_data_parallel_world_size() == 2
    assert group.get_model_parallel_group() == hybrid_mesh


def test_model_parallel_layers_place_their_parameters_on_mp(hybrid_mesh):
    model = fleet.distributed_model(make_lm())
    assert model.embed.weight.placements == [Replicate(), Shard(0)]
    assert model.gate.weight.placements == [Replicate(), Shard(1)]
    assert model.gate.bias is None  # Paddle's default: no bias on a column layer
    assert model.down.weight.placements == [Replicate(), Shard(0)]
    assert model.down.bias.placements == [Replicate(), Replicate()]
    assert model.head.weight.placements == [Replicate(), Shard(1)]
    assert all(p.process_mesh == hybrid_mesh for p in model.parameters())


def _plain_lm(parallel):
    """The same network from plain layers, holding the parallel one's weights."""
    emb, gate, up = nn.Embedding(VOCAB, DIM), nn.Linear(DIM, HIDDEN), nn.Linear(DIM, HIDDEN)
    down, head = nn.Linear(HIDDEN, DIM), nn.Linear(DIM, VOCAB)
    emb.weight.set_value(parallel.embed.weight.numpy())
    for plain, par in [(gate, parallel.gate), (up, parallel.up), (down, parallel.down),
                       (head, parallel.head)]:
        plain.weight.set_value(par.weight.numpy())
        plain.bias.set_value(np.zeros(plain.bias.shape, "float32") if par.bias is None
                             else par.bias.numpy())

    def forward(ids, labels):
        h = emb(ids)
        h = h + down(F.silu(gate(h)) * up(h))
        return F.cross_entropy(head(h), labels)
    return forward


def _batch():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, VOCAB, size=(2, 5))
    return d2s.to_tensor(ids), d2s.to_tensor(np.roll(ids, -1, axis=1)[..., None])


@pytest.mark.parametrize("converted", [False, True], ids=["eager", "to_static"])
def test_the_parallel_model_computes_the_plain_models_numbers(hybrid_mesh, converted):
    model = make_lm()
    ids, labels = _batch()
    want = _plain_lm(model)(ids, labels).numpy()
    run = d2s.jit.to_static(model) if converted else model
    loss = run(ids, labels)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-6)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_without_init_the_layers_are_plain():
    assert hybrid.hybrid_mesh() is None
    layer = mp.ColumnParallelLinear(4, 6, has_bias=True)
    assert layer.mesh is None and layer.weight.placements is None
    x = d2s.randn([3, 4])
    np.testing.assert_allclose(layer(x).numpy(), x.numpy() @ layer.weight.numpy()
                               + layer.bias.numpy(), rtol=1e-6)


def test_parallel_cross_entropy_is_the_per_position_loss_with_ignore_index():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 3, 5)).astype("float32")
    labels = np.array([[[1], [4], [-100]], [[0], [2], [3]]])
    got = mp.ParallelCrossEntropy()(d2s.to_tensor(logits), d2s.to_tensor(labels)).numpy()
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -np.take_along_axis(logp, np.where(labels < 0, 0, labels), -1)
    want[labels == -100] = 0.0
    assert got.shape == (2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_size_the_mp_degree_does_not_divide_names_the_argument(hybrid_mesh):
    with pytest.raises(ValueError, match=r"ColumnParallelLinear: out_features=6 is not "
                                         r"divisible by the model-parallel degree 4"):
        mp.ColumnParallelLinear(8, 6)
    with pytest.raises(ValueError, match=r"VocabParallelEmbedding: num_embeddings=10"):
        mp.VocabParallelEmbedding(10, 4)


def test_bad_strategies_and_groups_are_clear_errors():
    strategy = fleet.DistributedStrategy()
    with pytest.raises(ValueError, match=r"unknown keys \['mp'\]"):
        strategy.hybrid_configs = {"mp": 2}
    with pytest.raises(ValueError, match=r"'mp_degree'\] must be a positive int"):
        strategy.hybrid_configs = {"mp_degree": 0}
    with pytest.raises(NotImplementedError, match=r"pp_degree.*set it to 1"):
        strategy.hybrid_configs = {"pp_degree": 2}
    with pytest.raises(RuntimeError, match=r"call fleet.init"):
        fleet.get_hybrid_communicate_group()
    with pytest.raises(TypeError, match=r"mp_group must be a ProcessMesh"):
        mp.RowParallelLinear(4, 4, mp_group="group")
    with pytest.raises(ValueError, match=r"has no dim named 'mp'"):
        mp.RowParallelLinear(4, 4, mp_group=d2s.distributed.ProcessMesh([0, 1], ["dp"]))
