"""The hybrid mesh `fleet.init` makes, and what Paddle's code asks of it."""
from __future__ import annotations

import numpy as np

from ...core.dist_attr import ProcessMesh
from ..api import shard_layer
from ..env import get_rank, get_world_size

_DEGREES = ("dp_degree", "mp_degree", "pp_degree", "sharding_degree", "sep_degree")
_state = {"mesh": None}


class DistributedStrategy:
    """Paddle's strategy object: only `hybrid_configs` is read (`dp_degree`,
    `mp_degree`; `pp_degree`, `sharding_degree` and `sep_degree` must be 1 —
    pipeline and ZeRO-style sharding are not built)."""

    def __init__(self):
        self._hybrid = {name: 1 for name in _DEGREES}

    @property
    def hybrid_configs(self):
        return dict(self._hybrid)

    @hybrid_configs.setter
    def hybrid_configs(self, configs):
        if not isinstance(configs, dict):
            raise TypeError(f"DistributedStrategy.hybrid_configs: expected a dict, "
                            f"got {type(configs).__name__}")
        unknown = set(configs) - set(_DEGREES)
        if unknown:
            raise ValueError(f"DistributedStrategy.hybrid_configs: unknown keys "
                             f"{sorted(unknown)} (known: {list(_DEGREES)})")
        merged = dict(self._hybrid, **configs)
        for name, value in merged.items():
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"DistributedStrategy.hybrid_configs[{name!r}] must be a "
                                 f"positive int, got {value!r}")
        for name in ("pp_degree", "sharding_degree", "sep_degree"):
            if merged[name] != 1:
                raise NotImplementedError(
                    f"DistributedStrategy.hybrid_configs[{name!r}]={merged[name]}: d2s builds "
                    f"data and tensor (model) parallelism only; set it to 1")
        self._hybrid = {k: int(v) for k, v in merged.items()}


def init(role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
    """Make the hybrid mesh of `strategy.hybrid_configs` (see the package doc).
    Without a strategy: every device on the `"dp"` dim, `mp_degree` 1."""
    if strategy is None:
        strategy = DistributedStrategy()
        strategy.hybrid_configs = {"dp_degree": max(1, get_world_size())}
    if not isinstance(strategy, DistributedStrategy):
        raise TypeError(f"fleet.init: strategy must be a fleet.DistributedStrategy, "
                        f"got {type(strategy).__name__}")
    dp, mp = strategy.hybrid_configs["dp_degree"], strategy.hybrid_configs["mp_degree"]
    _state["mesh"] = ProcessMesh(np.arange(dp * mp).reshape(dp, mp), ["dp", "mp"])
    return None


def hybrid_mesh():
    """The mesh `init` made (None before `init`)."""
    return _state["mesh"]


class HybridCommunicateGroup:
    """Sizes of the hybrid mesh's dims. Ranks: d2s runs one program over
    the whole mesh (single controller), so a layer never needs its own
    model-parallel rank; `get_*_rank()` report this process's rank in the
    launcher's world (0 when started alone)."""

    def __init__(self, mesh):
        self.mesh = mesh

    def get_data_parallel_world_size(self):
        return self.mesh.get_dim_size("dp")

    def get_model_parallel_world_size(self):
        return self.mesh.get_dim_size("mp")

    def get_pipe_parallel_world_size(self):
        return 1

    def get_sharding_parallel_world_size(self):
        return 1

    def get_data_parallel_rank(self):
        return get_rank()

    def get_model_parallel_rank(self):
        return get_rank()

    def get_model_parallel_group(self):
        """The mesh itself: what the `mp_group` arguments accept."""
        return self.mesh


def get_hybrid_communicate_group():
    mesh = hybrid_mesh()
    if mesh is None:
        raise RuntimeError("fleet.get_hybrid_communicate_group(): call fleet.init(is_collective="
                           "True, strategy=...) first")
    return HybridCommunicateGroup(mesh)


def distributed_model(model):
    """`model` with every parameter not placed yet replicated on the hybrid
    mesh (model-parallel layers placed theirs); the model itself."""
    mesh = hybrid_mesh()
    return model if mesh is None else shard_layer(model, mesh)


def distributed_optimizer(optimizer, strategy=None):
    """`optimizer` itself: a converted training step runs its update in the
    same partitioned program as the forward and backward passes."""
    return optimizer


def worker_num():
    return get_world_size()


def worker_index():
    return get_rank()
