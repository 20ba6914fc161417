"""Forward-backward recursions of hidden Markov models (numba kernels).

Every kernel processes *all* sequences in one call: the frames of the sequences are
concatenated and ``starts``/``ends`` (end exclusive) delimit them.

Emission weights are passed as a table ``emis`` of shape (R, K) of *scaled* weights
with per-row log shifts ``emis_shift`` (R,), plus an index ``index`` (T,) that maps each
frame to a row: the emission weight of state j at frame t is
``emis[index[t], j] * exp(emis_shift[index[t]])``.  For categorical emissions R is the
alphabet size and ``index`` the symbols; for continuous emissions R = T and ``index`` is
``arange(T)``.  The same indexing accumulates the expected emission counts
(``emis_counts[index[t]] += gamma_t``), so for continuous emissions ``emis_counts`` is
the (T, K) matrix of smoothed state marginals.

Transitions: every recursion takes one transition matrix per *input level*, (L, K, K),
and the level of every frame, ``level`` (T,): the transition into frame t uses matrix
``level[t]`` (an input-driven HMM with categorical inputs,
``VBHiddenMarkov(transition_inputs="categorical")``).  The expected transition counts
come out per level, (L, K, K).  A plain HMM is the case L = 1: the kernels named
without ``levels`` take one (K, K) matrix and return (K, K) counts.

Initial and transition weights need not be normalised, so the same recursion serves the
variational E step (sub-normalised weights exp E[ln theta]) and the ordinary forward
algorithm (probabilities).

Scaling: the forward variables are normalised at every step (Rabiner's scaling) and the
log normalisers are summed, so nothing underflows however long the sequence is.  One
forward recursion, :func:`_forward_sequence`, serves every scaled kernel here: the
single-parameter forward-backward (:func:`forward_backward_scaled`, and through it
:func:`forward_backward`, which falls back to the log-space recursion
:func:`forward_backward_log` where weights underflow) and the likelihoods of a batch of
parameter draws (:func:`categorical_hmm_log_likelihood_batch`,
:func:`gaussian_hmm_log_likelihood_batch`) that the scoring layer evaluates at once.

With many sequences, :func:`forward_backward_scaled_levels` runs the same scaled
recursion over all of them at once instead (:mod:`.forward_backward_batched`: every time
step of all running sequences one matrix product), where
:func:`~.forward_backward_batched.batch_pays_off`; ``allow_batched=False`` keeps the
sequences one after another.  Callers from Python run the batched pass with BLAS on one
thread (:mod:`._blas_threads`).
"""

import numpy as np
from numba import njit

from .._core.kernels.constants import LOG_2PI
from .forward_backward_batched import batch_pays_off, fb_arrays, forward_backward_batched
from .kernels import gaussian_full_log_weights_into, scale_rows, scale_rows_into

#: up to this many states the forward step's vector-matrix product runs as dot products
#: (faster for small K); beyond it as row updates, which vectorise
_FEW_STATES = 10

#: smallest per-step normaliser (in nats, relative to the shifts) that the scaled
#: recursion is trusted with; below it the step came within ~1e-260 of underflow.
SCALED_LOG_FLOOR = -600.0


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


