"""Products built on `matmul`: Paddle's matmul signature (transpose_x /
transpose_y), mm, bmm and einsum. Each is transposes, reshapes, sums and
matmuls: gradients and backend forms are those ops'."""
from __future__ import annotations

import functools

import numpy as np

from ._base import lift
from .linalg import matmul

__all__ = ["matmul_t", "mm", "bmm", "einsum", "inverse"]


def _swap_last(x):
    from .manipulation import transpose
    n = len(x.shape)
    if n < 2:
        return x  # a vector is its own transpose (Paddle ignores the flag for 1-D)
    return transpose(x, list(range(n - 2)) + [n - 1, n - 2])


def matmul_t(x, y, transpose_x=False, transpose_y=False, name=None):
    """Paddle's `matmul`: `x @ y`, after swapping the last two dims of x
    (`transpose_x`) and/or y (`transpose_y`); NumPy's rules for 1-D operands
    and broadcast batch dims."""
    if transpose_x:
        x = _swap_last(lift(x))
    if transpose_y:
        y = _swap_last(lift(y))
    return matmul(x, y)


def mm(input, mat2, name=None):
    """The matrix product `input @ mat2`."""
    return matmul(input, mat2)


def bmm(x, y, name=None):
    """Batched matrix product of 3-D tensors with the same batch size."""
    x, y = lift(x), lift(y)
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise ValueError(f"bmm: x and y must be 3-D, got {tuple(x.shape)} and {tuple(y.shape)}")
    if None not in (x.shape[0], y.shape[0]) and x.shape[0] != y.shape[0]:
        raise ValueError(f"bmm: batch sizes differ: {tuple(x.shape)} and {tuple(y.shape)}")
    return matmul(x, y)


# ---- einsum ------------------------------------------------------------------------------
def _parse(equation, operands):
    subs, out = _parse_ranks(equation, tuple(len(x.shape) for x in operands))
    return list(subs), out


@functools.lru_cache(maxsize=256)
def _parse_ranks(equation, ranks):
    """`_parse` for operands of these ranks (all the subscripts depend on):
    remembered, since a model calls the same einsum on every step."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
        explicit = True
    else:
        lhs, out, explicit = eq, None, False
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: {equation!r} names {len(terms)} operands, got "
                         f"{len(ranks)}")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    n_ell = 0
    for t, rank in zip(terms, ranks):
        if "..." in t:
            n_ell = max(n_ell, rank - (len(t) - 3))
    ell = "".join(spare[:n_ell])
    subs = []
    for t, rank in zip(terms, ranks):
        if "..." in t:
            k = rank - (len(t) - 3)
            t = t.replace("...", ell[n_ell - k:] if k else "")
        if len(t) != rank or not t.isalpha() and t:
            raise ValueError(f"einsum: subscripts {t!r} do not fit an operand of rank "
                             f"{rank}")
        if len(set(t)) != len(t):
            raise NotImplementedError(f"einsum: a subscript repeated within one operand "
                                      f"({t!r}, a diagonal) is not supported")
        subs.append(t)
    if explicit:
        out = out.replace("...", ell)
    else:
        counts = {}
        for t in subs:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    for c in out:
        if not any(c in t for t in subs):
            raise ValueError(f"einsum: output subscript {c!r} names no operand dim")
    if len(set(out)) != len(out):
        raise ValueError(f"einsum: output subscripts {out!r} repeat a letter")
    return tuple(subs), out


def _dims_of(x, letters):
    from .search import _dim
    return {c: _dim(x, i) for i, c in enumerate(letters)}


def _product(values):
    out = 1
    for v in values:
        out = v * out if not isinstance(out, int) or not isinstance(v, int) else out * v
    return out


def _contract(a, sa, b, sb, keep):
    """a (letters sa) times b (letters sb), summing the letters in both that
    `keep` does not hold; -> (result, its letters)."""
    from .manipulation import reshape, transpose
    batch = [c for c in sa if c in sb and c in keep]
    inner = [c for c in sa if c in sb and c not in keep]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    if len(free_a) != 1 or len(free_b) != 1 or len(inner) != 1:  # the dims, read before the transposes (run-time values where unknown)
        da, db = _dims_of(a, sa), _dims_of(b, sb)
    order_a = batch + free_a + inner
    order_b = batch + inner + free_b
    if list(sa) != order_a:
        a = transpose(a, [sa.index(c) for c in order_a])
    if list(sb) != order_b:
        b = transpose(b, [sb.index(c) for c in order_b])
    nb = len(batch)
    # (one free and one summed letter per operand, as in "bij,bjk->bik": the
    # operands already are matmul's, and reshapes that change nothing are ops
    # every call would run)
    if len(free_a) != 1 or len(inner) != 1:
        a = reshape(a, [0] * nb + [_product(da[c] for c in free_a),
                                   _product(da[c] for c in inner)])
    if len(free_b) != 1 or len(inner) != 1:
        b = reshape(b, [0] * nb + [_product(db[c] for c in inner),
                                   _product(db[c] for c in free_b)])
    out = matmul(a, b)
    if len(free_a) != 1 or len(free_b) != 1:
        out = reshape(out, [0] * nb + [da[c] for c in free_a] + [db[c] for c in free_b])
    return out, "".join(batch + free_a + free_b)


def einsum(equation, *operands):
    """Einstein summation over one or more operands (`"bij,bjk->bik"`,
    `"i,j->ij"`, `"...ij->...ji"`, implicit outputs): sums of unshared
    letters, then pairwise products by `matmul`. A letter repeated within
    one operand (a diagonal) is not supported."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    xs = [lift(x) for x in operands]
    if not xs:
        raise ValueError("einsum: needs at least one operand")
    ranks = tuple(len(x.shape) for x in xs)
    empty = any(d == 0 for x in xs for d in x.shape)
    if not empty and _is_matmul(equation, ranks):
        return matmul(xs[0], xs[1])
    subs, out = _parse(equation, xs)
    return _einsum(xs, subs, out, empty)


