"""Small dense linear algebra shared by the kernels.

Numba helpers without LAPACK and without allocation: the Kalman kernels
(:mod:`.kalman`) work on ``k x k`` matrices with ``k`` a handful,
where explicit loops into preallocated buffers beat LAPACK calls; the Gaussian-emission
HMM kernels (:mod:`.hmm`, :mod:`.forward_backward`) share the Mahalanobis form of a
Cholesky-factored precision.  Every such routine writes into arrays passed by the caller
and reads only the lower triangle of a factor, so the buffers may hold anything above
the diagonal.  The helpers marked ``inline="always"`` sit in the hot loops: as ordinary
calls they cost measurably at small sizes.

Two inverses of symmetric positive definite matrices, named for their contracts:
:func:`spd_inverse` (numba, one matrix, raises if it is not positive definite) and
:func:`spd_inverse_jittered` (NumPy, a stack of matrices, diagonal jitter as a fallback).

Numba's on-disk cache of a kernel is keyed on the source file of that kernel only: after
editing this module, clear the ``__pycache__`` of the kernels that call it (or touch their
files) so that they are recompiled.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def chol_into(M, L, finite):
    """Lower Cholesky factor of the symmetric part of ``M`` into the lower triangle of
    ``L``; False (``L`` partly written) as soon as a pivot is not positive, or, with
    ``finite``, not finite either."""
    k = M.shape[0]
    for j in range(k):
        s = 0.5 * (M[j, j] + M[j, j])
        for m in range(j):
            s -= L[j, m] * L[j, m]
        if not s > 0.0 or (finite and not np.isfinite(s)):
            return False
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, k):
            s = 0.5 * (M[i, j] + M[j, i])
            for m in range(j):
                s -= L[i, m] * L[j, m]
            L[i, j] = s / L[j, j]
    return True


@njit(cache=True, nogil=True, inline="always")
def chol_inverse_into(L, inv, Linv):
    """``inv = (L L')^{-1}`` (both triangles written) from the lower Cholesky factor
    ``L``; returns ``ln|L L'|``.  ``Linv`` is a work buffer (gets ``L^{-1}``)."""
    k = L.shape[0]
    logdet = 0.0
    for i in range(k):
        Linv[i, i] = 1.0 / L[i, i]
        logdet += 2.0 * np.log(L[i, i])
        for j in range(i):
            s = 0.0
            for m in range(j, i):
                s += L[i, m] * Linv[m, j]
            Linv[i, j] = -s / L[i, i]
    for i in range(k):
        for j in range(i + 1):
            s = 0.0
            for m in range(i, k):
                s += Linv[m, i] * Linv[m, j]
            inv[i, j] = s
            inv[j, i] = s
    return logdet


@njit(cache=True, nogil=True)
def spd_inverse_into(M, inv, L, Linv):
    """Write the inverse of the SPD matrix ``M`` (its symmetric part) into ``inv`` and
    return ``ln|M|``; raises ``LinAlgError`` if ``M`` is not positive definite.
    ``L``, ``Linv`` are work buffers."""
    if not chol_into(M, L, False):
        raise np.linalg.LinAlgError("matrix is not positive definite")
    return chol_inverse_into(L, inv, Linv)


@njit(cache=True, nogil=True)
def spd_inverse(M):
    """Inverse and log-determinant of one symmetric positive definite matrix (its
    symmetric part), by a Cholesky factorisation; raises ``LinAlgError`` if ``M`` is
    not positive definite.  For the small matrices of the LDS, where a LAPACK call
    costs more than the arithmetic."""
    k = M.shape[0]
    inv = np.empty((k, k))
    logdet = spd_inverse_into(M, inv, np.zeros((k, k)), np.zeros((k, k)))
    return inv, logdet


def spd_inverse_jittered(P):
    """Inverse and log-determinant of a stack of symmetric positive definite matrices
    (NumPy, batched over the leading axes; their symmetric parts are used).

    If the Cholesky factorisation fails, a jitter growing tenfold from 1e-12 times the
    largest diagonal entry is added to the diagonal; the inverse is symmetrised.
    """
    P = 0.5 * (P + np.swapaxes(P, -1, -2))
    d = P.shape[-1]
    if d == 0:
        return np.zeros_like(P), np.zeros(P.shape[:-2])
    eye = np.eye(d)
    jitter = 0.0
    for _ in range(8):
        try:
            L = np.linalg.cholesky(P + jitter * eye)
            break
        except np.linalg.LinAlgError:
            scale = np.max(np.abs(np.diagonal(P, axis1=-2, axis2=-1)))
            jitter = max(jitter * 10.0, 1e-12 * max(scale, 1.0))
    else:  # pragma: no cover - only for pathological input
        raise np.linalg.LinAlgError("matrix is not positive definite")
    Linv = np.linalg.inv(L)
    inv = np.swapaxes(Linv, -1, -2) @ Linv
    logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return 0.5 * (inv + np.swapaxes(inv, -1, -2)), logdet


@njit(cache=True, nogil=True, inline="always")
def chol_quad(L, x, mean, diff):
    """``|| L' (x - mean) ||^2`` for a lower triangular ``L`` (the Mahalanobis form of
    the precision ``L L'``); ``diff`` is a work buffer (gets ``x - mean``)."""
    D = x.shape[0]
    for d in range(D):
        diff[d] = x[d] - mean[d]
    q = 0.0
    for col in range(D):
        # (L' diff)_col = sum_{d >= col} L[d, col] diff[d]
        v = 0.0
        for d in range(col, D):
            v += L[d, col] * diff[d]
        q += v * v
    return q


@njit(cache=True, nogil=True)
def mm(X, Y, out):
    """out = X @ Y"""
    n, m = X.shape
    q = Y.shape[1]
    for a in range(n):
        for b in range(q):
            s = 0.0
            for c in range(m):
                s += X[a, c] * Y[c, b]
            out[a, b] = s


@njit(cache=True, nogil=True)
def mmT(X, Y, out):
    """out = X @ Y.T (its own loops: ``mm(X, Y.T, out)`` reads a strided view, slower)"""
    n, m = X.shape
    q = Y.shape[0]
    for a in range(n):
        for b in range(q):
            s = 0.0
            for c in range(m):
                s += X[a, c] * Y[b, c]
            out[a, b] = s


@njit(cache=True, nogil=True)
def mv(X, x, out):
    """out = X @ x"""
    n, m = X.shape
    for a in range(n):
        s = 0.0
        for c in range(m):
            s += X[a, c] * x[c]
        out[a] = s


@njit(cache=True, nogil=True)
def dot(x, y):
    s = 0.0
    for a in range(x.shape[0]):
        s += x[a] * y[a]
    return s


@njit(cache=True)
def log_sum_exp_range(values, a, b):
    """``ln sum_{a <= r < b} exp(values_r)``, shifted by the largest term (e.g. the
    rows of one case: its completions of the unobserved nodes)."""
    mx = -np.inf
    for r in range(a, b):
        if values[r] > mx:
            mx = values[r]
    tot = 0.0
    for r in range(a, b):
        tot += math.exp(values[r] - mx)
    return mx + math.log(tot)
