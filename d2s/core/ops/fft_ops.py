"""Discrete Fourier transforms (behind `d2s.fft`) and the complex helpers
they need (`real`, `imag`, `complex`; `conj`, `angle`, `as_real`,
`as_complex` composed from them).

Three transform primitives, numpy.fft's n-dimensional forms: `fft_c2c`
(complex to complex, forward or inverse), `fft_r2c` (real to the one-sided
half spectrum, rfftn) and `fft_c2r` (half spectrum to real, irfftn). Each
crops or zero-pads its input to the sizes `s` first, as numpy does.

Gradients follow PyTorch's and Paddle's convention for complex values (the
gradient of a real loss is dL/dRe + i dL/dIm), under which a linear map's
gradient is its adjoint: for a DFT the opposite-direction transform with
"backward" and "forward" normalization swapped, then the crop/pad undone.
rfftn's adjoint zero-fills the dropped half before it and keeps the real
part; irfftn's adjoint is rfftn with the bins that stand for two
(conjugate) entries counted twice. Each adjoint is an op of its own that
knows the input's shape, so unknown dims cost nothing."""
from __future__ import annotations

import numpy as np

from ..dispatch import bind
from ..registry import Aval, register_op

__all__ = ["real", "imag", "complex", "conj", "angle", "as_real", "as_complex"]

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def complex_of(dtype):
    return np.result_type(np.dtype(dtype), np.complex64)


def real_of(dtype):
    return np.finfo(complex_of(dtype)).dtype


def resize_along(xp, y, shape, axes):
    """`y` cropped or zero-padded along `axes` to `shape`'s sizes there, with
    the array module `xp` (numpy here; jax.numpy in the xla rules)."""
    for a in axes:
        n, want = y.shape[a], shape[a]
        if n > want:
            y = y[(slice(None),) * a + (slice(0, want),)]
        elif n < want:
            pad = [(0, 0)] * y.ndim
            pad[a] = (0, want - n)
            y = xp.pad(y, pad)
    return y


def _resize(y, shape, axes):
    return resize_along(np, y, shape, axes)


def _sized(shape, axes, sizes):
    out = list(shape)
    if sizes is not None:
        for a, n in zip(axes, sizes):
            out[a] = n
    return tuple(out)


# ---- complex to complex ------------------------------------------------------------------
def _c2c_kernel(x, axes, sizes, norm, inverse):
    f = np.fft.ifftn if inverse else np.fft.fftn
    return np.asarray(f(x, s=sizes, axes=axes, norm=norm), complex_of(x.dtype))


def _c2c_infer(x, axes, sizes, norm, inverse):
    return Aval(_sized(tuple(x.shape), axes, sizes), complex_of(x.dtype))


def _c2c_vjp(g, out, x, axes, sizes, norm, inverse):
    return (bind("fft_c2c_adjoint", g, x, axes=axes, norm=norm, inverse=inverse),)


def _c2c_adjoint_kernel(g, x, axes, norm, inverse):
    f = np.fft.fftn if inverse else np.fft.ifftn
    y = f(g, axes=axes, norm=_SWAP[norm])
    return np.asarray(_resize(y, x.shape, axes), complex_of(x.dtype))


def _c2c_adjoint_vjp(gg, out, g, x, axes, norm, inverse):
    raise NotImplementedError("fft: second-order gradients are not supported")


register_op("fft_c2c", _c2c_kernel, _c2c_infer, vjp=_c2c_vjp)
register_op("fft_c2c_adjoint", _c2c_adjoint_kernel,
            lambda g, x, **_: Aval(tuple(x.shape), complex_of(x.dtype)), vjp=_c2c_adjoint_vjp)


# ---- real to half spectrum (rfftn) -------------------------------------------------------
def _r2c_kernel(x, axes, sizes, norm):
    return np.asarray(np.fft.rfftn(x, s=sizes, axes=axes, norm=norm), complex_of(x.dtype))


def _r2c_infer(x, axes, sizes, norm):
    shape = list(_sized(tuple(x.shape), axes, sizes))
    last = axes[-1]
    shape[last] = None if shape[last] is None else shape[last] // 2 + 1
    return Aval(tuple(shape), complex_of(x.dtype))


def _r2c_vjp(g, out, x, axes, sizes, norm):
    return (bind("fft_r2c_adjoint", g, x, axes=axes, sizes=sizes, norm=norm),)


def _r2c_adjoint_kernel(g, x, axes, sizes, norm):
    full = _sized(x.shape, axes, sizes)
    g = _resize(g, full, axes[-1:])                  # the dropped half: zeros
    y = np.fft.ifftn(g, axes=axes, norm=_SWAP[norm]).real
    return np.asarray(_resize(y, x.shape, axes), x.dtype)


register_op("fft_r2c", _r2c_kernel, _r2c_infer, vjp=_r2c_vjp)
register_op("fft_r2c_adjoint", _r2c_adjoint_kernel,
            lambda g, x, **_: Aval(tuple(x.shape), np.dtype(x.dtype)), vjp=_c2c_adjoint_vjp)


# ---- half spectrum to real (irfftn) ------------------------------------------------------
def _c2r_kernel(x, axes, sizes, norm):
    return np.asarray(np.fft.irfftn(x, s=sizes, axes=axes, norm=norm), real_of(x.dtype))


