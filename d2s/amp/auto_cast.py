"""`d2s.amp.auto_cast` (Paddle's `paddle.amp.auto_cast`): the block's ops
compute in float16 or bfloat16 where that is safe, as `core.amp_state`'s
policy says; and `decorate`, which casts a model for level O2."""
from __future__ import annotations

import contextlib

import numpy as np

from ..core import amp_state
from ..core.dtype_names import bfloat16

__all__ = ["auto_cast", "amp_guard", "decorate", "white_list", "black_list",
           "is_float16_supported", "is_bfloat16_supported"]

_LEVELS = ("O0", "OD", "O1", "O2")


def low_dtype(dtype, where="auto_cast"):
    """The numpy dtype of Paddle's AMP dtype name."""
    name = str(np.dtype(dtype).name if not isinstance(dtype, str) else dtype).lower()
    if name == "float16":
        return np.dtype("float16")
    if name == "bfloat16":
        if bfloat16 is None:
            raise RuntimeError(f"{where}: dtype='bfloat16' needs the ml_dtypes package (the "
                               "xla extra installs it); use dtype='float16'")
        return bfloat16
    raise ValueError(f"{where}: dtype must be 'float16' or 'bfloat16', got {dtype!r}")


def white_list():
    """Op names that compute in the low dtype at level O1 (d2s's op names)."""
    return set(amp_state.WHITE_LIST)


def black_list():
    """Op names that always compute in float32 under AMP."""
    return set(amp_state.BLACK_LIST)


def is_float16_supported(device=None):
    return True


def is_bfloat16_supported(device=None):
    return bfloat16 is not None


@contextlib.contextmanager
def auto_cast(enable=True, custom_white_list=None, custom_black_list=None, level="O1",
              dtype="float16", use_promote=True):
    """Inside, the ops of the white list (matmul, conv) compute in `dtype`,
    those of the black list (reductions, softmax, exp/log, losses) in
    float32, others in float32 when an input is float32 (O1) or in `dtype`
    (O2). Eager code, and converted code that the block is traced in (the
    casts are ops of the program). `custom_white_list`/`custom_black_list`
    move op names (Paddle's names such as "matmul_v2", "reduce_sum", or
    d2s's) between the lists. Ops with no low-precision variant do not
    exist on the numpy CPU kernels: every op has a float16 kernel, and
    bfloat16 is computed by numpy through ml_dtypes. `enable=False` (or
    level "O0") turns AMP off for the block, also inside an enabled one."""
    if level not in _LEVELS:
        raise ValueError(f"auto_cast: level must be one of {_LEVELS}, got {level!r}")
    low = low_dtype(dtype)
    custom_white = {amp_state.op_name(n) for n in (custom_white_list or ())}
    custom_black = {amp_state.op_name(n) for n in (custom_black_list or ())}
    both = custom_white & custom_black
    if both:
        raise ValueError(f"auto_cast: {sorted(both)} in both custom_white_list and "
                         "custom_black_list")
    white = (amp_state.WHITE_LIST - custom_black) | custom_white
    black = (amp_state.BLACK_LIST - custom_white) | custom_black
    on = bool(enable) and level not in ("O0",)
    # "OD" (Paddle's): only the white list in low precision, every other op in float32
    with amp_state.policy_guard(on, low, level, white, black):
        yield


amp_guard = auto_cast


_NORM_LAYERS = ("BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "LayerNorm",
                "GroupNorm", "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D",
                "SyncBatchNorm")


def decorate(models, optimizers=None, level="O1", dtype="float16", master_weight=None,
             save_dtype=None, master_grad=False, excluded_layers=None):
    """Paddle's `amp.decorate`. O1 changes nothing (returns its arguments).
    O2 casts the parameters of every layer to `dtype`, except normalization
    layers and `excluded_layers` (layer objects or classes), whose
    statistics need float32.

    With O2 the `optimizers` update each cast parameter through a float32
    master copy made from its float32 value before the cast (Paddle's
    `multi_precision`; `master_weight=None` means yes at O2, as in Paddle;
    `False` updates the float16 values themselves). `master_grad=True` also
    clips and decays the gradients in float32. `save_dtype` is not
    supported (an error, not ignored): cast a state dict's values when
    saving instead."""
    from ..nn.layer import Layer
    if level not in ("O1", "O2"):
        raise ValueError(f"decorate: level must be 'O1' or 'O2', got {level!r}")
    if save_dtype is not None:
        raise NotImplementedError("decorate: save_dtype is not supported; cast the values of "
                                  "state_dict() before d2s.save instead")
    low = low_dtype(dtype, "decorate")
    single = isinstance(models, Layer)
    model_list = [models] if single else list(models)
    for m in model_list:
        if not isinstance(m, Layer):
            raise TypeError(f"decorate: models must be Layers, got {type(m).__name__}")
    opt_list = [] if optimizers is None else (
        list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers])
    masters = level == "O2" and master_weight is not False
    if level == "O2" and master_weight and not opt_list:
        raise ValueError("decorate: master_weight=True keeps float32 copies for the "
                         "optimizers' updates; pass optimizers=...")
    if master_grad and not (masters and opt_list):
        raise ValueError("decorate: master_grad=True needs level='O2' with master weights "
                         "and optimizers=...")
    if level == "O2":
        excluded = list(excluded_layers or ())
        if not isinstance(excluded_layers, (list, tuple)) and excluded_layers is not None:
            excluded = [excluded_layers]
        cast_params = []
        for m in model_list:
            for layer in m.sublayers(include_self=True):
                if type(layer).__name__ in _NORM_LAYERS or any(
                        layer is e or (isinstance(e, type) and isinstance(layer, e))
                        for e in excluded):
                    continue
                for p in layer._parameters.values():
                    if p is not None and p._value.dtype.kind == "f":
                        cast_params.append((p, p._value))
                        p._value = p._value.astype(low)
                        p.clear_grad()
        if masters:
            for opt in opt_list:
                opt._multi_precision = True
                opt._master_grad = bool(master_grad)
                mine = None if opt._parameter_list is None else {
                    id(p) for p in opt._parameter_list}
                for p, value in cast_params:
                    if mine is None or id(p) in mine:
                        opt._seed_master(p, value)
        from ..core import state
        state.tensor_attributes_version[0] += 1
    if optimizers is None:
        return models
    return models, optimizers
