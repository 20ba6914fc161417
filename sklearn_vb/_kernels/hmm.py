"""Numba kernels for hidden Markov models: scaled forward-backward, Viterbi, sampling.

Every kernel processes *all* sequences in one call: the frames of the sequences are
concatenated and ``starts``/``ends`` (end exclusive) delimit them.  Parameters are given
as log-weights; they need not be normalised, so the same routine serves the
variational E step (sub-normalised weights exp E[ln theta]) and the ordinary E step /
forward algorithm (normalised weights).

Emission weights are passed as a table ``emis`` of shape (R, K) of *scaled* weights
with per-row log shifts ``emis_shift`` (R,), plus an index ``index`` (T,) that maps each
frame to a row: the emission weight of state j at frame t is
``emis[index[t], j] * exp(emis_shift[index[t]])``.  For categorical emissions R is the
alphabet size and ``index`` the symbols; for continuous emissions R = T and ``index`` is
``arange(T)``.  The same indexing accumulates the expected emission counts
(``emis_counts[index[t]] += gamma_t``), so for continuous emissions ``emis_counts`` is
the (T, K) matrix of smoothed state marginals.

Scaling: the forward variables are normalised at every step (Rabiner's scaling) and the
log normalisers are summed, so nothing underflows however long the sequence is.
"""

import numpy as np
from numba import njit

from ._linalg import chol_quad


@njit(cache=True, nogil=True)
def scale_log_weights(log_w):
    """exp(log_w - max) and the max, for a 2-D array of log-weights (rows scaled jointly)."""
    shift = -np.inf
    for i in range(log_w.shape[0]):
        for j in range(log_w.shape[1]):
            if log_w[i, j] > shift:
                shift = log_w[i, j]
    out = np.empty_like(log_w)
    for i in range(log_w.shape[0]):
        for j in range(log_w.shape[1]):
            out[i, j] = np.exp(log_w[i, j] - shift)
    return out, shift


@njit(cache=True, nogil=True)
def scale_rows(log_w):
    """Row-wise exp(log_w - row max) and the row maxima."""
    R, K = log_w.shape
    out = np.empty_like(log_w)
    shift = np.empty(R)
    for r in range(R):
        m = -np.inf
        for j in range(K):
            if log_w[r, j] > m:
                m = log_w[r, j]
        if not np.isfinite(m):
            m = 0.0
        shift[r] = m
        for j in range(K):
            out[r, j] = np.exp(log_w[r, j] - m)
    return out, shift


@njit(cache=True, nogil=True)
def _fb_arrays(n, T, K, R, want_posteriors):
    """Outputs of the forward-backward kernels (log_norm, frame_log_norm, start_counts,
    trans_counts, emis_counts) and the (T, K) table of forward variables; without
    posteriors, emis_counts is (0, K) and the forward table keeps two rows only."""
    log_norm = np.zeros(n)
    frame_log_norm = np.empty(T)
    start_counts = np.zeros(K)
    trans_counts = np.zeros((K, K))
    if want_posteriors:
        emis_counts = np.zeros((R, K))
        fwd = np.empty((T, K))
    else:
        emis_counts = np.zeros((0, K))
        fwd = np.empty((2, K))
    return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts, fwd


