"""The scaled forward-backward recursion run over many sequences at once.

The per-sequence recursion (:mod:`.forward_backward`) spends each step on a
vector-matrix product of K x K operations, which no processor runs near its peak: every
element of the transition matrix is loaded for two operations.  Run over S sequences
together, the forward step of all of them is one (S x K) @ (K x K) matrix product, and
so are the backward step and the expected transition counts, which the machine's BLAS
runs at a good fraction of its peak once S and K are a few tens.

Layout: the sequences are sorted by length, longest first, so that at local time t the
sequences still running (``active[t]`` of them, the set shrinking as the shorter ones
end) are the first rows.  The forward variables of local time t are stored as one block
of ``active[t]`` contiguous rows, the blocks of consecutive t one after another: the
rows a step reads and the rows it writes are both contiguous, so the step's product
runs on the arrays as they are.

The arithmetic is that of :func:`~.forward_backward.forward_backward_scaled_levels`
step for step (same scaling, same normalisers, the same treatment of a step that no
state can produce and of the counted ranges); only the order in which the products
and the sums over sequences are summed differs, so the results agree to round-off.
With input levels (L > 1), the rows of each step are grouped by the level of their
transition and each group is multiplied by its own matrix.

The expected transition counts are ``A * sum_t alpha_t^T tmp_{t+1}`` with
``tmp_{t+1} = emis_{t+1} * beta_{t+1} / zeta_{t+1}``: the sum is built from products of
many rows at once (:data:`_COUNT_ROWS`), not one outer product per frame.

What it costs: the batched order keeps the forward variables of all sequences of a
group until the backward pass reaches them (the per-sequence recursion keeps one
sequence's, which stay in the processor's cache), and a step reads one frame of every
running sequence, frames far apart in memory; both are memory traffic the per-sequence
recursion does not have.  The sorted sequences therefore run in groups whose tables
take some megabytes (:func:`length_groups`), and the steps in tiles of
:data:`_TILE_STEPS`: a tile's frames (emission rows of a per-frame table, row indices,
levels, log shifts) are copied into step-major arrays a sequence's run at a time
(:func:`_gather_tile`), the per-frame normalisers and emission counts written back the
same way, so that the steps find their frames next to one another.
:func:`batch_pays_off` weighs the rest by the number of states.

The backward step computes ``tmp_t`` for the step before it in the same pass over the
rows of ``beta_t`` that adds their posteriors to the counts.
"""

import numpy as np
from numba import njit

#: below this many rows a step's product runs as plain loops: a BLAS call has a fixed
#: cost that a product of a few rows does not repay
_BLAS_ROWS = 8

#: the batched recursion runs when the steps average at least this many running
#: sequences (total frames / longest length) ...
BATCH_MIN_ROWS = 8
#: ... and the model has at least this many states, with an emission table of a few
#: rows shared by the frames (the symbols of categorical emissions) ... (both state
#: thresholds from the benchmark workload ``machine-fb-batch-crossover``)
BATCH_MIN_STATES = 8
#: ... or at least this many with a table of one row per frame (continuous emissions),
#: whose rows (and per-frame counts) the batched order copies to and from the order
#: of its steps
BATCH_MIN_STATES_FRAME_TABLE = 10

#: the sequences run in groups whose frames take about this many bytes in the arrays a
#: pass streams (the forward variables; with a per-frame table also its rows and the
#: emission counts), at least _GROUP_MIN_ROWS sequences a group: larger groups make
#: larger step products, which BLAS runs faster, but a group's table of forward
#: variables then has further to come from in the backward pass
_GROUP_BYTES = 12 << 20
_GROUP_MIN_ROWS = 32

#: rows of alpha_t and tmp_{t+1} taken together (at least; per input level) into one
#: (K x rows) @ (rows x K) product of the expected transition counts
_COUNT_ROWS = 512

#: the steps run in tiles of this many, whose frames (emission rows, levels, shifts) are
#: first copied into step-major arrays (:func:`_gather_tile`)
_TILE_STEPS = 32


