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


@njit(cache=True, nogil=True)
def collapsed_predictive_smc(w_pi, w_A, w_B, symbols, starts, ends, n_particles, seed,
                             resample_below):
    """ln of a sequential Monte Carlo estimate of ``p(x_s) = E_q[p(x_s | pi, A, B)]`` for
    every sequence s, with Dirichlet rows q(pi) = Dir(w_pi), q(A_j) = Dir(w_A[j]) and
    q(B_k) = Dir(w_B[k]) integrated out (each sequence on its own).

    With the rows integrated out the state path is a Markov chain whose step
    probabilities are the Dirichlet predictive counts of the sequence's own earlier
    steps, ``(w_A[j, k] + n_jk) / (sum_k w_A[j, k] + n_j)`` (and alike for the
    emissions), so a particle is a state path.  The particle filter is fully adapted:
    particle i is weighted by ``alpha_i = sum_k p(s_t = k | its path) p(x_t | s_t = k,
    its path)`` and its next state drawn from those K terms; the particles are
    resampled (systematic) when their effective number falls below ``resample_below``
    times ``n_particles``.  ``prod_t sum_i W_i alpha_i`` is an unbiased estimate of
    ``p(x_s)``; its log is biased low by about half the variance of the log.  A
    particle's counts are gathered by walking its ancestry (``parent``), O(t) per step.
    A symbol below 0 is missing: emission weight 1, no emission count.  Numba's
    generator is seeded with ``seed``.
    """
    np.random.seed(seed)
    K = w_pi.shape[0]
    P = n_particles
    S = starts.shape[0]
    out = np.zeros(S)
    w_A_tot = np.empty(K)
    w_B_tot = np.empty(K)
    for k in range(K):
        w_A_tot[k] = np.sum(w_A[k])
        w_B_tot[k] = np.sum(w_B[k])
    w_pi_tot = np.sum(w_pi)
    t_max = 1
    for s in range(S):
        t_max = max(t_max, ends[s] - starts[s])
    # 1 / (row total + count) for every count a sequence can reach: no division per state
    inv_A = np.empty((K, t_max))
    inv_B = np.empty((K, t_max))
    for k in range(K):
        for c in range(t_max):
            inv_A[k, c] = 1.0 / (w_A_tot[k] + c)
            inv_B[k, c] = 1.0 / (w_B_tot[k] + c)
    state = np.empty((t_max, P), dtype=np.int64)
    parent = np.empty((t_max, P), dtype=np.int64)
    weight = np.empty(P)
    alpha = np.empty(P)
    prob = np.empty((P, K))
    anc = np.empty(P, dtype=np.int64)
    n_trans = np.empty(K)
    n_emit = np.empty(K)
    n_state = np.empty(K, dtype=np.int64)
    for s in range(S):
        t0, T = starts[s], ends[s] - starts[s]
        if T == 0:
            continue
        y = symbols[t0]
        total = 0.0
        for k in range(K):
            p = w_pi[k] / w_pi_tot
            if y >= 0:
                p *= w_B[k, y] / w_B_tot[k]
            prob[0, k] = p
            total += p
        log_p = np.log(total)
        for i in range(P):
            u = np.random.random() * total
            acc, pick = 0.0, K - 1
            for k in range(K):
                acc += prob[0, k]
                if u < acc:
                    pick = k
                    break
            state[0, i] = pick
            parent[0, i] = i
            weight[i] = 1.0 / P
        for t in range(1, T):
            y = symbols[t0 + t]
            for i in range(P):
                j = state[t - 1, i]
                n_trans[:] = 0.0
                n_emit[:] = 0.0
                n_state[:] = 0
                n_from = 0
                idx = i
                for u in range(t - 1, -1, -1):
                    su = state[u, idx]
                    yu = symbols[t0 + u]
                    if yu >= 0:
                        n_state[su] += 1
                        if yu == y:
                            n_emit[su] += 1.0
                    if u > 0:
                        idx = parent[u, idx]
                        if state[u - 1, idx] == j:
                            n_trans[su] += 1.0
                            n_from += 1
                a = 0.0
                inv_from = inv_A[j, n_from]
                for k in range(K):
                    p = (w_A[j, k] + n_trans[k]) * inv_from
                    if y >= 0:
                        p *= (w_B[k, y] + n_emit[k]) * inv_B[k, n_state[k]]
                    prob[i, k] = p
                    a += p
                alpha[i] = a
            step = 0.0
            for i in range(P):
                step += weight[i] * alpha[i]
            log_p += np.log(step)
            sum_sq = 0.0
            for i in range(P):
                weight[i] *= alpha[i] / step
                sum_sq += weight[i] * weight[i]
            if 1.0 < resample_below * P * sum_sq:
                u = np.random.random() / P
                acc, a_i = weight[0], 0
                for i in range(P):
                    target = u + i / P
                    while acc < target and a_i < P - 1:
                        a_i += 1
                        acc += weight[a_i]
                    anc[i] = a_i
                weight[:] = 1.0 / P
            else:
                for i in range(P):
                    anc[i] = i
            for i in range(P):
                a_i = anc[i]
                u = np.random.random() * alpha[a_i]
                acc, pick = 0.0, K - 1
                for k in range(K):
                    acc += prob[a_i, k]
                    if u < acc:
                        pick = k
                        break
                state[t, i] = pick
                parent[t, i] = a_i
        out[s] = log_p
    return out