def _c2r_infer(x, axes, sizes, norm):
    return Aval(_sized(tuple(x.shape), axes, sizes), real_of(x.dtype))


def _c2r_vjp(g, out, x, axes, sizes, norm):
    return (bind("fft_c2r_adjoint", g, x, axes=axes, norm=norm),)


def _c2r_adjoint_kernel(g, x, axes, norm):
    last = axes[-1]
    n = g.shape[last]
    y = np.fft.rfftn(g, axes=axes, norm=_SWAP[norm])
    twice = np.ones(y.shape[last], g.dtype)
    twice[1:(n + 1) // 2] = 2.0                       # bins that stand for two entries
    y = y * twice.reshape((-1,) + (1,) * (g.ndim - 1 - last))
    return np.asarray(_resize(y, x.shape, axes), x.dtype)


register_op("fft_c2r", _c2r_kernel, _c2r_infer, vjp=_c2r_vjp)
register_op("fft_c2r_adjoint", _c2r_adjoint_kernel,
            lambda g, x, **_: Aval(tuple(x.shape), np.dtype(x.dtype)), vjp=_c2c_adjoint_vjp)


# ---- real / imag / complex ----------------------------------------------------------------
def _real_vjp(g, out, x):
    return (bind("complex", g, g * 0.0),)


def _imag_vjp(g, out, x):
    return (bind("complex", g * 0.0, g),)


def _part_infer(x):
    return Aval(tuple(x.shape), real_of(x.dtype))


register_op("real", lambda x: np.real(x).copy(), _part_infer, vjp=_real_vjp)
register_op("imag", lambda x: np.imag(x).copy(), _part_infer, vjp=_imag_vjp)


def _complex_kernel(re, im):
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), complex_of(re.dtype))
    out.real, out.imag = re, im
    return out


def _complex_infer(re, im):
    from ..shapes import broadcast_shapes
    return Aval(broadcast_shapes(tuple(re.shape), tuple(im.shape), opname="complex"),
                complex_of(re.dtype))


def _complex_vjp(g, out, re, im):
    from ._base import unbroadcast
    return unbroadcast(bind("real", g), re), unbroadcast(bind("imag", g), im)


register_op("complex", _complex_kernel, _complex_infer, vjp=_complex_vjp)


def real(x, name=None):
    """The real part of a complex tensor (a real tensor is returned as is)."""
    from ._base import lift
    x = lift(x)
    return bind("real", x) if np.dtype(x.dtype).kind == "c" else x


def imag(x, name=None):
    """The imaginary part of a complex tensor (zeros for a real one)."""
    from ._base import lift
    x = lift(x)
    return bind("imag", x) if np.dtype(x.dtype).kind == "c" else x * 0


def complex(real, imag, name=None):
    """The complex tensor real + i imag (float32 parts give complex64,
    float64 ones complex128; the parts broadcast)."""
    from ._base import lift
    from .elementwise import cast
    re, im = lift(real), lift(imag)
    if np.dtype(re.dtype).kind != "f" or np.dtype(im.dtype).kind != "f":
        raise TypeError(f"complex: real and imag must be float tensors, got {re.dtype} and "
                        f"{im.dtype}")
    dt = np.result_type(np.dtype(re.dtype), np.dtype(im.dtype))
    re, im = (t if np.dtype(t.dtype) == dt else cast(t, dt) for t in (re, im))
    return bind("complex", re, im)


def conj(x, name=None):
    """The complex conjugate (a real tensor is returned as is)."""
    from ._base import lift
    x = lift(x)
    if np.dtype(x.dtype).kind != "c":
        return x
    return complex(real(x), -imag(x))


def angle(x, name=None):
    """The argument (phase) of each element, in radians: atan2(imag, real)
    (0 or pi for real input)."""
    from ._base import lift
    from .elementwise import cast, where
    x = lift(x)
    if np.dtype(x.dtype).kind == "c":
        re, im = real(x), imag(x)
    else:
        if np.dtype(x.dtype).kind != "f":
            x = cast(x, "float32")
        re, im = x, x * 0.0
    # atan2 from atan: the quadrant fixed by the signs (atan2 may live elsewhere)
    from .math import atan
    pi = float(np.pi)
    safe = where(re == 0.0, re * 0.0 + 1.0, re)
    base = atan(im / safe)
    base = where(re < 0.0, where(im < 0.0, base - pi, base + pi), base)
    on_axis = where(im > 0.0, im * 0.0 + pi / 2, where(im < 0.0, im * 0.0 - pi / 2, im * 0.0))
    return where(re == 0.0, on_axis, base)


def as_real(x, name=None):
    """A complex tensor [...] as a real one [..., 2] of (real, imag) pairs."""
    from .manipulation import stack
    return stack([real(x), imag(x)], axis=-1)


def as_complex(x, name=None):
    """A real tensor [..., 2] of (real, imag) pairs as a complex one [...]."""
    from ._base import lift
    x = lift(x)
    if not x.shape or x.shape[-1] not in (2, None):
        raise ValueError(f"as_complex: the last dim of x must be 2, got {list(x.shape)}")
    return complex(x[..., 0], x[..., 1])