@njit(cache=True, nogil=True)
def fb_arrays(n, T, K, L, R, want_posteriors, table_rows, ring_rows):
    """Outputs of the forward-backward kernels (log_norm, frame_log_norm, start_counts,
    trans_counts (L, K, K), emis_counts) and the table of forward variables: with
    posteriors ``table_rows`` rows, without them ``ring_rows`` (the rows a step reads
    and writes) and emis_counts (0, K)."""
    log_norm = np.zeros(n)
    frame_log_norm = np.empty(T)
    start_counts = np.zeros(K)
    trans_counts = np.zeros((L, K, K))
    if want_posteriors:
        emis_counts = np.zeros((R, K))
        fwd = np.empty((table_rows, K))
    else:
        emis_counts = np.zeros((0, K))
        fwd = np.empty((ring_rows, K))
    return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts, fwd


@njit(cache=True, nogil=True)
def _rows_times(P, B, out, acc):
    """``out = P @ B`` for the rows ``P`` (m, K) and a (K, K) matrix ``B``; ``acc`` is a
    (K,) work row."""
    m, K = P.shape
    if m >= _BLAS_ROWS:
        np.dot(P, B, out)
        return
    for i in range(m):
        for j in range(K):
            acc[j] = 0.0
        for k in range(K):
            p = P[i, k]
            for j in range(K):
                acc[j] += p * B[k, j]
        for j in range(K):
            out[i, j] = acc[j]


@njit(cache=True, nogil=True)
def _step_product(P, mats, row_level, out, acc, gin, gout, sel):
    """``out[i] = P[i] @ mats[row_level[i]]`` for the m rows of ``P``: one product per
    input level present, its rows gathered into ``gin`` and scattered back from
    ``gout`` (none of that for a single level, or when every row has the same level)."""
    m = P.shape[0]
    L = mats.shape[0]
    if L == 1:
        _rows_times(P, mats[0], out, acc)
        return
    K = P.shape[1]
    for lv in range(L):
        c = 0
        for i in range(m):
            if row_level[i] == lv:
                sel[c] = i
                c += 1
        if c == 0:
            continue
        if c == m:
            _rows_times(P, mats[lv], out, acc)
            return
        for q in range(c):
            for j in range(K):
                gin[q, j] = P[sel[q], j]
        _rows_times(gin[:c], mats[lv], gout[:c], acc)
        for q in range(c):
            for j in range(K):
                out[sel[q], j] = gout[q, j]


@njit(cache=True, nogil=True)
def _add_outer(rows_a, rows_b, sums, prod):
    """``sums += rows_a.T @ rows_b`` (``prod`` a (K, K) work matrix)."""
    if rows_a.shape[0] == 0:
        return
    np.dot(rows_a.T, rows_b, prod)
    K = sums.shape[0]
    for i in range(K):
        for j in range(K):
            sums[i, j] += prod[i, j]


@njit(cache=True, nogil=True, inline="always")
def _times_row_sum(X, i, Y, r):
    """``X[i] *= Y[r]`` and the sum of the new ``X[i]``, summed in four interleaved
    partial sums: four independent chains of additions, which the compiler runs as
    one vector (a single chain would wait on every addition)."""
    K = X.shape[1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    j = 0
    while j + 4 <= K:
        x0 = X[i, j] * Y[r, j]
        x1 = X[i, j + 1] * Y[r, j + 1]
        x2 = X[i, j + 2] * Y[r, j + 2]
        x3 = X[i, j + 3] * Y[r, j + 3]
        X[i, j] = x0
        X[i, j + 1] = x1
        X[i, j + 2] = x2
        X[i, j + 3] = x3
        s0 += x0
        s1 += x1
        s2 += x2
        s3 += x3
        j += 4
    while j < K:
        x0 = X[i, j] * Y[r, j]
        X[i, j] = x0
        s0 += x0
        j += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True, inline="always")
