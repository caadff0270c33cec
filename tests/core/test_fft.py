"""d2s.fft (d2s/fft.py, d2s/core/ops/fft_ops.py) and d2s.real / imag /
complex / conj / angle / as_real / as_complex: values vs numpy.fft (scipy.fft
for the n-D Hermitian ones): every norm, crops and pads, odd and even
sizes, 1-D / 2-D / n-D, complex64 kept; gradients by finite differences
through the real and imaginary parts (the adjoint rules), numpy and xla
conversion, unknown dims."""
import numpy as np
import pytest

import d2s
from d2s import fft as F
from ops_check import check

R = np.random.default_rng(8)
A, B = R.standard_normal((3, 6)), R.standard_normal((3, 6))
C3 = R.standard_normal((2, 3, 4))


def _scipy_fft():  # the n-D Hermitian transforms' reference (numpy has the 1-D ones)
    return pytest.importorskip("scipy.fft")


def parts(z):  # d2s: a complex result as its (real, imag) parts
    return d2s.real(z), d2s.imag(z)


def nparts(z):
    return np.real(z).copy(), np.imag(z).copy()


def cplx(a, b):
    return d2s.complex(a, b)


NO = {"onnx": False}
FIRST = {"onnx": False, "unknown": "first"}
CASES = [
    ("fft_crop_pad", lambda a: parts(F.fft(a, 4)) + parts(F.fft(a, 8, norm="ortho")), [A],
     lambda a: nparts(np.fft.fft(a, 4)) + nparts(np.fft.fft(a, 8, norm="ortho")), NO),
    ("ifft_complex_axis0", lambda a, b: parts(F.ifft(cplx(a, b), axis=0, norm="forward")),
     [A, B], lambda a, b: nparts(np.fft.ifft(a + 1j * b, axis=0, norm="forward")), NO),
    ("rfft", lambda a: parts(F.rfft(a)) + parts(F.rfft(a, 5, norm="forward")), [A],
     lambda a: nparts(np.fft.rfft(a)) + nparts(np.fft.rfft(a, 5, norm="forward")), NO),
    ("irfft", lambda a, b: (F.irfft(cplx(a, b)), F.irfft(cplx(a, b), 7, norm="ortho"),
                            F.irfft(cplx(a, b), 4, norm="forward")),
     [A[:, :4], B[:, :4]],
     lambda a, b: (np.fft.irfft(a + 1j * b), np.fft.irfft(a + 1j * b, 7, norm="ortho"),
                   np.fft.irfft(a + 1j * b, 4, norm="forward")), FIRST),
    ("fft2_ifft2", lambda a, b: parts(F.fft2(cplx(a, b), s=(2, 5)))
     + parts(F.ifft2(cplx(a, b), norm="ortho")), [A, B],
     lambda a, b: nparts(np.fft.fft2(a + 1j * b, s=(2, 5)))
     + nparts(np.fft.ifft2(a + 1j * b, norm="ortho")), NO),
    ("rfft2_irfft2", lambda a, b: parts(F.rfft2(a)) + (F.irfft2(cplx(a, b), s=(3, 5)),),
     [A, B], lambda a, b: nparts(np.fft.rfft2(a)) + (np.fft.irfft2(a + 1j * b, s=(3, 5)),),
     NO),
    ("fftn_rfftn_irfftn", lambda c: parts(F.fftn(c, axes=(0, 2))) + parts(F.rfftn(c))
     + (F.irfftn(F.rfftn(c), s=(2, 3, 4)), F.irfftn(cplx(c, c * 2), s=(3, 3), axes=(1, 2))),
     [C3], lambda c: nparts(np.fft.fftn(c, axes=(0, 2))) + nparts(np.fft.rfftn(c))
     + (np.fft.irfftn(np.fft.rfftn(c), s=(2, 3, 4), axes=(0, 1, 2)),
        np.fft.irfftn(c + 2j * c, s=(3, 3), axes=(1, 2))), NO),
    ("ifftn", lambda a, b: parts(F.ifftn(cplx(a, b), s=[4])), [A, B],
     lambda a, b: nparts(np.fft.ifftn(a + 1j * b, s=[4], axes=[-1])), NO),
    ("shift_and_freq", lambda a: (F.fftshift(a), F.ifftshift(a, axes=1), F.fftfreq(5, 0.5),
                                  F.rfftfreq(6, dtype="float64")),
     [R.standard_normal((3, 5))],
     lambda a: (np.fft.fftshift(a), np.fft.ifftshift(a, axes=1),
                np.fft.fftfreq(5, 0.5).astype("float32"), np.fft.rfftfreq(6)),
     {"onnx": False, "unknown_dims": False}),   # (a shift needs its dim's size)
    ("hfft_ihfft", lambda a, b: (F.hfft(cplx(a, b)), F.hfft(cplx(a, b), 7, norm="ortho"))
     + parts(F.ihfft(a, norm="forward")), [A[:, :4], B[:, :4]],
     lambda a, b: (np.fft.hfft(a + 1j * b), np.fft.hfft(a + 1j * b, 7, norm="ortho"))
     + nparts(np.fft.ihfft(a, norm="forward")), FIRST),
    ("hfftn_ihfft2", lambda a, b: (F.hfftn(cplx(a, b)), F.hfft2(cplx(a, b), s=(3, 5)))
     + parts(F.ihfft2(a)), [A[:, :4], B[:, :4]],
     lambda a, b: (_scipy_fft().hfftn(a + 1j * b), _scipy_fft().hfft2(a + 1j * b, s=(3, 5)))
     + nparts(_scipy_fft().ihfft2(a)), {"onnx": False, "unknown_dims": False}),
    ("conj_angle_as_real", lambda a, b: parts(d2s.conj(cplx(a, b)))
     + (d2s.angle(cplx(a, b)), d2s.as_real(cplx(a, b)),
        d2s.real(d2s.as_complex(d2s.stack([a, b], -1))) * 1.0), [A, B],
     lambda a, b: nparts(np.conj(a + 1j * b)) + (np.angle(a + 1j * b),
                                                 np.stack([a, b], -1), a), NO),
    ("complex128_fed", lambda z: (F.fft(z), F.ifft2(z).real(), z.imag(), d2s.abs(F.fft(z))),
     [A + 1j * B], lambda z: (np.fft.fft(z), np.fft.ifft2(z).real.copy(), z.imag.copy(),
                              np.abs(np.fft.fft(z))), NO),
    ("complex64_kept", lambda a: (F.fft(a), F.rfft(a), F.irfft(F.rfft(a), 6)),
     [A.astype("float32")],
     lambda a: (np.fft.fft(a), np.fft.rfft(a), np.fft.irfft(np.fft.rfft(a), 6)),
     {"onnx": False, "rtol": 1e-5}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_fft(case):
    name, fn, arrays, ref, options = case
    check(fn, arrays, ref, **options)


def test_fft_bad_input():
    x = d2s.to_tensor(A)
    with pytest.raises(ValueError, match="norm must be"):
        F.fft(x, norm="none")
    with pytest.raises(TypeError, match="must be real"):
        F.rfft(d2s.complex(x, x))
    with pytest.raises(ValueError, match="differ in length"):
        F.fftn(x, s=[2, 3], axes=[0])


def _spectral_loss(x):
    return d2s.sum(d2s.abs(F.rfft(x, norm="ortho")) ** 1.5) + d2s.sum(d2s.abs(F.fft2(x)))


@pytest.mark.parametrize("backend", [None, "numpy", "xla"])
def test_spectral_loss_gradient(backend):
    """A magnitude-spectrum loss (audio models' STFT losses): its gradient
    through abs of complex values and the transforms' adjoints equals finite
    differences, eagerly and converted."""
    x0 = R.standard_normal((2, 8))

    def ref(x):
        return np.sum(np.abs(np.fft.rfft(x, norm="ortho")) ** 1.5) + np.sum(np.abs(np.fft.fft2(x)))
    fd = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        e = np.zeros_like(x0)
        e[i] = 1e-6
        fd[i] = (ref(x0 + e) - ref(x0 - e)) / 2e-6
    fn = _spectral_loss if backend is None else d2s.jit.to_static(_spectral_loss,
                                                                   backend=backend)
    x = d2s.to_tensor(x0, stop_gradient=False)
    fn(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5, atol=1e-6)
