"""xla rules of the sampling ops (`d2s/core/ops/random_ops.py`): drawn on the host by
d2s's numpy generator (`ns.host_draw`), so the numbers equal the numpy backend's."""
from __future__ import annotations

from ....core.ops.python_draws import _kernel as _python_draw_kernel
from ....core.ops.random_ops import _dropout_mask, _normal_kernel, _uniform_kernel
from ....core.ops.shape_args import fill_spec
from ....core.registry import register_lowering


def _drawn_on_host(kernel):
    """The xla rule of a sampling op: `kernel` (the numpy one) run on the host
    for the shape this compile gives (dims from run-time values cannot
    compile: `ns.static`)."""
    def rule(ns, *dims, shape, dtype, **attrs):
        size = tuple(fill_spec(shape, ns.static(dims)))
        return ns.host_draw(lambda: kernel(shape=size, dtype=dtype, **attrs), size, dtype)
    return rule


def _dropout_xla(ns, x, p):
    shape, dtype = tuple(x.shape), x.dtype
    mask = ns.host_draw(lambda: _dropout_mask(shape, p, dtype), shape, dtype)
    return x * mask, mask


register_lowering("xla", "uniform", _drawn_on_host(_uniform_kernel))
register_lowering("xla", "gaussian", _drawn_on_host(_normal_kernel))
register_lowering("xla", "dropout", _dropout_xla)
register_lowering("xla", "python_draw", lambda ns, *, call, shape, dtype: ns.host_draw(
    lambda: _python_draw_kernel(call=call, shape=shape, dtype=dtype), tuple(shape), dtype))