@njit(cache=True, nogil=True)
def forward_backward(log_startprob, log_transmat, emis, emis_shift, index, starts, ends,
                     want_posteriors):
    """Scaled forward-backward over all sequences.

    Parameters
    ----------
    log_startprob : (K,) log initial weights.
    log_transmat : (K, K) log transition weights, rows = from-state.
    emis, emis_shift, index : emission table (R, K), row log shifts (R,), frame -> row (T,).
    starts, ends : (n,) int64 sequence offsets (end exclusive).
    want_posteriors : if False only the forward pass runs.

    Returns
    -------
    log_norm : (n,) ln Z of each sequence (the sum of the log per-step normalisers).
    frame_log_norm : (T,) per-step log normalisers ln zeta_t (they sum to ln Z).
    start_counts : (K,) sum over sequences of gamma at the first frame.
    trans_counts : (K, K) sum over sequences and t >= 2 of xi_t.
    emis_counts : (R, K) sum of gamma_t over the frames mapped to each row.
    """
    K = log_startprob.shape[0]
    T = index.shape[0]
    n = starts.shape[0]
    R = emis.shape[0]

    pi_max = -np.inf
    for j in range(K):
        if log_startprob[j] > pi_max:
            pi_max = log_startprob[j]
    pi = np.empty(K)
    for j in range(K):
        pi[j] = np.exp(log_startprob[j] - pi_max)
    A, a_shift = scale_log_weights(log_transmat)

    log_norm, frame_log_norm, start_counts, trans_counts, emis_counts, alpha = _fb_arrays(
        n, T, K, R, want_posteriors)
    zeta = np.empty(T) if want_posteriors else np.empty(0)

    a = np.empty(K)
    beta = np.empty(K)
    tmp = np.empty(K)
    for s in range(n):
        t0 = starts[s]
        t1 = ends[s]
        # ---------------- forward
        prev = 0
        total = 0.0
        for t in range(t0, t1):
            r = index[t]
            if t == t0:
                for j in range(K):
                    a[j] = pi[j] * emis[r, j]
                shift = pi_max + emis_shift[r]
            else:
                for j in range(K):
                    a[j] = 0.0
                for i in range(K):
                    ai = alpha[prev, i]
                    if ai != 0.0:
                        for j in range(K):
                            a[j] += ai * A[i, j]
                for j in range(K):
                    a[j] *= emis[r, j]
                shift = a_shift + emis_shift[r]
            z = 0.0
            for j in range(K):
                z += a[j]
            cur = t if want_posteriors else (t - t0) % 2
            if z > 0.0:
                inv = 1.0 / z
                for j in range(K):
                    alpha[cur, j] = a[j] * inv
                lz = np.log(z) + shift
            else:
                for j in range(K):
                    alpha[cur, j] = 1.0 / K
                lz = -np.inf
            if want_posteriors:
                zeta[t] = z
            frame_log_norm[t] = lz
            total += lz
            prev = cur
        log_norm[s] = total
        if not want_posteriors:
            continue
        # ---------------- backward (scaled beta), marginals accumulated on the fly
        for j in range(K):
            beta[j] = 1.0
        last = t1 - 1
        r = index[last]
        for j in range(K):
            emis_counts[r, j] += alpha[last, j]
        for t in range(last - 1, t0 - 1, -1):
            rn = index[t + 1]
            zn = zeta[t + 1]
            inv = 1.0 / zn if zn > 0.0 else 0.0
            for j in range(K):
                tmp[j] = emis[rn, j] * beta[j] * inv
            g_sum = 0.0
            for i in range(K):
                acc = 0.0
                ai = alpha[t, i]
                for j in range(K):
                    x = A[i, j] * tmp[j]
                    acc += x
                    trans_counts[i, j] += ai * x
                beta[i] = acc
                g_sum += ai * acc
            r = index[t]
            ginv = 1.0 / g_sum if g_sum > 0.0 else 0.0
            for i in range(K):
                emis_counts[r, i] += alpha[t, i] * beta[i] * ginv
                if t == t0:
                    start_counts[i] += alpha[t, i] * beta[i] * ginv
        if t1 - t0 == 1:
            for j in range(K):
                start_counts[j] += alpha[t0, j]
    return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts


@njit(cache=True, nogil=True)
def _logsumexp(v):
    m = -np.inf
    for x in v:
        if x > m:
            m = x
    if not np.isfinite(m):
        return m
    acc = 0.0
    for x in v:
        acc += np.exp(x - m)
    return m + np.log(acc)


