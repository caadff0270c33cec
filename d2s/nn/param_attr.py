"""`ParamAttr`: how a layer makes one of its parameters (Paddle's class), and
the per-parameter training attributes the optimizers read.

A parameter is a plain eager Tensor (fixed slots), so what its ParamAttr says
about training (learning-rate scale, regularizer, clipping) is kept beside it
(`d2s.core.param_attrs`, keyed by the Tensor's identity).
"""
from __future__ import annotations

from ..core.param_attrs import param_attr_of, remember as _remember
from . import initializer as init

__all__ = ["ParamAttr", "param_attr_of", "resolve_param_attr"]


class ParamAttr:
    """`name`: the parameter's name; `initializer`: how its values are drawn;
    `learning_rate`: a scale of the optimizer's rate for it; `regularizer`:
    its weight decay (overrides the optimizer's `weight_decay`);
    `trainable=False`: made with `stop_gradient=True`; `need_clip=False`:
    gradient clipping leaves it out."""

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, do_model_average=False, need_clip=True):
        if initializer is not None and not callable(initializer):
            raise TypeError(f"ParamAttr: initializer must be an Initializer, got "
                            f"{initializer!r}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = bool(need_clip)

    def __repr__(self):
        return (f"ParamAttr(name={self.name!r}, learning_rate={self.learning_rate}, "
                f"trainable={self.trainable})")


def resolve_param_attr(attr, default):
    """Paddle's `weight_attr` / `bias_attr` forms -> (initializer or None for "no
    parameter", ParamAttr or None): None/True (the default initializer),
    False (no parameter), an Initializer, a ParamAttr, or a name string."""
    if attr is False:
        return None, None
    if attr is None or attr is True:
        return default, None
    if isinstance(attr, str):
        attr = ParamAttr(name=attr)
    if isinstance(attr, ParamAttr):
        return attr.initializer or default, attr
    if isinstance(attr, init.Initializer) or callable(attr):
        return attr, None
    raise TypeError(f"parameter attr must be None, True, False, a ParamAttr or an "
                    f"initializer, got {attr!r}")


def apply_param_attr(param, attr):
    """Give `param` what `attr` says: its name, trainability, and the training
    attributes the optimizers read."""
    if attr is None:
        return param
    if attr.name is not None:
        param.name = attr.name
    if not attr.trainable:
        param.stop_gradient = True
    _remember(param, attr)
    return param


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    """A trainable eager Tensor outside any layer (Paddle's `paddle.create_parameter`):
    Xavier-uniform for weights and zeros for biases unless an initializer is given."""
    from ..core.dtypes import as_dtype
    from ..core.tensor import Tensor
    from .layer import unique_name
    default = default_initializer or (init.Constant(0.0) if is_bias else init.XavierUniform())
    initializer, pattr = resolve_param_attr(attr, default)
    if initializer is None:
        raise ValueError("create_parameter: attr=False makes no parameter")
    dtype = as_dtype(dtype)
    shape = [int(d) for d in shape]
    value = initializer(shape, dtype)
    if not isinstance(value, Tensor):
        value = Tensor(value, dtype=dtype)
    param = Tensor._from_array(value._value.astype(dtype, copy=False), stop_gradient=False)
    param.name = name or unique_name("create_parameter") + (".b_0" if is_bias else ".w_0")
    return apply_param_attr(param, pattr)
