"""Batched exact likelihood of a mixture of factor analysers (scoring layer).

``ln p(y_i | theta) = LSE_s [ln pi_s + ln N(y_i; mu_s, Lambda_s Lambda_s^T + Psi)]`` for a
batch of parameter sets, each component evaluated through the matrix inversion and
determinant lemmas with ``M_s = I + Lambda_s^T Psi^{-1} Lambda_s = L_s L_s^T``::

    ln|Lambda Lambda^T + Psi| = sum_q ln psi_q + 2 sum_j ln L_jj
    r^T (Lambda Lambda^T + Psi)^{-1} r = r^T Psi^{-1} r - |L^{-1} Lambda^T Psi^{-1} r|^2

O(p K^2 + K^3) per component and parameter set plus O(p K) per row; memory O(S p K).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import chol_into

__all__ = ["mfa_log_likelihood_per_case"]


@njit(cache=True, nogil=True)
def mfa_log_likelihood_per_case(weights, lam, psi, Z, out):
    """Fill ``out[c, i] = ln p(Z[i] | theta_c)``.

    weights (C, S): mixing proportions; lam (C, S, p, K+1): rows of ``[Lambda_s, mu_s]``
    (centre in the last column); psi (p,): diagonal noise variances; Z (N, p): data;
    out (C, N).  Non-finite parameters give ``nan`` (callers map it to ``-inf``).
    """
    C, S, p, K1 = lam.shape
    K = K1 - 1
    N = Z.shape[0]
    ipsi = 1.0 / psi
    logdet_psi = 0.0
    for q in range(p):
        logdet_psi += np.log(psi[q])
    L = np.zeros((S, K, K))
    M = np.empty((K, K))
    B = np.zeros((S, K, p))
    const = np.zeros(S)
    r = np.zeros(p)
    a = np.zeros(K)
    vals = np.zeros(S)
    for c in range(C):
        for s in range(S):
            # B = Lambda^T Psi^{-1}, M = I + B Lambda = L L^T
            for j in range(K):
                for q in range(p):
                    B[s, j, q] = lam[c, s, q, j] * ipsi[q]
            for j in range(K):
                for l in range(j + 1):
                    acc = 0.0
                    for q in range(p):
                        acc += B[s, j, q] * lam[c, s, q, l]
                    if j == l:
                        acc += 1.0
                    M[j, l] = acc
                    M[l, j] = acc
            if chol_into(M, L[s], False):
                logdet_m = 0.0
                for j in range(K):
                    logdet_m += 2.0 * np.log(L[s, j, j])
            else:  # not positive definite: every row gets NaN
                logdet_m = np.nan
                for j in range(K):
                    L[s, j, j] = np.nan
            const[s] = np.log(weights[c, s]) - 0.5 * (p * LOG_2PI + logdet_psi + logdet_m)
        for i in range(N):
            vmax = -np.inf
            bad = False
            for s in range(S):
                quad = 0.0
                for q in range(p):
                    r[q] = Z[i, q] - lam[c, s, q, K]
                    quad += r[q] * r[q] * ipsi[q]
                for j in range(K):
                    acc = 0.0
                    for q in range(p):
                        acc += B[s, j, q] * r[q]
                    for l in range(j):
                        acc -= L[s, j, l] * a[l]
                    a[j] = acc / L[s, j, j]
                    quad -= a[j] * a[j]
                v = const[s] - 0.5 * quad
                vals[s] = v
                if np.isnan(v):
                    bad = True
                elif v > vmax:
                    vmax = v
            if bad:
                out[c, i] = np.nan
            elif not np.isfinite(vmax):
                out[c, i] = vmax
            else:
                tot = 0.0
                for s in range(S):
                    tot += np.exp(vals[s] - vmax)
                out[c, i] = vmax + np.log(tot)
    return out
