"""Numba kernel: exact log-likelihood of a Gaussian-emission HMM for a batch of parameters.

Pure array function used by the scoring layer (``sklearn_vb.scoring.models.hmm_gaussian``),
which calls it with every chain's parameters at once.  Emission precisions are given by
their lower Cholesky factors ``L`` (precision ``L L^T``); a diagonal precision is the
special case of a diagonal ``L``.
"""

import numpy as np
from numba import njit

from ._constants import LOG_2PI
from ._linalg import chol_quad


@njit(cache=True, nogil=True)
def gaussian_hmm_log_likelihood_batch(log_pi, log_A, means, prec_chol, X, starts, ends):
    """ln p(sequence s | theta_c) for every parameter set c and sequence s.

    Scaled forward recursion: the emission log-densities of each frame are shifted by
    their maximum over states, the forward vector is renormalised at every step and
    the log normalisers (plus the shifts) are summed, so nothing underflows.

    Parameters
    ----------
    log_pi : (C, K) log initial probabilities.
    log_A : (C, K, K) log transition probabilities (rows = from-state).
    means : (C, K, D) state means.
    prec_chol : (C, K, D, D) lower Cholesky factors of the state precisions.
    X : (T, D) concatenated frames; starts, ends : (S,) int64 sequence offsets.

    Returns
    -------
    seq : (C, S) per-sequence log-likelihoods.
    frame : (C, T) per-frame log normalisers ln p(x_t | x_<t) (they sum to ``seq``);
        after a frame of probability zero the rest of that sequence is left at 0 and
        the sequence total is -inf.
    """
    C, K = log_pi.shape
    T, D = X.shape
    S = starts.shape[0]
    seq = np.zeros((C, S))
    frame = np.zeros((C, T))
    alpha = np.empty(K)
    new = np.empty(K)
    e = np.empty(K)
    const = np.empty(K)
    diff = np.empty(D)
    pi = np.empty(K)
    A = np.empty((K, K))
    for c in range(C):
        for k in range(K):
            s = 0.0
            for i in range(D):
                s += np.log(prec_chol[c, k, i, i])
            const[k] = s - 0.5 * D * LOG_2PI
            pi[k] = np.exp(log_pi[c, k])
            for j in range(K):
                A[k, j] = np.exp(log_A[c, k, j])
        for s_ in range(S):
            t0 = starts[s_]
            t1 = ends[s_]
            total = 0.0
            for t in range(t0, t1):
                m = -np.inf
                for k in range(K):
                    e[k] = const[k] - 0.5 * chol_quad(prec_chol[c, k], X[t], means[c, k], diff)
                    if e[k] > m:
                        m = e[k]
                if not (m > -np.inf):
                    total = m if np.isnan(m) else -np.inf
                    frame[c, t] = total
                    break
                if t == t0:
                    for j in range(K):
                        new[j] = pi[j] * np.exp(e[j] - m)
                else:
                    for j in range(K):
                        acc = 0.0
                        for i in range(K):
                            acc += alpha[i] * A[i, j]
                        new[j] = acc * np.exp(e[j] - m)
                z = 0.0
                for j in range(K):
                    z += new[j]
                if not (z > 0.0):
                    total = -np.inf if z == 0.0 else np.nan
                    frame[c, t] = total
                    break
                lz = np.log(z) + m
                frame[c, t] = lz
                total += lz
                inv = 1.0 / z
                for j in range(K):
                    alpha[j] = new[j] * inv
            seq[c, s_] = total
    return seq, frame