def _row_dot(X, i, Y, k):
    """``X[i] @ Y[k]`` in four interleaved partial sums (see :func:`_times_row_sum`)."""
    K = X.shape[1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    j = 0
    while j + 4 <= K:
        s0 += X[i, j] * Y[k, j]
        s1 += X[i, j + 1] * Y[k, j + 1]
        s2 += X[i, j + 2] * Y[k, j + 2]
        s3 += X[i, j + 3] * Y[k, j + 3]
        j += 4
    while j < K:
        s0 += X[i, j] * Y[k, j]
        j += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True)
def batch_pays_off(starts, ends, n_components, n_table_rows, n_frames):
    """Whether the sequences ``starts``/``ends`` (end exclusive) run faster all at once
    (:func:`forward_backward_batched`) than one after another, for ``n_components``
    states and an emission table of ``n_table_rows`` rows over ``n_frames`` frames (see
    :data:`BATCH_MIN_ROWS`).  Sequences of length zero never run batched."""
    n = starts.shape[0]
    per_frame = n_table_rows >= n_frames
    if n_components < (BATCH_MIN_STATES_FRAME_TABLE if per_frame else BATCH_MIN_STATES):
        return False
    if n < BATCH_MIN_ROWS:
        return False
    frames = 0
    longest = 0
    for s in range(n):
        length = ends[s] - starts[s]
        if length < 1:
            return False
        frames += length
        longest = max(longest, length)
    return frames >= BATCH_MIN_ROWS * longest


@njit(cache=True, nogil=True)
def length_groups(lengths, order, frame_bytes):
    """Boundaries (in the sorted ``order``) of the groups of sequences run together: runs
    of consecutive sequences (longest first) whose frames take at most
    :data:`_GROUP_BYTES` at ``frame_bytes`` a frame, and at least
    :data:`_GROUP_MIN_ROWS` sequences each (the last group takes what is left)."""
    n = order.shape[0]
    bounds = [0]
    rows = 0
    frames = 0
    for q in range(n):
        length = lengths[order[q]]
        if rows >= _GROUP_MIN_ROWS and (frames + length) * frame_bytes > _GROUP_BYTES:
            bounds.append(q)
            rows = 0
            frames = 0
        rows += 1
        frames += length
    bounds.append(n)
    return np.array(bounds, dtype=np.int64)


@njit(cache=True, nogil=True)
def _steps(lengths, order, lo, hi, active, offset):
    """For the group ``order[lo:hi]`` (longest first): ``active[t]`` the number of its
    sequences longer than t and ``offset[t]`` the first row of local time t's block, for
    t up to the longest length (``active`` then 0, ``offset`` the group's frames);
    returns the longest length."""
    n_max = lengths[order[lo]]
    for t in range(n_max + 1):
        active[t] = 0
    for q in range(lo, hi):
        active[lengths[order[q]] - 1] += 1
    running = 0
    for t in range(n_max - 1, -1, -1):
        running += active[t]
        active[t] = running
    offset[0] = 0
    for t in range(n_max):
        offset[t + 1] = offset[t] + active[t]
    return n_max


@njit(cache=True, nogil=True)
def _gather_tile(t0, t1, tf, active, first, index, level, emis, emis_shift, a_shift,
                 pi_shift, per_frame, gn, t_row, t_level, t_shift, t_emis):
    """Copy what the steps ``t0 .. t1 - 1`` read of every running sequence's frames into
    step-major tile arrays (entry ``(t - tf) * gn + i`` for sequence i at step t): the
    emission row, input level and log shift ``(pi_shift or a_shift[level]) +
    emis_shift[row]`` of the frame, and with a per-frame table (``per_frame``) the
    row itself.  Read one sequence's run of frames at a time, the frames come from
    memory in order; the steps then read the tile's rows next to one another instead
    of one row per sequence, far apart."""
    K = emis.shape[1]
    for i in range(active[t0]):
        f0 = first[i]
        t = t0
        while t < t1 and i < active[t]:
            f = f0 + t
            q = (t - tf) * gn + i
            r = index[f]
            lv = level[f]
            t_row[q] = r
            t_level[q] = lv
            t_shift[q] = (pi_shift if t == 0 else a_shift[lv]) + emis_shift[r]
            if per_frame:
                for j in range(K):
                    t_emis[q, j] = emis[r, j]
            t += 1


