"""`d2s.linalg`: Paddle's linear-algebra namespace (the ops live in d2s.core.ops)."""
from .core.ops import norm  # noqa: F401
from .core.ops import bmm, einsum, inverse, mm  # noqa: F401
inv = inverse
from .core.ops.linalg_more import matmul_t as matmul  # noqa: F401
from .core.ops.linalg_decomp import (cholesky, det, eig, eigh, eigvals, lu,  # noqa: F401,E402
                                     lu_unpack, pinv, qr, slogdet, solve, svd)
from .core.ops.linalg_funcs import (cholesky_solve, eigvalsh, matrix_norm,  # noqa: F401,E402
                                    matrix_power, matrix_rank, multi_dot, triangular_solve,
                                    vector_norm, lstsq, cond)

__all__ = ["norm", "bmm", "einsum", "inverse", "inv", "mm", "matmul", "cholesky", "det", "eig",
           "eigh", "eigvals", "lu", "lu_unpack", "pinv", "qr", "slogdet", "solve", "svd",
           "cholesky_solve", "eigvalsh", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "triangular_solve", "vector_norm", "lstsq", "cond"]