@njit(cache=True, nogil=True)
def forward_backward_log(log_startprob, log_transmat, log_emis, index, starts, ends,
                         want_posteriors):
    """Forward-backward entirely in log space; same outputs as :func:`forward_backward`.

    ``log_emis`` (R, K) holds the (unscaled) log emission weights.  Every product of
    the scaled recursion becomes a sum of logs and every sum a log-sum-exp, so weights
    far below the smallest double (exp E[ln theta] of very weak Dirichlet posteriors,
    e.g. exp(-1200)) are handled exactly.  Costs one exp per (t, i, j) instead of a
    multiplication; :func:`forward_backward` is the fast path.

    The loops follow :func:`forward_backward` step for step (same skeleton, log-space
    arithmetic), so that a change to one is easily carried to the other.
    """
    K = log_startprob.shape[0]
    T = index.shape[0]
    n = starts.shape[0]
    R = log_emis.shape[0]
    log_norm, frame_log_norm, start_counts, trans_counts, emis_counts, la = _fb_arrays(
        n, T, K, R, want_posteriors)
    a = np.empty(K)
    col = np.empty(K)
    lb = np.empty(K)
    lb_new = np.empty(K)
    for s in range(n):
        t0 = starts[s]
        t1 = ends[s]
        total = 0.0
        prev = 0
        for t in range(t0, t1):
            r = index[t]
            if t == t0:
                for j in range(K):
                    a[j] = log_startprob[j] + log_emis[r, j]
            else:
                for j in range(K):
                    for i in range(K):
                        col[i] = la[prev, i] + log_transmat[i, j]
                    a[j] = _logsumexp(col) + log_emis[r, j]
            lz = _logsumexp(a)
            cur = t if want_posteriors else (t - t0) % 2
            if np.isfinite(lz):
                for j in range(K):
                    la[cur, j] = a[j] - lz
            else:
                for j in range(K):
                    la[cur, j] = -np.log(K)
            frame_log_norm[t] = lz
            total += lz
            prev = cur
        log_norm[s] = total
        if not want_posteriors:
            continue
        for j in range(K):
            lb[j] = 0.0
        last = t1 - 1
        r = index[last]
        for j in range(K):
            emis_counts[r, j] += np.exp(la[last, j])
        for t in range(last - 1, t0 - 1, -1):
            rn = index[t + 1]
            lzn = frame_log_norm[t + 1]
            for j in range(K):
                col[j] = log_emis[rn, j] + lb[j] - lzn
            for i in range(K):
                for j in range(K):
                    a[j] = log_transmat[i, j] + col[j]
                lb_new[i] = _logsumexp(a)
                for j in range(K):
                    trans_counts[i, j] += np.exp(la[t, i] + a[j])
            for i in range(K):
                lb[i] = lb_new[i]
                a[i] = la[t, i] + lb[i]
            lg = _logsumexp(a)  # 0 up to round-off; renormalise as the scaled kernel does
            r = index[t]
            for i in range(K):
                g = np.exp(a[i] - lg)
                emis_counts[r, i] += g
                if t == t0:
                    start_counts[i] += g
        if t1 - t0 == 1:
            for j in range(K):
                start_counts[j] += np.exp(la[t0, j])
    return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts


@njit(cache=True, nogil=True)
def viterbi(log_startprob, log_transmat, log_emis, index, starts, ends):
    """Most probable state path of every sequence under log-weights.

    ``log_emis`` (R, K) holds log emission weights, ``index`` (T,) maps frames to rows.
    Returns the states (T,) and the log-weight of each best path (n,).
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
            for j in range(K):
                m = -np.inf
                arg = 0
                for i in range(K):
                    v = delta[i] + log_transmat[i, j]
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
    """Draw state paths by inverse-CDF sampling from pre-drawn uniforms (T,)."""
    K = startprob.shape[0]
    T = uniforms.shape[0]
    states = np.empty(T, dtype=np.int64)
    for s in range(starts.shape[0]):
        prev = -1
        for t in range(starts[s], ends[s]):
            u = uniforms[t]
            acc = 0.0
            pick = K - 1
            for j in range(K):
                acc += startprob[j] if prev < 0 else transmat[prev, j]
                if u < acc:
                    pick = j
                    break
            states[t] = pick
            prev = pick
    return states


@njit(cache=True, nogil=True)
def gaussian_full_log_weights(X, means, prec_chol, const):
    """Log emission weights of full-covariance Gaussian states, (T, K).

    log w[t, k] = const[k] - 0.5 * || prec_chol[k]^T (x_t - means[k]) ||^2, where
    prec_chol[k] is the lower Cholesky factor of the (expected) precision.
    """
    T, D = X.shape
    K = means.shape[0]
    out = np.empty((T, K))
    diff = np.empty(D)
    for t in range(T):
        for k in range(K):
            out[t, k] = const[k] - 0.5 * chol_quad(prec_chol[k], X[t], means[k], diff)
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


@njit(cache=True, nogil=True)
def gaussian_full_log_emissions(X, means, prec_chol, const):
    """Row-scaled weights (T, K) and row shifts (T,) of :func:`gaussian_full_log_weights`."""
    return scale_rows(gaussian_full_log_weights(X, means, prec_chol, const))