@njit(cache=True, nogil=True, inline="always")
def _forward_sequence(pi, pi_shift, A, a_shift, level, emis, emis_shift, index, t0, t1,
                      alpha, keep_alpha, zeta, frame_log_norm, likelihood_only, divide, a):
    """Scaled forward recursion over the frames ``t0 .. t1-1`` of one sequence; returns
    its ln Z and writes each frame's ln zeta_t into ``frame_log_norm[t]``.

    ``A`` (L, K, K) holds one transition matrix per input level and ``level`` (T,) the
    level of every frame: the transition into frame t uses ``A[level[t]]`` (a plain HMM
    has L = 1 and every level 0).  ``pi``, ``A[l]`` are weights scaled by
    ``exp(-pi_shift)``, ``exp(-a_shift[l])``.  Each step
    computes ``a = pi * emis[r]`` (first frame) or ``a = (alpha_prev @ A[l]) * emis[r]``,
    its normaliser ``zeta_t = sum(a)`` and ``alpha_t = a / zeta_t``; ``alpha_t`` goes to
    row t of ``alpha`` with ``keep_alpha`` (which also stores ``zeta[t]`` for the
    backward pass), otherwise to a two-row ring buffer.

    A step with zeta_t = 0 (no state can produce the frame) has ln zeta_t = -inf.  For
    posteriors the recursion carries on from uniform ``alpha_t``; with
    ``likelihood_only`` the sequence ends there instead, at -inf (NaN for a NaN step,
    or for a row of ``emis_shift`` that is -inf), leaving later frames untouched.

    ``alpha_t`` is computed as ``a * (1 / zeta_t)``, or as ``a / zeta_t`` with
    ``divide``: both orders are kept because the scoring layer differentiates
    likelihoods numerically (Laplace scorer), which turns a last-bit change into a
    visible one.  ``a`` is a (K,) work buffer.  Written as one inlined call per
    sequence, not per step: an inlined call costs a reference count per array argument.
    """
    K = pi.shape[0]
    prev = 0
    total = 0.0
    for t in range(t0, t1):
        r = index[t]
        if likelihood_only and not emis_shift[r] > -np.inf:
            total = -np.inf  # every state has zero emission density
            frame_log_norm[t] = total
            break
        if t == t0:
            for j in range(K):
                a[j] = pi[j] * emis[r, j]
            shift = pi_shift + emis_shift[r]
        else:
            # a = alpha_prev @ A, summed over i in the same order either way: as one
            # dot product per j for few states, as SIMD row updates (skipping the
            # states the sequence cannot be in) from about a dozen states on
            lv = level[t]
            if K <= _FEW_STATES:
                for j in range(K):
                    acc = 0.0
                    for i in range(K):
                        acc += alpha[prev, i] * A[lv, i, j]
                    a[j] = acc * emis[r, j]
            else:
                for j in range(K):
                    a[j] = 0.0
                for i in range(K):
                    ai = alpha[prev, i]
                    if ai != 0.0:
                        for j in range(K):
                            a[j] += ai * A[lv, i, j]
                for j in range(K):
                    a[j] *= emis[r, j]
            shift = a_shift[lv] + emis_shift[r]
        z = 0.0
        for j in range(K):
            z += a[j]
        cur = t if keep_alpha else (t - t0) % 2
        if z > 0.0:
            if divide:
                for j in range(K):
                    alpha[cur, j] = a[j] / z
            else:
                inv = 1.0 / z
                for j in range(K):
                    alpha[cur, j] = a[j] * inv
            lz = np.log(z) + shift
        elif likelihood_only:
            total = -np.inf if z == 0.0 else np.nan
            frame_log_norm[t] = total
            break
        else:
            for j in range(K):
                alpha[cur, j] = 1.0 / K
            lz = -np.inf
        if keep_alpha:
            zeta[t] = z
        frame_log_norm[t] = lz
        total += lz
        prev = cur
    return total


@njit(cache=True, nogil=True)
def one_level(log_transmat, T):
    """A (K, K) transition matrix as the single level (1, K, K) of the levelled kernels,
    and level 0 for each of ``T`` frames: a plain HMM is an input-driven one whose
    input never changes."""
    K = log_transmat.shape[0]
    out = np.empty((1, K, K))
    for i in range(K):
        for j in range(K):
            out[0, i, j] = log_transmat[i, j]
    return out, np.zeros(T, dtype=np.int64)


