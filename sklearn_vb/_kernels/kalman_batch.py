"""Exact Kalman-filter log-likelihood of a linear dynamical system for a batch of
parameter sets (numba kernel).

Model, as in :mod:`sklearn_vb._kernels.kalman`::

    x_0 ~ N(mu0, Sigma0),   x_t = A x_{t-1} + B us_t + w_t,  w_t ~ N(0, I_k)
    y_t = C x_t + D uo_t + v_t,                              v_t ~ N(0, diag(1/rho))

``ln p(y_{1:T} | theta)`` is the prediction-error decomposition
``sum_t ln N(y_t; C m_t + D uo_t, C P_t C' + diag(1/rho))`` with the predicted belief
``N(m_t, P_t)`` of ``x_t`` given ``y_{1:t-1}``.  The update is done in information form
(``Sigma_t = (P_t^{-1} + C' R^{-1} C)^{-1}``, matrix determinant lemma for the innovation
log-determinant), so the cost per step is ``O(k^3 + p k^2)`` and no ``p x p`` matrix is
ever factorised.  A parameter set for which a covariance stops being positive definite
or a value overflows gets ``-inf`` for that sequence.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._constants import LOG_2PI
from ._linalg import chol_into, chol_inverse_into


@njit(cache=True, nogil=True)
def _chol_inv_logdet(M, inv, L, Linv):
    """Inverse of the SPD matrix ``M`` into ``inv``; returns (ok, ln|M|), ok False if
    ``M`` is not positive definite or a pivot overflows."""
    if not chol_into(M, L, True):
        return False, 0.0
    return True, chol_inverse_into(L, inv, Linv)


@njit(cache=True, nogil=True)
def lds_log_likelihood_terms(A, B, C, D, rho, Y, Us, Uo, starts, ends, mu0, Sigma0, out):
    """Write ``ln p(y_t | y_{1:t-1}, theta_c)`` into ``out[c, t]``.

    Parameters
    ----------
    A : (n_theta, k, k);  B : (n_theta, k, ds);  C : (n_theta, p, k);
    D : (n_theta, p, do);  rho : (n_theta, p) output noise precisions.
    Y : (N, p) outputs;  Us : (N, ds) state inputs;  Uo : (N, do) output inputs.
    starts, ends : (n,) row offsets of the sequences (end exclusive).
    mu0, Sigma0 : (k,), (k, k) prior of the auxiliary state x_0 of every sequence.
    out : (n_theta, N) output.  Every row of a sequence whose filter broke down
        (non-positive-definite covariance, overflow, rho <= 0) is set to -inf.
    """
    n_theta = A.shape[0]
    N, p = Y.shape
    k = A.shape[1]
    ds = Us.shape[1]
    do = Uo.shape[1]
    mu = np.empty(k)
    Sig = np.empty((k, k))
    AS = np.empty((k, k))
    P = np.empty((k, k))
    Pinv = np.empty((k, k))
    Lam = np.empty((k, k))
    CRC = np.empty((k, k))
    L = np.empty((k, k))
    Linv = np.empty((k, k))
    m = np.empty(k)
    v = np.empty(k)
    e = np.empty(p)
    for c in range(n_theta):
        ok_theta = True
        sum_log_rho = 0.0
        for s in range(p):
            if not rho[c, s] > 0.0:
                ok_theta = False
            else:
                sum_log_rho += np.log(rho[c, s])
        for a in range(k):
            for b in range(k):
                acc = 0.0
                for s in range(p):
                    acc += C[c, s, a] * rho[c, s] * C[c, s, b]
                CRC[a, b] = acc
        for i in range(starts.shape[0]):
            t0, t1 = starts[i], ends[i]
            if not ok_theta:
                for t in range(t0, t1):
                    out[c, t] = -np.inf
                continue
            for a in range(k):
                mu[a] = mu0[a]
                for b in range(k):
                    Sig[a, b] = Sigma0[a, b]
            ok = True
            for t in range(t0, t1):
                # predict: m = A mu + B us_t,  P = A Sig A' + I
                for a in range(k):
                    acc = 0.0
                    for b in range(k):
                        acc += A[c, a, b] * mu[b]
                    for b in range(ds):
                        acc += B[c, a, b] * Us[t, b]
                    m[a] = acc
                for a in range(k):
                    for b in range(k):
                        acc = 0.0
                        for q in range(k):
                            acc += A[c, a, q] * Sig[q, b]
                        AS[a, b] = acc
                for a in range(k):
                    for b in range(a + 1):
                        acc = 0.0
                        for q in range(k):
                            acc += AS[a, q] * A[c, b, q]
                        P[a, b] = acc
                        P[b, a] = acc
                    P[a, a] += 1.0
                ok, ld_P = _chol_inv_logdet(P, Pinv, L, Linv)
                if not ok:
                    break
                # information-form update
                for a in range(k):
                    for b in range(k):
                        Lam[a, b] = Pinv[a, b] + CRC[a, b]
                ok, ld_Lam = _chol_inv_logdet(Lam, Sig, L, Linv)
                if not ok:
                    break
                quad = 0.0
                for s in range(p):
                    acc = Y[t, s]
                    for b in range(k):
                        acc -= C[c, s, b] * m[b]
                    for b in range(do):
                        acc -= D[c, s, b] * Uo[t, b]
                    e[s] = acc
                    quad += rho[c, s] * acc * acc
                for a in range(k):
                    acc = 0.0
                    for s in range(p):
                        acc += C[c, s, a] * rho[c, s] * e[s]
                    v[a] = acc  # C' R^{-1} e
                for a in range(k):
                    acc = 0.0
                    for b in range(k):
                        acc += Sig[a, b] * v[b]
                    mu[a] = m[a] + acc
                    quad -= v[a] * acc
                val = -0.5 * (p * LOG_2PI + ld_P + ld_Lam - sum_log_rho + quad)
                if not np.isfinite(val):
                    ok = False
                    break
                out[c, t] = val
            if not ok:
                for t in range(t0, t1):
                    out[c, t] = -np.inf
    return out
