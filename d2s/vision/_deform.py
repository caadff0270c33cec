"""`d2s.vision.ops.deform_conv2d` / `DeformConv2D` (Paddle's deformable
convolution, DCN v1 and, with `mask`, v2), composed from d2s ops: each
kernel tap of each output position samples the input bilinearly at its
regular position plus a learned offset (zero outside the map, DCN's
rule: beyond -1 and the size a sample is 0, and each of its four corners
counts only inside the map), scaled by the mask; the sampled columns are
then one grouped matmul with the weight. Gradients w.r.t. x, offset, mask,
weight and bias come from the ops (an offset's through the bilinear
weights)."""
from __future__ import annotations

import math

import numpy as np

from ..core.ops import (cast, floor, matmul, reshape, take_along_axis, unsqueeze, where)
from ..core.ops._base import constant, lift

__all__ = ["deform_conv2d", "DeformConv2D"]


def _pair(v, what, name):
    out = [int(v)] * 2 if isinstance(v, int) else [int(a) for a in v]
    if len(out) != 2:
        raise ValueError(f"{what}: {name} must be an int or 2 ints, got {v!r}")
    return out


def deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1,
                  deformable_groups=1, groups=1, mask=None, name=None):
    """Deformable 2-D convolution: x [N, C, H, W], offset [N, 2 * dg * kh *
    kw, Ho, Wo] (per deformable group and tap: dy then dx), weight [Cout, C
    / groups, kh, kw], mask [N, dg * kh * kw, Ho, Wo] or None, bias [Cout]
    or None -> [N, Cout, Ho, Wo]."""
    what = "deform_conv2d"
    x, offset, weight = lift(x), lift(offset), lift(weight)
    if len(x.shape) != 4 or len(weight.shape) != 4:
        raise ValueError(f"{what}: x and weight must be 4-D, got {list(x.shape)} and "
                         f"{list(weight.shape)}")
    _, c, h, w = x.shape
    cout, cin_g, kh, kw = weight.shape
    if None in (c, h, w):
        raise ValueError(f"{what}: the channels and the map size of x must be known, got "
                         f"{list(x.shape)}")
    sh, sw = _pair(stride, what, "stride")
    ph, pw = _pair(padding, what, "padding")
    dh, dw = _pair(dilation, what, "dilation")
    dg, groups = int(deformable_groups), int(groups)
    if cin_g is None or None in (kh, kw):
        raise ValueError(f"{what}: weight's dims after the first must be known, got "
                         f"{list(weight.shape)}")
    if c % dg or c % groups or cin_g * groups != c or (cout is not None and cout % groups):
        raise ValueError(f"{what}: channels {c} must split into deformable_groups={dg} and "
                         f"groups={groups} (weight {list(weight.shape)})")
    ho = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    wo = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    k, hw, out_len = kh * kw, h * w, ho * wo
    if tuple(offset.shape[1:]) != (2 * dg * k, ho, wo):
        raise ValueError(f"{what}: offset must be [N, {2 * dg * k}, {ho}, {wo}], got "
                         f"{list(offset.shape)}")
    dt = np.dtype(x.dtype)
    # regular sampling positions per tap and output position: [K, Ho * Wo]
    a, b = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    i, j = np.meshgrid(np.arange(ho), np.arange(wo), indexing="ij")
    base_y = constant((i.reshape(1, -1) * sh - ph + a.reshape(-1, 1) * dh).astype(dt))
    base_x = constant((j.reshape(1, -1) * sw - pw + b.reshape(-1, 1) * dw).astype(dt))
    off = reshape(offset, [-1, dg, k, 2, out_len])
    y = off[:, :, :, 0] + base_y                                      # [N, dg, K, L]
    xs = off[:, :, :, 1] + base_x
    inside = cast((y > -1.0) & (y < float(h)) & (xs > -1.0) & (xs < float(w)), dt)
    y0, x0 = floor(y), floor(xs)
    ly, lx = y - y0, xs - x0
    img = reshape(x, [-1, dg, c // dg, hw])                           # [N, dg, Cg, H*W]
    val = None
    for cy, wy in ((y0, 1.0 - ly), (y0 + 1.0, ly)):
        for cx, wx in ((x0, 1.0 - lx), (x0 + 1.0, lx)):
            ok = (cy >= 0.0) & (cy <= float(h - 1)) & (cx >= 0.0) & (cx <= float(w - 1))
            zero = cy * 0.0
            idx = cast(where(ok, cy, zero) * float(w) + where(ok, cx, zero), "int64")
            got = take_along_axis(img, reshape(idx, [-1, dg, 1, k * out_len]), -1)
            wgt = wy * wx * cast(ok, dt) * inside                      # [N, dg, K, L]
            term = got * reshape(wgt, [-1, dg, 1, k * out_len])
            val = term if val is None else val + term
    if mask is not None:
        mask = lift(mask)
        if tuple(mask.shape[1:]) != (dg * k, ho, wo):
            raise ValueError(f"{what}: mask must be [N, {dg * k}, {ho}, {wo}], got "
                             f"{list(mask.shape)}")
        val = val * reshape(mask, [-1, dg, 1, k * out_len])
    cols = reshape(val, [-1, groups, (c // groups) * k, out_len])     # [N, g, Cin/g * K, L]
    wmat = reshape(weight, [groups, -1, cin_g * k])                   # [g, Cout/g, Cin/g * K]
    out = reshape(matmul(wmat, cols), [0, -1, ho, wo])                # (0: N as it is)
    if bias is not None:
        out = out + reshape(lift(bias), [1, -1, 1, 1])
    return out


def _layer():
    from ..nn import Layer
    return Layer


class DeformConv2D(_layer()):
    """Paddle's `DeformConv2D(in_channels, out_channels, kernel_size, stride,
    padding, dilation, deformable_groups, groups, weight_attr, bias_attr)`;
    `forward(x, offset, mask=None)`. Weight and bias are initialized as
    Conv2D's."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 deformable_groups=1, groups=1, weight_attr=None, bias_attr=None):
        super().__init__()
        from ..nn import initializer as init
        from ..nn.layers import _attr
        kh, kw = _pair(kernel_size, "DeformConv2D", "kernel_size")
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._deformable_groups, self._groups = deformable_groups, groups
        std = math.sqrt(2.0 / (kh * kw * in_channels))
        self.weight = self.create_parameter([out_channels, in_channels // groups, kh, kw],
                                            attr=_attr(weight_attr),
                                            default_initializer=init.Normal(0.0, std))
        self.bias = self.create_parameter([out_channels], attr=_attr(bias_attr), is_bias=True,
                                          default_initializer=init.Constant(0.0))

    def forward(self, x, offset, mask=None):
        return deform_conv2d(x, offset, self.weight, self.bias, self._stride, self._padding,
                             self._dilation, self._deformable_groups, self._groups, mask)