@njit(cache=True, nogil=True)
def forward_backward_scaled(log_startprob, log_transmat, emis, emis_shift, index, starts,
                            ends, want_posteriors):
    """Scaled forward-backward over all sequences; the statistics count every frame
    (:func:`forward_backward_scaled_counted` with the sequences as counted ranges)."""
    return forward_backward_scaled_counted(log_startprob, log_transmat, emis, emis_shift,
                                           index, starts, ends, starts, ends, want_posteriors)


@njit(cache=True, nogil=True)
def forward_backward_scaled_counted(log_startprob, log_transmat, emis, emis_shift, index,
                                    starts, ends, counted_starts, counted_ends,
                                    want_posteriors):
    """:func:`forward_backward_scaled_levels` with one transition matrix
    ``log_transmat`` (K, K) for every step; ``trans_counts`` is (K, K)."""
    A3, level = one_level(log_transmat, index.shape[0])
    out = forward_backward_scaled_levels(log_startprob, A3, level, emis, emis_shift, index,
                                         starts, ends, counted_starts, counted_ends,
                                         want_posteriors)
    return out[0], out[1], out[2], out[3][0], out[4]


@njit(cache=True, nogil=True)
def forward_backward_scaled_levels(log_startprob, log_transmats, level, emis, emis_shift,
                                   index, starts, ends, counted_starts, counted_ends,
                                   want_posteriors, allow_batched=True):
    """Scaled forward-backward over all sequences, with statistics of the counted frames.

    Runs the sequences one after another, or all at once (with ``allow_batched``,
    where :func:`~.forward_backward_batched.batch_pays_off`); the two agree to
    round-off (:func:`forward_backward_scaled_levels_as` runs either).

    Exact as long as no step multiplies weights below the smallest double; see
    :func:`forward_backward_levels` for the version that detects and repairs that.

    Parameters
    ----------
    log_startprob : (K,) log initial weights.
    log_transmats : (L, K, K) log transition weights of every input level, rows =
        from-state.
    level : (T,) int64 the input level of every frame: the transition into frame t
        (not the first of its sequence) uses ``log_transmats[level[t]]``.
    emis, emis_shift, index : emission table (R, K), row log shifts (R,), frame -> row (T,).
    starts, ends : (n,) int64 sequence offsets (end exclusive).
    counted_starts, counted_ends : (n,) int64 the frames of each sequence whose
        statistics are accumulated (a range inside the sequence; the whole sequence
        for the ordinary pass).  A counted frame contributes its gamma_t to
        ``emis_counts``, its xi_t (the transition *into* it) to ``trans_counts`` unless
        it is the sequence's first frame, whose gamma then goes to ``start_counts``.
        The posteriors are those of the whole sequence either way: the other frames
        only condition them (the buffers of subchain SVI, ``hmm._subchains``).
    want_posteriors : if False only the forward pass runs.
    allow_batched : if False the sequences run one after another whatever their number.

    Returns
    -------
    log_norm : (n,) ln Z of each sequence (the sum of the log per-step normalisers).
    frame_log_norm : (T,) per-step log normalisers ln zeta_t (they sum to ln Z).
    start_counts : (K,) sum over sequences of gamma at the first frame.
    trans_counts : (L, K, K) sum over sequences and t >= 2 of xi_t, on the level of
        frame t (the expected transition counts of every input level).
    emis_counts : (R, K) sum of gamma_t over the frames mapped to each row.
    """
    return forward_backward_scaled_levels_as(
        log_startprob, log_transmats, level, emis, emis_shift, index, starts, ends,
        counted_starts, counted_ends, want_posteriors,
        allow_batched and batch_pays_off(starts, ends, log_startprob.shape[0], emis.shape[0],
                                         index.shape[0]))


