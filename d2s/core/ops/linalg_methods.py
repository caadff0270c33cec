"""Paddle's Tensor methods for the linear algebra and complex functions of
this package (`x.cholesky()`, `x.solve(y)`, `x.real()`, ...), attached to
the methods shared by eager Tensors and static Variables. Kept beside the
functions (not in core/methods.py) so the families stay independent; a
method another module already defines is left as it is."""
from __future__ import annotations

from ..methods import TensorMethods
from . import fft_ops, linalg_decomp as D, linalg_funcs as F


def _methods():
    return {
        "cholesky": lambda self, upper=False, name=None: D.cholesky(self, upper),
        "qr": lambda self, mode="reduced", name=None: D.qr(self, mode),
        "lu": lambda self, pivot=True, get_infos=False, name=None: D.lu(self, pivot, get_infos),
        "lu_unpack": lambda self, y, unpack_ludata=True, unpack_pivots=True, name=None:
            D.lu_unpack(self, y, unpack_ludata, unpack_pivots),
        "solve": lambda self, y, name=None: D.solve(self, y),
        "eig": lambda self, name=None: D.eig(self),
        "eigvals": lambda self, name=None: D.eigvals(self),
        "matrix_power": lambda self, n, name=None: F.matrix_power(self, n),
        "eigvalsh": lambda self, UPLO="L", name=None: F.eigvalsh(self, UPLO),
        "cholesky_solve": lambda self, y, upper=False, name=None:
            F.cholesky_solve(self, y, upper),
        "triangular_solve": lambda self, y, upper=True, transpose=False, unitriangular=False,
            name=None: F.triangular_solve(self, y, upper, transpose, unitriangular),
        "lstsq": lambda self, y, rcond=None, driver=None, name=None:
            F.lstsq(self, y, rcond, driver),
        "real": lambda self, name=None: fft_ops.real(self),
        "imag": lambda self, name=None: fft_ops.imag(self),
        "conj": lambda self, name=None: fft_ops.conj(self),
        "angle": lambda self, name=None: fft_ops.angle(self),
        "as_real": lambda self, name=None: fft_ops.as_real(self),
        "as_complex": lambda self, name=None: fft_ops.as_complex(self),
    }


for _name, _fn in _methods().items():
    if not hasattr(TensorMethods, _name):
        _fn.__name__ = _name
        setattr(TensorMethods, _name, _fn)
