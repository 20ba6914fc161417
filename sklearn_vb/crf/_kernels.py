"""Linear-chain conditional random field recursions (numba kernels).

Every kernel processes *all* sequences in one call: the positions of the sequences are
concatenated and ``starts``/``ends`` (end exclusive) delimit them.  A chain is given by
its log potentials: ``U[i, s]`` for label ``s`` at position ``i`` and ``B[i, s, s2]`` for
the pair ``(t_i, t_{i+1}) = (s, s2)`` (the row of the last position of each sequence is
ignored), so ``ln p(t | x) = sum_i U[i, t_i] + sum_i B[i, t_i, t_{i+1}] - ln Z(x)``.

All recursions run in log space (log-sum-exp per step, the largest term factored out), so
nothing underflows however long the sequence or large the weights; the forward-backward
pass of the fit first tries potentials exponentiated once with normalised messages, and
falls back to log space for a sequence whose weights are too extreme for that.

The feature moments (:func:`crf_moments`) use the canonical tied features of
:class:`~sklearn_vb.crf.LinearChainCRF`: for labels ``k >= 1`` (label 0 is the reference)
the state features ``1[t_i = k] gs[i, a]`` at ``(k - 1) * Gs + a`` and, after them, the
transition features ``1[t_i = k, t_{i+1} = l] gt[i, a]`` (``k, l >= 1``) at
``n_state + ((k - 1) (L - 1) + l - 1) * Gt + a``.  Their covariance under ``p(t | x)``
comes from a second-order forward pass that carries, for each label of the current
position, the conditional mean and covariance of the feature sum of the prefix.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _lse2(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True, nogil=True, inline="always")
def _lse_into(v, L):
    """``ln sum_s exp(v[s])`` with one exponential per term (the largest term factored
    out; -inf when every term is)."""
    mx = v[0]
    for s in range(1, L):
        if v[s] > mx:
            mx = v[s]
    if mx == -np.inf:
        return mx
    acc = 0.0
    for s in range(L):
        acc += np.exp(v[s] - mx)
    return mx + np.log(acc)


@njit(cache=True, nogil=True)
def crf_log_partition_batch(U, B, starts, ends):
    """``ln Z(x_n)`` of every sequence for a batch of potentials: ``U`` (C, n, L),
    ``B`` (C, n, L, L); returns (C, n_sequences)."""
    C, _, L = U.shape
    n_seq = starts.shape[0]
    out = np.empty((C, n_seq))
    alpha = np.empty(L)
    new = np.empty(L)
    v = np.empty(L)
    for c in range(C):
        for q in range(n_seq):
            t0, t1 = starts[q], ends[q]
            for s in range(L):
                alpha[s] = U[c, t0, s]
            for i in range(t0 + 1, t1):
                for s2 in range(L):
                    for s in range(L):
                        v[s] = alpha[s] + B[c, i - 1, s, s2]
                    new[s2] = _lse_into(v, L) + U[c, i, s2]
                for s in range(L):
                    alpha[s] = new[s]
            out[c, q] = _lse_into(alpha, L)
    return out


@njit(cache=True, nogil=True)
def _marginals_log(U, B, t0, t1, la, lb, node, pair):
    """Forward-backward of one sequence in log space (robust to any weights): its
    ``ln Z``; fills ``node`` and ``pair`` rows ``t0..t1 - 1``."""
    L = U.shape[1]
    v = np.empty(L)
    for s in range(L):
        la[t0, s] = U[t0, s]
    for i in range(t0 + 1, t1):
        for s2 in range(L):
            for s in range(L):
                v[s] = la[i - 1, s] + B[i - 1, s, s2]
            la[i, s2] = _lse_into(v, L) + U[i, s2]
    for s in range(L):
        lb[t1 - 1, s] = 0.0
    for i in range(t1 - 2, t0 - 1, -1):
        for s in range(L):
            for s2 in range(L):
                v[s2] = B[i, s, s2] + U[i + 1, s2] + lb[i + 1, s2]
            lb[i, s] = _lse_into(v, L)
    for s in range(L):
        v[s] = la[t1 - 1, s]
    lz = _lse_into(v, L)
    for i in range(t0, t1):
        for s in range(L):
            node[i, s] = np.exp(la[i, s] + lb[i, s] - lz)
    for i in range(t0, t1 - 1):
        for s in range(L):
            for s2 in range(L):
                pair[i, s, s2] = np.exp(la[i, s] + B[i, s, s2] + U[i + 1, s2]
                                        + lb[i + 1, s2] - lz)
    return lz


@njit(cache=True, nogil=True)
def _marginals_scaled(U, B, t0, t1, u, M, a, b, c, node, pair):
    """Forward-backward of one sequence on potentials exponentiated once (each position's
    largest factored out) with the forward messages normalised at every step (Rabiner's
    scaling): ``n L (L + 1)`` exponentials instead of the log-space pass's ``4 n L^2``.
    Returns ``ln Z``, or NaN when a normaliser or a message leaves the normal floating
    range (weights that differ by hundreds of nats): the caller then uses the log pass."""
    L = U.shape[1]
    tiny = 1e-290
    lz = 0.0
    beta = 0.0
    for i in range(t0, t1):
        mu = U[i, 0]
        for s in range(1, L):
            mu = max(mu, U[i, s])
        lz += mu
        for s in range(L):
            u[i, s] = np.exp(U[i, s] - mu)
        if i < t1 - 1:
            # constant transition weights (no input-dependent ones) repeat the previous
            # position's pair potentials: comparing them is cheaper than exponentiating
            same = i > t0
            if same:
                for s in range(L):
                    for s2 in range(L):
                        if B[i, s, s2] != B[i - 1, s, s2]:
                            same = False
            if not same:
                beta = B[i, 0, 0]
                for s in range(L):
                    for s2 in range(L):
                        beta = max(beta, B[i, s, s2])
            lz += beta
            for s in range(L):
                for s2 in range(L):
                    M[i, s, s2] = M[i - 1, s, s2] if same else np.exp(B[i, s, s2] - beta)
    if not np.isfinite(lz):
        return np.nan
    # forward: a[i] = p(t_i | x_{..i}), c[i] the scale of step i
    tot = 0.0
    for s in range(L):
        a[t0, s] = u[t0, s]
        tot += a[t0, s]
    c[t0] = tot
    for s in range(L):
        a[t0, s] /= tot
    for i in range(t0 + 1, t1):
        tot = 0.0
        for s2 in range(L):
            acc = 0.0
            for s in range(L):
                acc += a[i - 1, s] * M[i - 1, s, s2]
            a[i, s2] = acc * u[i, s2]
            tot += a[i, s2]
        if not tot > tiny:
            return np.nan
        c[i] = tot
        for s in range(L):
            a[i, s] /= tot
    for i in range(t0, t1):
        lz += np.log(c[i])
    # backward, on the same scales
    for s in range(L):
        b[t1 - 1, s] = 1.0
    for i in range(t1 - 2, t0 - 1, -1):
        for s in range(L):
            acc = 0.0
            for s2 in range(L):
                acc += M[i, s, s2] * u[i + 1, s2] * b[i + 1, s2]
            b[i, s] = acc / c[i + 1]
            if not np.isfinite(b[i, s]):
                return np.nan
    for i in range(t0, t1):
        for s in range(L):
            node[i, s] = a[i, s] * b[i, s]
    for i in range(t0, t1 - 1):
        for s in range(L):
            for s2 in range(L):
                pair[i, s, s2] = (a[i, s] * M[i, s, s2] * u[i + 1, s2] * b[i + 1, s2]
                                  / c[i + 1])
    return lz


@njit(cache=True, nogil=True)
def crf_marginals(U, B, starts, ends):
    """Forward-backward: ``ln Z`` per sequence (n_seq,), label marginals (n, L) and
    pair marginals (n, L, L) (row ``i`` for ``(t_i, t_{i+1})``, zero at sequence ends).
    Each sequence goes through the scaled pass, or the log-space one when its weights
    are too extreme for it."""
    n, L = U.shape
    n_seq = starts.shape[0]
    log_z = np.empty(n_seq)
    node = np.zeros((n, L))
    pair = np.zeros((n, L, L))
    u = np.empty((n, L))
    M = np.empty((n, L, L))
    a = np.empty((n, L))
    b = np.empty((n, L))
    c = np.empty(n)
    for q in range(n_seq):
        t0, t1 = starts[q], ends[q]
        lz = _marginals_scaled(U, B, t0, t1, u, M, a, b, c, node, pair)
        if np.isnan(lz):
            for i in range(t0, t1):
                for s in range(L):
                    node[i, s] = 0.0
                    for s2 in range(L):
                        pair[i, s, s2] = 0.0
            lz = _marginals_log(U, B, t0, t1, a, b, node, pair)
        log_z[q] = lz
    return log_z, node, pair


@njit(cache=True, nogil=True)
def crf_viterbi(U, B, starts, ends):
    """Most probable label sequence of every sequence (ties to the lowest label)."""
    n, L = U.shape
    best = np.empty((n, L))
    back = np.zeros((n, L), dtype=np.int64)
    path = np.empty(n, dtype=np.int64)
    for q in range(starts.shape[0]):
        t0, t1 = starts[q], ends[q]
        for s in range(L):
            best[t0, s] = U[t0, s]
        for i in range(t0 + 1, t1):
            for s2 in range(L):
                arg, val = 0, best[i - 1, 0] + B[i - 1, 0, s2]
                for s in range(1, L):
                    v = best[i - 1, s] + B[i - 1, s, s2]
                    if v > val:
                        arg, val = s, v
                best[i, s2] = val + U[i, s2]
                back[i, s2] = arg
        arg = 0
        for s in range(1, L):
            if best[t1 - 1, s] > best[t1 - 1, arg]:
                arg = s
        path[t1 - 1] = arg
        for i in range(t1 - 1, t0, -1):
            path[i - 1] = back[i, path[i]]
    return path


@njit(cache=True, nogil=True, inline="always")
def _local_features(phi, gs, gt, i, s, s2, with_pair, L, n_state):
    """Dense feature vector of position ``i`` with ``t_i = s`` (state features) and, when
    ``with_pair``, ``t_{i+1} = s2`` (transition features of ``(i, i + 1)``)."""
    phi[:] = 0.0
    Gs = gs.shape[1]
    Gt = gt.shape[1]
    if s >= 1:
        o = (s - 1) * Gs
        for a in range(Gs):
            phi[o + a] = gs[i, a]
        if with_pair and s2 >= 1:
            o = n_state + ((s - 1) * (L - 1) + s2 - 1) * Gt
            for a in range(Gt):
                phi[o + a] = gt[i, a]


@njit(cache=True, nogil=True)
def crf_moments(U, B, gs, gt, starts, ends, covariance):
    """Per-sequence ``ln Z`` (n_seq,), the summed feature means ``sum_n E f`` (F,) and,
    when ``covariance``, the summed feature covariance ``sum_n Cov f`` (F, F) under
    ``p(t | x_n)``, by the second-order forward pass.

    State ``s`` of position ``i`` carries the log prefix mass ``alpha(s)``, the mean
    ``m(s)`` and covariance ``V(s)`` of the prefix feature sum given ``t_i = s``; a
    step mixes them over the previous label with weights ``w(s | s2)`` proportional to
    ``exp(alpha(s) + psi(s, s2))``, adding the local features ``phi``:
    ``m'(s2) = sum_s w (m(s) + phi)``, ``V'(s2) = sum_s w (V(s) + d d^T)`` with
    ``d = m(s) + phi - m'(s2)``."""
    n, L = U.shape
    n_state = (L - 1) * gs.shape[1]
    F = n_state + (L - 1) * (L - 1) * gt.shape[1]
    n_seq = starts.shape[0]
    log_z = np.empty(n_seq)
    kappa = np.zeros(F)
    Fq = F if covariance else 0
    cov = np.zeros((Fq, Fq))
    alpha = np.empty(L)
    alpha_new = np.empty(L)
    m = np.zeros((L, F))
    m_new = np.zeros((L, F))
    V = np.zeros((L, Fq, Fq))
    V_new = np.zeros((L, Fq, Fq))
    phi = np.zeros(F)
    d = np.zeros(F)
    kap = np.zeros(F)
    w = np.empty(L)
    for q in range(n_seq):
        t0, t1 = starts[q], ends[q]
        for s in range(L):
            alpha[s] = 0.0
        m[:] = 0.0
        if covariance:
            V[:] = 0.0
        for i in range(t0, t1 - 1):
            for s2 in range(L):
                acc = -np.inf
                for s in range(L):
                    acc = _lse2(acc, alpha[s] + U[i, s] + B[i, s, s2])
                alpha_new[s2] = acc
                m_new[s2, :] = 0.0
                for s in range(L):
                    w[s] = np.exp(alpha[s] + U[i, s] + B[i, s, s2] - acc)
                for s in range(L):
                    _local_features(phi, gs, gt, i, s, s2, True, L, n_state)
                    for f in range(F):
                        m_new[s2, f] += w[s] * (m[s, f] + phi[f])
                if covariance:
                    # law of total covariance, centred at the new mean (no cancellation
                    # between large second moments on long sequences)
                    V_new[s2] = 0.0
                    for s in range(L):
                        _local_features(phi, gs, gt, i, s, s2, True, L, n_state)
                        for f in range(F):
                            d[f] = m[s, f] + phi[f] - m_new[s2, f]
                        for f in range(F):
                            for g in range(F):
                                V_new[s2, f, g] += w[s] * (V[s, f, g] + d[f] * d[g])
            for s in range(L):
                alpha[s] = alpha_new[s]
                m[s, :] = m_new[s, :]
                if covariance:
                    V[s] = V_new[s]
        # the last position: its state features only
        lz = -np.inf
        for s in range(L):
            lz = _lse2(lz, alpha[s] + U[t1 - 1, s])
        log_z[q] = lz
        kap[:] = 0.0
        for s in range(L):
            w[s] = np.exp(alpha[s] + U[t1 - 1, s] - lz)
        for s in range(L):
            _local_features(phi, gs, gt, t1 - 1, s, 0, False, L, n_state)
            for f in range(F):
                kap[f] += w[s] * (m[s, f] + phi[f])
        for f in range(F):
            kappa[f] += kap[f]
        if covariance:
            for s in range(L):
                _local_features(phi, gs, gt, t1 - 1, s, 0, False, L, n_state)
                for f in range(F):
                    d[f] = m[s, f] + phi[f] - kap[f]
                for f in range(F):
                    for g in range(F):
                        cov[f, g] += w[s] * (V[s, f, g] + d[f] * d[g])
    return log_z, kappa, cov