@njit(cache=True, nogil=True)
def forward_backward_scaled_levels_as(log_startprob, log_transmats, level, emis,
                                      emis_shift, index, starts, ends, counted_starts,
                                      counted_ends, want_posteriors, batched):
    """:func:`forward_backward_scaled_levels` over the sequences one after another, or
    all at once with ``batched`` (:func:`~.forward_backward_batched.forward_backward_batched`)."""
    K = log_startprob.shape[0]
    L = log_transmats.shape[0]
    pi_max = -np.inf
    for j in range(K):
        if log_startprob[j] > pi_max:
            pi_max = log_startprob[j]
    pi = np.empty(K)
    for j in range(K):
        pi[j] = np.exp(log_startprob[j] - pi_max)
    A = np.empty((L, K, K))
    a_shift = np.empty(L)
    for lv in range(L):
        A_l, a_shift[lv] = scale_log_weights(log_transmats[lv])
        A[lv] = A_l
    if batched:
        return forward_backward_batched(pi, pi_max, A, a_shift, level, emis, emis_shift,
                                        index, starts, ends, counted_starts, counted_ends,
                                        want_posteriors)
    return _scaled_sequences(pi, pi_max, A, a_shift, level, emis, emis_shift, index, starts,
                             ends, counted_starts, counted_ends, want_posteriors)


@njit(cache=True, nogil=True)
def _scaled_sequences(pi, pi_max, A, a_shift, level, emis, emis_shift, index, starts, ends,
                      counted_starts, counted_ends, want_posteriors):
    """The scaled forward-backward of one sequence after another, from the scaled
    weights (see :func:`forward_backward_scaled_levels_as`)."""
    K = pi.shape[0]
    T = index.shape[0]
    n = starts.shape[0]
    R = emis.shape[0]
    L = A.shape[0]
    log_norm, frame_log_norm, start_counts, trans_counts, emis_counts, alpha = fb_arrays(
        n, T, K, L, R, want_posteriors, T, 2)
    zeta = np.empty(T) if want_posteriors else np.empty(0)

    a = np.empty(K)
    beta = np.empty(K)
    tmp = np.empty(K)
    for s in range(n):
        t0 = starts[s]
        t1 = ends[s]
        log_norm[s] = _forward_sequence(pi, pi_max, A, a_shift, level, emis, emis_shift,
                                        index, t0, t1, alpha, want_posteriors, zeta,
                                        frame_log_norm, False, False, a)
        if not want_posteriors:
            continue
        # ---------------- backward (scaled beta), marginals accumulated on the fly
        c0 = counted_starts[s]
        c1 = counted_ends[s]
        for j in range(K):
            beta[j] = 1.0
        last = t1 - 1
        r = index[last]
        if c0 <= last < c1:
            for j in range(K):
                emis_counts[r, j] += alpha[last, j]
        for t in range(last - 1, t0 - 1, -1):
            rn = index[t + 1]
            lv = level[t + 1]
            zn = zeta[t + 1]
            inv = 1.0 / zn if zn > 0.0 else 0.0
            for j in range(K):
                tmp[j] = emis[rn, j] * beta[j] * inv
            g_sum = 0.0
            if c0 <= t + 1 < c1:  # the transition into frame t + 1 is counted
                for i in range(K):
                    acc = 0.0
                    ai = alpha[t, i]
                    for j in range(K):
                        x = A[lv, i, j] * tmp[j]
                        acc += x
                        trans_counts[lv, i, j] += ai * x
                    beta[i] = acc
                    g_sum += ai * acc
            else:
                for i in range(K):
                    acc = 0.0
                    for j in range(K):
                        acc += A[lv, i, j] * tmp[j]
                    beta[i] = acc
                    g_sum += alpha[t, i] * acc
            if c0 <= t < c1:
                r = index[t]
                ginv = 1.0 / g_sum if g_sum > 0.0 else 0.0
                for i in range(K):
                    emis_counts[r, i] += alpha[t, i] * beta[i] * ginv
                    if t == t0:
                        start_counts[i] += alpha[t, i] * beta[i] * ginv
        if t1 - t0 == 1 and c0 <= t0 < c1:
            for j in range(K):
                start_counts[j] += alpha[t0, j]
    return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts


