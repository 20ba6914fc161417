"""Numba kernels for hidden Markov models other than the forward-backward recursions
(:mod:`.forward_backward`): emission weight tables, Viterbi decoding, path sampling.

Frames of all sequences are concatenated and ``starts``/``ends`` (end exclusive) delimit
the sequences.  An emission table holds one row of K state weights per row ``r``, and
``index`` (T,) maps each frame to its row: the symbols for categorical emissions,
``arange(T)`` for continuous ones.
"""

import numpy as np
from numba import njit

from .._core.kernels.linalg import chol_quad


@njit(cache=True, nogil=True, inline="always")
def scale_rows_into(log_w, out, shift, finite_shift):
    """Row-wise ``out = exp(log_w - shift)`` with ``shift`` the row maxima.

    A row without a finite maximum (all -inf, say) gets shift 0 with ``finite_shift``,
    so that it becomes a row of zeros; without it the shift stays the raw maximum, for
    callers that test it.
    """
    R, K = log_w.shape
    for r in range(R):
        m = -np.inf
        for j in range(K):
            if log_w[r, j] > m:
                m = log_w[r, j]
        if finite_shift and not np.isfinite(m):
            m = 0.0
        shift[r] = m
        for j in range(K):
            out[r, j] = np.exp(log_w[r, j] - m)


@njit(cache=True, nogil=True)
def scale_rows(log_w):
    """Row-wise exp(log_w - row max) and the row maxima (0 for a row without a finite
    maximum)."""
    out = np.empty_like(log_w)
    shift = np.empty(log_w.shape[0])
    scale_rows_into(log_w, out, shift, True)
    return out, shift


@njit(cache=True, nogil=True)
def viterbi(log_startprob, log_transmat, log_emis, index, starts, ends):
    """Most probable state path of every sequence under log-weights, with one transition
    matrix (K, K) (:func:`viterbi_levels` with one level)."""
    K = log_startprob.shape[0]
    A3 = np.empty((1, K, K))
    A3[0] = log_transmat
    return viterbi_levels(log_startprob, A3, np.zeros(index.shape[0], dtype=np.int64),
                          log_emis, index, starts, ends)


@njit(cache=True, nogil=True)
def viterbi_levels(log_startprob, log_transmats, level, log_emis, index, starts, ends):
    """Most probable state path of every sequence under log-weights.

    ``log_transmats`` (L, K, K) holds a transition matrix per input level and ``level``
    (T,) the level of every frame (the transition into frame t uses
    ``log_transmats[level[t]]``).  ``log_emis`` (R, K) holds log emission weights,
    ``index`` (T,) maps frames to rows.  Returns the states (T,) and the log-weight of
    each best path (n,).
    """
    K = log_startprob.shape[0]
    T = index.shape[0]
    n = starts.shape[0]
    states = np.empty(T, dtype=np.int64)
    best = np.empty(n)
    back = np.empty((T, K), dtype=np.int32)
    delta = np.empty(K)
    new = np.empty(K)
    for s in range(n):
        t0 = starts[s]
        t1 = ends[s]
        r = index[t0]
        for j in range(K):
            delta[j] = log_startprob[j] + log_emis[r, j]
        for t in range(t0 + 1, t1):
            r = index[t]
            lv = level[t]
            for j in range(K):
                m = -np.inf
                arg = 0
                for i in range(K):
                    v = delta[i] + log_transmats[lv, i, j]
                    if v > m:
                        m = v
                        arg = i
                new[j] = m + log_emis[r, j]
                back[t, j] = arg
            for j in range(K):
                delta[j] = new[j]
        m = -np.inf
        arg = 0
        for j in range(K):
            if delta[j] > m:
                m = delta[j]
                arg = j
        best[s] = m
        states[t1 - 1] = arg
        for t in range(t1 - 1, t0, -1):
            arg = back[t, arg]
            states[t - 1] = arg
    return states, best


@njit(cache=True, nogil=True)
def sample_states(startprob, transmat, uniforms, starts, ends):
    """Draw state paths by inverse-CDF sampling from pre-drawn uniforms (T,), with one
    transition matrix (K, K) (:func:`sample_states_levels` with one level)."""
    K = startprob.shape[0]
    A3 = np.empty((1, K, K))
    A3[0] = transmat
    return sample_states_levels(startprob, A3, np.zeros(uniforms.shape[0], dtype=np.int64),
                                uniforms, starts, ends)


@njit(cache=True, nogil=True)
def sample_states_levels(startprob, transmats, level, uniforms, starts, ends):
    """Draw state paths by inverse-CDF sampling from pre-drawn uniforms (T,); the step
    into frame t uses ``transmats[level[t]]`` (L, K, K)."""
    K = startprob.shape[0]
    T = uniforms.shape[0]
    states = np.empty(T, dtype=np.int64)
    for s in range(starts.shape[0]):
        prev = -1
        for t in range(starts[s], ends[s]):
            u = uniforms[t]
            acc = 0.0
            pick = K - 1
            lv = level[t]
            for j in range(K):
                acc += startprob[j] if prev < 0 else transmats[lv, prev, j]
                if u < acc:
                    pick = j
                    break
            states[t] = pick
            prev = pick
    return states


@njit(cache=True, nogil=True, inline="always")
def gaussian_full_log_weights_into(X, means, prec_chol, const, out):
    """``out[t, k] = const[k] - 0.5 * || prec_chol[k]^T (x_t - means[k]) ||^2``: log
    emission weights (T, K) of full-covariance Gaussian states, where prec_chol[k] is
    the lower Cholesky factor of the (expected) precision."""
    T, D = X.shape
    K = means.shape[0]
    diff = np.empty(D)
    for t in range(T):
        for k in range(K):
            out[t, k] = const[k] - 0.5 * chol_quad(prec_chol[k], X[t], means[k], diff)


@njit(cache=True, nogil=True)
def gaussian_full_log_weights(X, means, prec_chol, const):
    """Log emission weights of full-covariance Gaussian states, (T, K); see
    :func:`gaussian_full_log_weights_into`."""
    out = np.empty((X.shape[0], means.shape[0]))
    gaussian_full_log_weights_into(X, means, prec_chol, const, out)
    return out


@njit(cache=True, nogil=True)
def gaussian_diag_log_weights(X, means, prec, const):
    """As :func:`gaussian_full_log_weights` for diagonal precisions ``prec`` (K, D)."""
    T, D = X.shape
    K = means.shape[0]
    out = np.empty((T, K))
    for t in range(T):
        for k in range(K):
            q = 0.0
            for d in range(D):
                v = X[t, d] - means[k, d]
                q += prec[k, d] * v * v
            out[t, k] = const[k] - 0.5 * q
    return out


@njit(cache=True)
def gaussian_diag_log_weights_missing(X, means, prec, const_d):
    """As :func:`gaussian_diag_log_weights` over the observed entries of every frame only
    (a NaN entry is missing and drops out), with the per-dimension constants
    ``const_d`` (K, D): the log-density of the marginal of the observed dimensions.  A
    frame with every entry missing gets 0 (likelihood 1) in every state."""
    T, D = X.shape
    K = means.shape[0]
    out = np.empty((T, K))
    for t in range(T):
        for k in range(K):
            s = 0.0
            for d in range(D):
                x = X[t, d]
                if x == x:  # not NaN
                    v = x - means[k, d]
                    s += const_d[k, d] - 0.5 * prec[k, d] * v * v
            out[t, k] = s
    return out
