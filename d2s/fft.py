"""`d2s.fft`: Paddle's `paddle.fft` (numpy.fft's semantics): fft / ifft /
rfft / irfft / hfft / ihfft in 1, 2 and n dims, fftfreq / rfftfreq, fftshift /
ifftshift. Transforms return complex tensors (complex64 from float32 or
complex64 input, complex128 from float64 or complex128); `norm` is
"backward" (no scaling forward, 1/n inverse), "ortho" (1/sqrt(n) both
ways) or "forward" (1/n forward). The ops live in d2s/core/ops/fft_ops.py;
gradients are the transforms' adjoints (PyTorch's complex convention)."""
import numpy as _np

from .core.dispatch import bind as _bind
from .core.ops._base import constant as _constant, lift as _lift
from .core.ops.fft_ops import complex as _complex

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


def _check_norm(norm, what):
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f"{what}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return norm


def _float(x):
    """A float or complex tensor (ints and bools read as float32)."""
    x = _lift(x)
    if _np.dtype(x.dtype).kind not in "fc":
        from .core.ops import cast
        x = cast(x, "float32")
    return x


def _plan(x, s, axes, what, default_axes=None):
    """(axes as non-negative ints, sizes tuple or None)."""
    nd = len(x.shape)
    if axes is None:
        if default_axes is not None:
            axes = default_axes
        elif s is not None:
            axes = list(range(nd - len(s), nd))
        else:
            axes = list(range(nd))
    if isinstance(axes, int):
        axes = [axes]
    axes = [int(a) for a in axes]
    for a in axes:
        if not -nd <= a < nd:
            raise ValueError(f"{what}: axis {a} is out of range for a {nd}-D tensor")
    axes = tuple(a % nd for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{what}: axes {list(axes)} repeat an axis")
    if not axes:
        raise ValueError(f"{what}: needs at least one axis")
    if s is not None:
        if isinstance(s, int):
            s = [s]
        s = tuple(int(n) for n in s)
        if len(s) != len(axes):
            raise ValueError(f"{what}: s {list(s)} and axes {list(axes)} differ in length")
        if any(n < 1 for n in s):
            raise ValueError(f"{what}: the sizes must be positive, got {list(s)}")
    return axes, s


def _as_complex(x):
    if _np.dtype(x.dtype).kind == "c":
        return x
    return _complex(x, x * 0.0)


def _c2c(x, s, axes, norm, inverse, what, default_axes=None):
    x = _float(x)
    axes, s = _plan(x, s, axes, what, default_axes)
    return _bind("fft_c2c", _as_complex(x), axes=axes, sizes=s, norm=_check_norm(norm, what),
                inverse=inverse)


def _r2c(x, s, axes, norm, what, default_axes=None):
    x = _float(x)
    if _np.dtype(x.dtype).kind == "c":
        raise TypeError(f"{what}: x must be real, got {x.dtype} (use fft for complex input)")
    axes, s = _plan(x, s, axes, what, default_axes)
    return _bind("fft_r2c", x, axes=axes, sizes=s, norm=_check_norm(norm, what))


def _c2r(x, s, axes, norm, what, default_axes=None):
    x = _as_complex(_float(x))
    axes, s = _plan(x, s, axes, what, default_axes)
    if s is None:
        m = x.shape[axes[-1]]
        if m is None:
            raise ValueError(f"{what}: the output size of the last axis (n or s) is needed when "
                             f"the input's axis {axes[-1]} is unknown (it is 2 * (m - 1))")
        s = tuple(x.shape[a] for a in axes[:-1]) + (2 * (m - 1),)
        if None in s:
            raise ValueError(f"{what}: pass s: dims {list(axes)} of x {list(x.shape)} are "
                             "unknown")
        if s[-1] < 1:
            raise ValueError(f"{what}: the last axis has {m} bins; pass n (or s) for the "
                             "output size")
    return _bind("fft_c2r", x, axes=axes, sizes=s, norm=_check_norm(norm, what))


def _one(n):
    return None if n is None else [n]


def fft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D DFT along `axis` (cropped or zero-padded to `n` first)."""
    return _c2c(x, _one(n), [axis], norm, False, "fft")


def ifft(x, n=None, axis=-1, norm="backward", name=None):
    """The inverse 1-D DFT along `axis`."""
    return _c2c(x, _one(n), [axis], norm, True, "ifft")


def rfft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D DFT of a real `x`: the n // 2 + 1 non-negative frequencies."""
    return _r2c(x, _one(n), [axis], norm, "rfft")


def irfft(x, n=None, axis=-1, norm="backward", name=None):
    """The real inverse of `rfft`: `n` outputs (default 2 * (m - 1))."""
    return _c2r(x, _one(n), [axis], norm, "irfft")


def fft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _c2c(x, s, axes, norm, False, "fft2")


def ifft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _c2c(x, s, axes, norm, True, "ifft2")


def rfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _r2c(x, s, axes, norm, "rfft2")


def irfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _c2r(x, s, axes, norm, "irfft2")


def fftn(x, s=None, axes=None, norm="backward", name=None):
    """The n-D DFT over `axes` (all, or the last len(s)), sizes `s`."""
    return _c2c(x, s, axes, norm, False, "fftn")


def ifftn(x, s=None, axes=None, norm="backward", name=None):
    return _c2c(x, s, axes, norm, True, "ifftn")


def rfftn(x, s=None, axes=None, norm="backward", name=None):
    return _r2c(x, s, axes, norm, "rfftn")


def irfftn(x, s=None, axes=None, norm="backward", name=None):
    return _c2r(x, s, axes, norm, "irfftn")


_SWAP_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _hermitian(x, s, axes, norm, what, default_axes=None):
    """hfft: the real signal whose spectrum is Hermitian with `x` as its half:
    irfftn of the conjugate, with the opposite normalization."""
    from .core.ops.fft_ops import conj
    return _c2r(conj(_as_complex(_float(x))), s, axes, _SWAP_NORM[_check_norm(norm, what)], what,
                default_axes)


def _ihermitian(x, s, axes, norm, what, default_axes=None):
    """ihfft: hfft's inverse, the conjugate of rfftn with the opposite
    normalization."""
    from .core.ops.fft_ops import conj
    return conj(_r2c(x, s, axes, _SWAP_NORM[_check_norm(norm, what)], what, default_axes))


def hfft(x, n=None, axis=-1, norm="backward", name=None):
    """The 1-D DFT of a Hermitian-symmetric signal given by its first half
    (complex `x`): a real result of `n` points (default 2 * (m - 1))."""
    return _hermitian(x, _one(n), [axis], norm, "hfft")


def ihfft(x, n=None, axis=-1, norm="backward", name=None):
    """The inverse of hfft for a real `x`: n // 2 + 1 complex points."""
    return _ihermitian(x, _one(n), [axis], norm, "ihfft")


def hfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _hermitian(x, s, axes, norm, "hfft2")


def ihfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _ihermitian(x, s, axes, norm, "ihfft2")


def hfftn(x, s=None, axes=None, norm="backward", name=None):
    return _hermitian(x, s, axes, norm, "hfftn")


def ihfftn(x, s=None, axes=None, norm="backward", name=None):
    return _ihermitian(x, s, axes, norm, "ihfftn")


def _freq_dtype(dtype):
    from .core.dtypes import as_dtype
    return _np.dtype("float32") if dtype is None else as_dtype(dtype)


def fftfreq(n, d=1.0, dtype=None, name=None):
    """The sample frequencies of an n-point DFT with sample spacing d."""
    return _constant(_np.fft.fftfreq(int(n), float(d)).astype(_freq_dtype(dtype)))


def rfftfreq(n, d=1.0, dtype=None, name=None):
    """The non-negative sample frequencies of an n-point rfft."""
    return _constant(_np.fft.rfftfreq(int(n), float(d)).astype(_freq_dtype(dtype)))


def _shift(x, axes, sign, what):
    from .core.ops import roll
    x = _lift(x)
    nd = len(x.shape)
    axes = list(range(nd)) if axes is None else ([axes] if isinstance(axes, int) else list(axes))
    axes = [int(a) % nd for a in axes]
    for a in axes:
        d = x.shape[a]
        if d is None:
            raise ValueError(f"{what}: dim {a} of x {list(x.shape)} is unknown; the shift is "
                             "half its size (give the dim in the InputSpec)")
        x = roll(x, d // 2 if sign > 0 else -(d // 2), a)
    return x


def fftshift(x, axes=None, name=None):
    """The zero frequency moved to the center (roll by n // 2 over `axes`)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift (roll by -(n // 2))."""
    return _shift(x, axes, -1, "ifftshift")