@njit(cache=True, nogil=True, inline="always")
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
    """Log-space forward-backward whose statistics count every frame, with one
    transition matrix (:func:`forward_backward_log_levels` with one level and the
    sequences as counted ranges); ``trans_counts`` is (K, K)."""
    A3, level = one_level(log_transmat, index.shape[0])
    out = forward_backward_log_levels(log_startprob, A3, level, log_emis, index, starts,
                                      ends, starts, ends, want_posteriors)
    return out[0], out[1], out[2], out[3][0], out[4]


@njit(cache=True, nogil=True)
def forward_backward_log_levels(log_startprob, log_transmats, level, log_emis, index,
                                starts, ends, counted_starts, counted_ends,
                                want_posteriors):
    """Forward-backward entirely in log space; same arguments (``log_emis`` the
    unscaled (R, K) log emission weights) and outputs as
    :func:`forward_backward_scaled_levels`.

    Every product of the scaled recursion becomes a sum of logs and every sum a
    log-sum-exp, so weights far below the smallest double (exp E[ln theta] of very weak
    Dirichlet posteriors, e.g. exp(-1200)) are handled exactly.  Costs one exp per
    (t, i, j) instead of a multiplication; the scaled recursion is the fast path.

    The loops follow :func:`forward_backward_scaled_levels` step for step (same
    skeleton, log-space arithmetic), so that a change to one is easily carried to the
    other.
    """
    K = log_startprob.shape[0]
    T = index.shape[0]
    n = starts.shape[0]
    R = log_emis.shape[0]
    L = log_transmats.shape[0]
    log_norm, frame_log_norm, start_counts, trans_counts, emis_counts, la = fb_arrays(
        n, T, K, L, R, want_posteriors, T, 2)
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
                lv = level[t]
                for j in range(K):
                    for i in range(K):
                        col[i] = la[prev, i] + log_transmats[lv, i, j]
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
        c0 = counted_starts[s]
        c1 = counted_ends[s]
        for j in range(K):
            lb[j] = 0.0
        last = t1 - 1
        r = index[last]
        if c0 <= last < c1:
            for j in range(K):
                emis_counts[r, j] += np.exp(la[last, j])
        for t in range(last - 1, t0 - 1, -1):
            rn = index[t + 1]
            lv = level[t + 1]
            lzn = frame_log_norm[t + 1]
            for j in range(K):
                col[j] = log_emis[rn, j] + lb[j] - lzn
            counted = c0 <= t + 1 < c1
            for i in range(K):
                for j in range(K):
                    a[j] = log_transmats[lv, i, j] + col[j]
                lb_new[i] = _logsumexp(a)
                if counted:
                    for j in range(K):
                        trans_counts[lv, i, j] += np.exp(la[t, i] + a[j])
            for i in range(K):
                lb[i] = lb_new[i]
                a[i] = la[t, i] + lb[i]
            if c0 <= t < c1:
                lg = _logsumexp(a)  # 0 up to round-off; renormalise as the scaled kernel does
                r = index[t]
                for i in range(K):
                    g = np.exp(a[i] - lg)
                    emis_counts[r, i] += g
                    if t == t0:
                        start_counts[i] += g
        if t1 - t0 == 1 and c0 <= t0 < c1:
            for j in range(K):
                start_counts[j] += np.exp(la[t0, j])
    return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts


@njit(cache=True, nogil=True)
def forward_backward(log_startprob, log_transmat, log_emis, index, starts, ends,
                     want_posteriors, allow_batched=True):
    """Forward-backward over all sequences from log-weights, robust to underflow
    (:func:`forward_backward_counted` whose statistics count every frame)."""
    return forward_backward_counted(log_startprob, log_transmat, log_emis, index, starts,
                                    ends, starts, ends, want_posteriors, allow_batched)