@functools.lru_cache(maxsize=256)
def _is_matmul(equation, ranks):
    """Whether the equation, on operands of these ranks, is `matmul(a, b)`
    itself: "ij,jk->ik", "bij,bjk->bik", "...ij,...jk->...ik", and a batch on
    one side only, which matmul broadcasts ("bsd,dh->bsh", "ij,bjk->bik").
    The general plan would transpose and reshape to get there (steps an eager
    call pays for each time)."""
    subs, out = _parse_ranks(equation, ranks)
    if len(subs) != 2:
        return False
    sa, sb = subs
    if len(sa) < 2 or len(sb) < 2:
        return False  # a vector operand
    (i, j), (j2, k) = sa[-2:], sb[-2:]
    batch_a, batch_b = sa[:-2], sb[:-2]
    if j != j2 or j in out or i == k or i in sb or k in sa:
        return False
    if batch_a and batch_b and batch_a != batch_b:
        return False
    return out == (batch_a or batch_b) + i + k


def _einsum(xs, subs, out, empty):
    """`einsum` of lifted operands with their parsed subscripts."""
    from .manipulation import transpose
    from .reduction import sum as _sum
    if empty:
        # a zero-size dim is either in the output (an empty result) or summed
        # over (zeros): the result is zeros either way
        from .creation import zeros
        from .search import _dim
        sizes = {}
        for x, s in zip(xs, subs):  # a known dim other than 1 wins (1s broadcast)
            for i, c in enumerate(s):
                d = x.shape[i]
                if c not in sizes or sizes[c] == 1 or sizes[c] is None and d is not None:
                    sizes[c] = d
        for x, s in zip(xs, subs):  # dims still unknown: read at run time
            for i, c in enumerate(s):
                if sizes[c] is None:
                    sizes[c] = _dim(x, i)
        dtype = np.result_type(*(np.dtype(x.dtype) for x in xs))
        return zeros([sizes[c] for c in out], dtype)
    # sum away the letters only one operand has and the output lacks
    for i, (x, s) in enumerate(zip(xs, subs)):
        others = set(out).union(*(set(t) for j, t in enumerate(subs) if j != i))
        lone = [k for k, c in enumerate(s) if c not in others]
        if lone:
            xs[i] = _sum(x, lone)
            subs[i] = "".join(c for c in s if c in others)
    acc, sacc = xs[0], subs[0]
    for i in range(1, len(xs)):
        keep = set(out).union(*(set(t) for t in subs[i + 1:]))
        acc, sacc = _contract(acc, sacc, xs[i], subs[i], keep)
    extra = [k for k, c in enumerate(sacc) if c not in out]
    if extra:  # a letter shared only by operands folded together earlier
        acc = _sum(acc, extra)
        sacc = "".join(c for c in sacc if c in out)
    if sacc != out:
        acc = transpose(acc, [sacc.index(c) for c in out])
    return acc


# ---- inverse (a primitive) ---------------------------------------------------------------
def _inverse_kernel(x):
    return np.linalg.inv(x)


def _inverse_infer(x):
    from ..registry import Aval
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"inverse: x must be at least 2-D, got {shape}")
    a, b = shape[-2:]
    if a is not None and b is not None and a != b:
        raise ValueError(f"inverse: the last two dims of x {shape} must be square")
    return Aval(shape, np.linalg.inv(np.eye(2, dtype=x.dtype)).dtype)


def _inverse_vjp(g, out, x):
    """d(X^-1) = -X^-1 dX X^-1, so the cotangent is -out^T g out^T."""
    from ._base import cast_like
    t = _swap_last(out)
    return (cast_like(-matmul(matmul(t, g), t), x),)


def _register_inverse():
    from ..registry import register_op
    register_op("inverse", _inverse_kernel, _inverse_infer, _inverse_vjp, checks=True)


_register_inverse()


def inverse(x, name=None):
    """The inverse of each square matrix in the last two dims of `x` (a
    singular one raises numpy's LinAlgError)."""
    from ..dispatch import bind
    x = lift(x)
    _inverse_infer(x)  # the shape checks, eagerly too
    return bind("inverse", x)