@njit(cache=True, nogil=True)
def forward_backward_batched(pi, pi_shift, A, a_shift, level, emis, emis_shift, index,
                             starts, ends, counted_starts, counted_ends, want_posteriors):
    """Scaled forward-backward over all sequences, every step of all running sequences
    (of a group, :func:`length_groups`) as one matrix product.

    Same arguments as :func:`~.forward_backward.forward_backward_scaled_levels` except
    that the initial and transition weights come scaled: ``pi`` (K,) and ``A`` (L, K, K)
    are the weights times ``exp(-pi_shift)`` and ``exp(-a_shift[l])``.  Same outputs
    (log_norm, frame_log_norm, start_counts, trans_counts (L, K, K), emis_counts).
    Sequences of length zero are not allowed.
    """
    K = pi.shape[0]
    n = starts.shape[0]
    L = A.shape[0]
    R = emis.shape[0]
    T = index.shape[0]
    lengths = ends - starts
    order = np.argsort(-lengths, kind="mergesort")
    # a frame's forward variables, and with a per-frame table its emission row and
    # emission counts, which a group's passes stream as well
    per_frame = R >= T
    bounds = length_groups(lengths, order, (3 if per_frame else 1) * K * 8)
    n_group = 0  # the largest group's sequences, frames and longest length
    group_frames = 0
    for g in range(bounds.shape[0] - 1):
        n_group = max(n_group, bounds[g + 1] - bounds[g])
        frames = 0
        for q in range(bounds[g], bounds[g + 1]):
            frames += lengths[order[q]]
        group_frames = max(group_frames, frames)
    longest = lengths[order[0]] if n > 0 else 0

    # without posteriors the forward variables keep two blocks, alternating
    log_norm, frame_log_norm, start_counts, trans_counts, emis_counts, alpha = fb_arrays(
        n, T, K, L, R, want_posteriors, group_frames, 2 * n_group)
    zeta = np.empty(group_frames if want_posteriors else 0)
    active = np.empty(longest + 1, dtype=np.int64)
    offset = np.empty(longest + 1, dtype=np.int64)
    first = np.empty(n_group, dtype=np.int64)  # first frame of every sorted sequence
    c_lo = np.empty(n_group, dtype=np.int64)
    c_hi = np.empty(n_group, dtype=np.int64)
    total = np.empty(n_group)
    acc = np.empty(K)
    gin = np.empty((n_group, K))
    gout = np.empty((n_group, K))
    sel = np.empty(n_group, dtype=np.int64)
    row_level = np.zeros(n_group, dtype=np.int64)
    AT = np.empty((L, K, K))
    for lv in range(L):
        for i in range(K):
            for j in range(K):
                AT[lv, i, j] = A[lv, j, i]
    beta = np.empty((n_group, K))
    # step-major copies of a tile's frames (a tile of the backward pass reads one
    # step more, the frames of t + 1)
    tile = (_TILE_STEPS + 1) * n_group
    t_row = np.empty(tile, dtype=np.int64)
    t_level = np.empty(tile, dtype=np.int64)
    t_shift = np.empty(tile)
    t_emis = np.empty((tile if per_frame else 0, K))
    t_gam = np.empty((tile if per_frame else 0, K))  # gamma of a tile's frames
    src = t_emis if per_frame else emis  # a step's emission rows: tile entry or row
    # Transition counts: sums[l] = sum of alpha_t (x) tmp_{t+1} over the counted
    # transitions of level l, with tmp_{t+1} = emis_{t+1} * beta_{t+1} / zeta_{t+1}
    # (then trans_counts = A * sums).  Plain case (one level, every frame counted):
    # tmp is written in step with alpha's rows (zero for a sequence's last frame) into
    # a buffer of at least _COUNT_ROWS rows, and each filled buffer is one product with
    # the rows of alpha as they are.  Otherwise the pairs are copied per level.
    sums = np.zeros((L, K, K))
    prod = np.empty((K, K))
    cap = max(_COUNT_ROWS, n_group)
    tbuf = np.empty((cap, K))
    pair_rows = 0 if L == 1 else _COUNT_ROWS
    for s in range(n):
        if counted_starts[s] != starts[s] or counted_ends[s] != ends[s]:
            pair_rows = _COUNT_ROWS
    pair_alpha = np.empty((L, pair_rows, K))
    pair_tmp = np.empty((L, pair_rows, K))
    n_pairs = np.zeros(L, dtype=np.int64)

    for g in range(bounds.shape[0] - 1):
        lo = bounds[g]
        gn = bounds[g + 1] - lo
        n_max = _steps(lengths, order, lo, lo + gn, active, offset)
        for i in range(gn):
            first[i] = starts[order[lo + i]]
            c_lo[i] = counted_starts[order[lo + i]]
            c_hi[i] = counted_ends[order[lo + i]]
            total[i] = 0.0

        # ------------------------------------------------------------ forward
        o_prev = 0
        for t0 in range(0, n_max, _TILE_STEPS):
            t1 = min(t0 + _TILE_STEPS, n_max)
            _gather_tile(t0, t1, t0, active, first, index, level, emis, emis_shift, a_shift,
                         pi_shift, per_frame, gn, t_row, t_level, t_shift, t_emis)
            for t in range(t0, t1):
                m = active[t]
                q0 = (t - t0) * gn
                o = offset[t] if want_posteriors else (t % 2) * gn
                cur = alpha[o:o + m]
                if t == 0:
                    for i in range(m):  # multiplied by the emission weights below
                        for j in range(K):
                            cur[i, j] = pi[j]
                else:
                    if L > 1:
                        for i in range(m):
                            row_level[i] = t_level[q0 + i]
                    _step_product(alpha[o_prev:o_prev + m], A, row_level, cur, acc, gin,
                                  gout, sel)
                for i in range(m):
                    q = q0 + i
                    z = _times_row_sum(cur, i, src, q if per_frame else t_row[q])
                    if z > 0.0:
                        inv = 1.0 / z
                        for j in range(K):
                            cur[i, j] *= inv
                        lz = np.log(z)
                    else:
                        for j in range(K):
                            cur[i, j] = 1.0 / K
                        lz = -np.inf
                    if want_posteriors:
                        zeta[o + i] = z
                    lz += t_shift[q]
                    t_shift[q] = lz
                    total[i] += lz
                o_prev = o
            # the tile's normalisers back to frame order, one sequence's run at a time
            for i in range(active[t0]):
                f0 = first[i]
                for t in range(t0, min(t1, lengths[order[lo + i]])):
                    frame_log_norm[f0 + t] = t_shift[(t - t0) * gn + i]
        for i in range(gn):
            log_norm[order[lo + i]] = total[i]
        if not want_posteriors:
            continue

        # ------------------------------------------------------------ backward
        aligned = pair_rows == 0
        hi = offset[n_max]  # alpha rows [.., hi) of the pending buffer (aligned case)
        # first row of the step's tmp rows in tbuf (then set a step ahead, below)
        base = cap - (hi - offset[n_max - 1]) if aligned else 0
        t1 = n_max
        while t1 > 0:
            t0 = max(0, t1 - _TILE_STEPS)
            # the tile's frames and those of the step after it (the pairs' levels)
            _gather_tile(t0, min(t1 + 1, n_max), t0, active, first, index, level, emis,
                         emis_shift, a_shift, pi_shift, per_frame, gn, t_row, t_level,
                         t_shift, t_emis)
            for t in range(t1 - 1, t0 - 1, -1):
                m = active[t]
                m1 = active[t + 1]  # the sequences that go on to t + 1
                o = offset[t]
                q0 = (t - t0) * gn
                qn = q0 + gn  # tile entries of t + 1
                at = alpha[o:o + m]
                # tmp_{t+1} (written at step t + 1, below) and rows of the pairs
                tmp = tbuf[base:base + m]
                if aligned:
                    for i in range(m1, m):
                        for j in range(K):
                            tmp[i, j] = 0.0
                else:
                    for i in range(m1):
                        f1 = first[i] + t + 1
                        if c_lo[i] <= f1 < c_hi[i]:
                            lv = t_level[qn + i]
                            c = n_pairs[lv]
                            if c == _COUNT_ROWS:
                                _add_outer(pair_alpha[lv], pair_tmp[lv], sums[lv], prod)
                                c = 0
                            for j in range(K):
                                pair_alpha[lv, c, j] = at[i, j]
                                pair_tmp[lv, c, j] = tmp[i, j]
                            n_pairs[lv] = c + 1
                if m1 > 0:
                    _step_product(tmp[:m1], AT, row_level, beta[:m1], acc, gin, gout, sel)
                for i in range(m1, m):  # sequences whose last frame is t
                    for j in range(K):
                        beta[i, j] = 1.0
                # The rows of step t - 1's tmp_t (those of the m sequences running at
                # t), after the count product of the pending rows where the buffer is
                # full, so that the pass below that reads beta_t writes them as well.
                if t > 0:
                    base = 0
                    if aligned:
                        o_p = offset[t - 1]
                        m_p = active[t - 1]
                        if hi - o_p > cap:
                            _add_outer(alpha[o_p + m_p:hi], tbuf[cap - (hi - o_p - m_p):cap],
                                       sums[0], prod)
                            hi = o_p + m_p
                        base = cap - (hi - o_p)
                    tmp = tbuf[base:base + m]
                # gamma_t: into emis_counts, or with a per-frame table into the tile
                # (added to emis_counts below, a sequence's run of rows at a time)
                for i in range(m):
                    f = first[i] + t
                    q = q0 + i
                    if c_lo[i] <= f < c_hi[i]:
                        if i < m1:
                            g_sum = _row_dot(at, i, beta, i)
                            ginv = 1.0 / g_sum if g_sum > 0.0 else 0.0
                        else:  # the last frame: gamma is alpha
                            ginv = 1.0
                        if per_frame:
                            for j in range(K):
                                t_gam[q, j] = at[i, j] * beta[i, j] * ginv
                        else:
                            r = t_row[q]
                            for j in range(K):
                                emis_counts[r, j] += at[i, j] * beta[i, j] * ginv
                        if t == 0:
                            for j in range(K):
                                start_counts[j] += at[i, j] * beta[i, j] * ginv
                    if t > 0:
                        z = zeta[o + i]
                        inv = 1.0 / z if z > 0.0 else 0.0
                        r = q if per_frame else t_row[q]
                        for j in range(K):
                            tmp[i, j] = src[r, j] * beta[i, j] * inv
                        if L > 1:
                            row_level[i] = t_level[q]
            if per_frame:
                for i in range(active[t0]):
                    f0 = first[i]
                    for t in range(t0, min(t1, lengths[order[lo + i]])):
                        if c_lo[i] <= f0 + t < c_hi[i]:
                            q = (t - t0) * gn + i
                            r = t_row[q]
                            for j in range(K):
                                emis_counts[r, j] += t_gam[q, j]
            t1 = t0
        if aligned:
            _add_outer(alpha[:hi], tbuf[cap - hi:cap], sums[0], prod)
    if not want_posteriors:
        return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts
    for lv in range(L):
        _add_outer(pair_alpha[lv, :n_pairs[lv]], pair_tmp[lv, :n_pairs[lv]], sums[lv], prod)
        for i in range(K):
            for j in range(K):
                trans_counts[lv, i, j] = A[lv, i, j] * sums[lv, i, j]
    return log_norm, frame_log_norm, start_counts, trans_counts, emis_counts