@njit(cache=True, nogil=True)
def forward_backward_counted(log_startprob, log_transmat, log_emis, index, starts, ends,
                             counted_starts, counted_ends, want_posteriors,
                             allow_batched=True):
    """:func:`forward_backward_levels_counted` with one transition matrix
    ``log_transmat`` (K, K) for every step; ``trans_counts`` is (K, K)."""
    A3, level = one_level(log_transmat, index.shape[0])
    out = forward_backward_levels_counted(log_startprob, A3, level, log_emis, index, starts,
                                          ends, counted_starts, counted_ends,
                                          want_posteriors, allow_batched)
    return out[0], out[1], out[2], out[3][0], out[4]


@njit(cache=True, nogil=True)
def forward_backward_levels(log_startprob, log_transmats, level, log_emis, index, starts,
                            ends, want_posteriors, allow_batched=True):
    """Forward-backward with a transition matrix per input level, robust to underflow
    (:func:`forward_backward_levels_counted` whose statistics count every frame)."""
    return forward_backward_levels_counted(log_startprob, log_transmats, level, log_emis,
                                           index, starts, ends, starts, ends,
                                           want_posteriors, allow_batched)


@njit(cache=True, nogil=True)
def forward_backward_levels_counted(log_startprob, log_transmats, level, log_emis, index,
                                    starts, ends, counted_starts, counted_ends,
                                    want_posteriors, allow_batched=True):
    """Forward-backward over all sequences from log-weights, robust to underflow, with
    the statistics of the frames ``counted_starts[s] .. counted_ends[s] - 1`` of every
    sequence s and a transition matrix ``log_transmats[level[t]]`` into every frame t
    (see :func:`forward_backward_scaled_levels`).

    Runs the scaled recursion and checks every step's normaliser without its shifts:
    the shifts make the largest weight of each factor one, so a step whose normaliser
    is below exp(:data:`SCALED_LOG_FLOOR`) (or zero) multiplied weights that are, or
    nearly are, below the smallest double.  That happens with very weak Dirichlet
    priors (per-entry concentration below ~1e-3, where exp E[ln theta] =
    exp(psi(w) - psi(w_0)) ~ exp(-1/w) underflows) when the data need a transition or
    emission the posterior has (almost) no counts for.  All sequences are then
    recomputed by the log-space recursion (:func:`forward_backward_log_levels`), which
    is exact at any scale.  Same arguments (``log_emis`` the (R, K) log emission
    weights, ``allow_batched`` as for :func:`forward_backward_scaled_levels`) and outputs
    as :func:`forward_backward_log_levels`.
    """
    emis, shift = scale_rows(log_emis)
    out = forward_backward_scaled_levels(log_startprob, log_transmats, level, emis, shift,
                                         index, starts, ends, counted_starts, counted_ends,
                                         want_posteriors, allow_batched)
    log_norm, frame_log_norm = out[0], out[1]
    trusted = True
    for s in range(starts.shape[0]):
        if not np.isfinite(log_norm[s]):
            trusted = False
    pi_max = np.max(log_startprob)
    L = log_transmats.shape[0]
    a_max = np.empty(L)
    for lv in range(L):
        a_max[lv] = np.max(log_transmats[lv])
    for s in range(starts.shape[0]):
        for t in range(starts[s], ends[s]):
            step_shift = shift[index[t]] + (pi_max if t == starts[s] else a_max[level[t]])
            if not frame_log_norm[t] - step_shift > SCALED_LOG_FLOOR:  # also catches NaN
                trusted = False
    if trusted:
        return out
    return forward_backward_log_levels(log_startprob, log_transmats, level, log_emis, index,
                                       starts, ends, counted_starts, counted_ends,
                                       want_posteriors)

# ---------------------------------------------------------------------------
# likelihoods of a batch of parameter draws (the scoring layer's forward algorithm)
# ---------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def _batch_forward_into(pi, A, level, emis, emis_shift, index, starts, ends, divide, seq,
                        frame):
    """Likelihoods of one parameter set with probabilities ``pi``, ``A`` (L, K, K) and
    the frames' input levels ``level`` (no shifts): ``seq[s]`` = ln p(sequence s),
    ``frame[t]`` = ln p(x_t | x_<t); a frame of probability zero ends its sequence (see
    :func:`_forward_sequence`)."""
    K = pi.shape[0]
    alpha = np.empty((2, K))
    a = np.empty(K)
    no_zeta = np.empty(0)
    no_shift = np.zeros(A.shape[0])
    for s in range(starts.shape[0]):
        seq[s] = _forward_sequence(pi, 0.0, A, no_shift, level, emis, emis_shift, index,
                                   starts[s], ends[s], alpha, False, no_zeta, frame, True,
                                   divide, a)


@njit(cache=True, nogil=True)
def categorical_hmm_log_likelihood_batch(pi, A, B, obs, starts, ends, keep_frames=False):
    """ln p(sequence s | theta_c) for every parameter set c and sequence s.

    pi (C, K), A (C, K, K), B (C, K, V) probabilities; obs (T,) int symbols;
    starts, ends (S,) sequence boundaries.  Returns ``seq`` (C, S) and ``frame``, the
    per-frame log normalisers ln p(x_t | x_<t, theta_c) (they sum to ``seq``): (C, T)
    with ``keep_frames``, else a (1, T) scratch row of no meaning (no (C, T) memory).
    After a frame of probability zero the rest of that sequence is left at 0 and the
    sequence total is -inf.
    """
    C, K = pi.shape
    V = B.shape[2]
    T = obs.shape[0]
    S = starts.shape[0]
    seq = np.zeros((C, S))
    frame = np.zeros((C if keep_frames else 1, T))
    emis = np.empty((V, K))
    no_shift = np.zeros(V)
    level = np.zeros(T, dtype=np.int64)  # one transition matrix
    for c in range(C):
        for k in range(K):
            for v in range(V):
                emis[v, k] = B[c, k, v]
        _batch_forward_into(pi[c], A[c:c + 1], level, emis, no_shift, obs, starts, ends, True,
                            seq[c], frame[c if keep_frames else 0])
    return seq, frame


@njit(cache=True, nogil=True)
def gaussian_hmm_log_likelihood_batch(log_pi, log_A, means, prec_chol, X, starts, ends):
    """ln p(sequence s | theta_c) for every parameter set c and sequence s.

    The emission log-densities of each frame are shifted by their maximum over states
    before they enter the scaled recursion, and the shifts are added back to the log
    normalisers.  A diagonal precision is the special case of a diagonal ``L``.

    Parameters
    ----------
    log_pi : (C, K) log initial probabilities.
    log_A : (C, K, K) log transition probabilities (rows = from-state).
    means : (C, K, D) state means.
    prec_chol : (C, K, D, D) lower Cholesky factors ``L`` of the state precisions ``L L'``.
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
    const = np.empty(K)
    pi = np.empty(K)
    A = np.empty((1, K, K))  # one transition matrix, level 0 for every frame
    level = np.zeros(T, dtype=np.int64)
    log_w = np.empty((T, K))
    emis = np.empty((T, K))
    emis_shift = np.empty(T)
    index = np.arange(T)
    for c in range(C):
        for k in range(K):
            s = 0.0
            for i in range(D):
                s += np.log(prec_chol[c, k, i, i])
            const[k] = s - 0.5 * D * LOG_2PI
            pi[k] = np.exp(log_pi[c, k])
            for j in range(K):
                A[0, k, j] = np.exp(log_A[c, k, j])
        gaussian_full_log_weights_into(X, means[c], prec_chol[c], const, log_w)
        scale_rows_into(log_w, emis, emis_shift, False)
        _batch_forward_into(pi, A, level, emis, emis_shift, index, starts, ends, False,
                            seq[c], frame[c])
    return seq, frame
