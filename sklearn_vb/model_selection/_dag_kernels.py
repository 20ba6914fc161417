"""Numba kernels of the structure search over fully observed discrete DAGs.

* :func:`family_table` / :func:`family_loglik`: the count table of one family (node and
  parent set) from the distinct data patterns, and its maximised log-likelihood
  ``sum_{l,k} N_lk ln(N_lk / N_l)``, in one pass over the patterns.  The table's rows
  are the parent configurations that occur, in increasing mixed-radix order (first
  parent most significant), which is the order of ``np.unique`` over the parent
  columns; the log-likelihood sums its terms in that order with NumPy's pairwise
  summation, so it is the value ``np.sum`` gives on the same terms to the last bit
  (a climb's ties between score-equivalent graphs are broken on such last bits).
* :func:`legal_moves` / :func:`best_move`: the single-edge moves (add, remove,
  reverse) of a DAG that keep it acyclic and within the constraints, with their score
  gains and the Zobrist hash of the graph after the move.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["family_table", "family_loglik", "family_bics", "legal_moves", "best_move",
           "pairwise_sum"]

# a (q, r) count table is filled densely when it has at most _DENSE_CELLS cells or
# _DENSE_PER_PATTERN per data pattern; sparser ones go through a sort of the patterns'
# configuration codes
_DENSE_CELLS = 1 << 16
_DENSE_PER_PATTERN = 8


@njit(cache=True, nogil=True)
def _block_sum(a, lo, n):
    """NumPy's sum of a block of at most 128 values: eight accumulators, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    m = n - n % 8
    i = 8
    while i < m:
        b = lo + i
        r0 += a[b]
        r1 += a[b + 1]
        r2 += a[b + 2]
        r3 += a[b + 3]
        r4 += a[b + 4]
        r5 += a[b + 5]
        r6 += a[b + 6]
        r7 += a[b + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def pairwise_sum(a, lo, n):
    """``a[lo:lo + n].sum()`` in NumPy's order, so it matches ``np.sum`` of a contiguous
    float64 array bit for bit: blocks of at most 128 values by :func:`_block_sum`, longer
    runs split in two (the first half a multiple of 8) and the halves' sums added.

    The recursion runs on an explicit stack (numba's cache does not reload recursive
    functions reliably)."""
    if n <= 128:
        return _block_sum(a, lo, n)
    # frames (start, length, halves done); the depth is at most log2(n / 128) + 1
    f_lo = np.empty(192, dtype=np.int64)
    f_n = np.empty(192, dtype=np.int64)
    f_done = np.empty(192, dtype=np.bool_)
    vals = np.empty(96)
    top, nv = 1, 0
    f_lo[0], f_n[0], f_done[0] = lo, n, False
    while top > 0:
        top -= 1
        s, m, done = f_lo[top], f_n[top], f_done[top]
        if m <= 128:
            vals[nv] = _block_sum(a, s, m)
            nv += 1
        elif done:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
        else:
            m2 = m // 2
            m2 -= m2 % 8
            f_lo[top], f_n[top], f_done[top] = s, m, True
            f_lo[top + 1], f_n[top + 1], f_done[top + 1] = s + m2, m - m2, False
            f_lo[top + 2], f_n[top + 2], f_done[top + 2] = s, m2, False
            top += 3
    return vals[0]


@njit(cache=True, nogil=True)
def _n_configurations(parents, radices):
    q = 1
    for i in range(parents.size):
        q *= radices[parents[i]]
    return q


@njit(cache=True, nogil=True)
def _is_dense(q, r, U):
    return q * r <= max(_DENSE_CELLS, _DENSE_PER_PATTERN * U)


@njit(cache=True, nogil=True)
def _dense_counts(codes_t, weights, j, parents, radices, q):
    """``(q, r_j)`` counts of every configuration and whether each occurs, in one pass
    over the patterns (configuration code: first parent most significant)."""
    U = codes_t.shape[1]
    r = radices[j]
    k = parents.size
    rad = np.empty(k, dtype=np.int64)
    for i in range(k):
        rad[i] = radices[parents[i]]
    dense = np.zeros((q, r))
    seen = np.zeros(q, dtype=np.bool_)
    xj = codes_t[j]
    for u in range(U):
        key = 0
        for i in range(k):
            key = key * rad[i] + codes_t[parents[i], u]
        dense[key, xj[u]] += weights[u]
        seen[key] = True
    return dense, seen


@njit(cache=True, nogil=True)
def _sorted_configurations(codes_t, j, parents, radices):
    """Configuration code of every pattern and the patterns in increasing code order
    (for tables too sparse to hold densely)."""
    U = codes_t.shape[1]
    key = np.zeros(U, dtype=np.int64)
    for i in range(parents.size):
        p = parents[i]
        rp = radices[p]
        for u in range(U):
            key[u] = key[u] * rp + codes_t[p, u]
    return key, np.argsort(key, kind="mergesort")


@njit(cache=True, nogil=True)
def family_table(codes_t, weights, j, parents, radices):
    """The ``(observed configurations, r_j)`` count table of node ``j`` given
    ``parents`` (int64 array, in the order that defines the configuration code: first
    parent most significant), rows in increasing code order.  ``codes_t`` holds the
    patterns one row per node; ``radices`` are the node cardinalities.  The number of
    cells ``q r_j`` must fit in int64 (the caller checks)."""
    U = codes_t.shape[1]
    r = radices[j]
    q = _n_configurations(parents, radices)
    if _is_dense(q, r, U):
        dense, seen = _dense_counts(codes_t, weights, j, parents, radices, q)
        out = np.empty((seen.sum(), r))
        i = 0
        for l in range(q):
            if seen[l]:
                out[i] = dense[l]
                i += 1
        return out
    key, order = _sorted_configurations(codes_t, j, parents, radices)
    n_rows = 0
    for i in range(U):
        if i == 0 or key[order[i]] != key[order[i - 1]]:
            n_rows += 1
    out = np.zeros((n_rows, r))
    l = -1
    for i in range(U):
        u = order[i]
        if i == 0 or key[u] != key[order[i - 1]]:
            l += 1
        out[l, codes_t[j, u]] += weights[u]
    return out


@njit(cache=True, nogil=True)
def _add_row_terms(row, terms, m):
    """Append ``N_k ln(N_k / N)`` of a table row's nonzero cells to ``terms[m:]``."""
    total = pairwise_sum(row, 0, row.size)
    for k in range(row.size):
        if row[k] > 0:
            terms[m] = row[k] * math.log(row[k] / total)
            m += 1
    return m


@njit(cache=True, nogil=True)
def table_loglik(N):
    """``sum_{l,k: N_lk > 0} N_lk ln(N_lk / N_l)`` summed as ``np.sum`` sums the terms
    in row-major order."""
    n_rows, r = N.shape
    terms = np.empty(n_rows * r)
    m = 0
    for l in range(n_rows):
        m = _add_row_terms(N[l], terms, m)
    return pairwise_sum(terms, 0, m)


@njit(cache=True, nogil=True)
def family_loglik(codes_t, weights, j, parents, radices):
    """``table_loglik(family_table(...))`` without building the compact table: rows
    that never occur have no nonzero cell, so they add no term."""
    U = codes_t.shape[1]
    r = radices[j]
    q = _n_configurations(parents, radices)
    terms = np.empty(U)  # one nonzero cell at most per pattern
    m = 0
    if _is_dense(q, r, U):
        dense, seen = _dense_counts(codes_t, weights, j, parents, radices, q)
        for l in range(q):
            if seen[l]:
                m = _add_row_terms(dense[l], terms, m)
        return pairwise_sum(terms, 0, m)
    key, order = _sorted_configurations(codes_t, j, parents, radices)
    row = np.zeros(r)
    for i in range(U):
        u = order[i]
        row[codes_t[j, u]] += weights[u]
        if i == U - 1 or key[order[i + 1]] != key[u]:
            m = _add_row_terms(row, terms, m)
            row[:] = 0.0
    return pairwise_sum(terms, 0, m)


@njit(cache=True, nogil=True)
def family_bics(codes_t, weights, j, parents_flat, offsets, radices, log_n, key_limit):
    """The BIC term ``loglik - (r_j - 1) q ln(n) / 2`` of the families of node ``j``
    with parents ``parents_flat[offsets[i]:offsets[i + 1]]``; NaN for a family with
    ``q r_j >= key_limit`` cells (left to the caller)."""
    n_fam = offsets.size - 1
    out = np.empty(n_fam)
    r = radices[j]
    for i in range(n_fam):
        parents = parents_flat[offsets[i]:offsets[i + 1]]
        q = 1
        big = False
        for p in parents:
            if q > key_limit // (radices[p] * r):
                big = True
                break
            q *= radices[p]
        if big:
            out[i] = np.nan
            continue
        ll = family_loglik(codes_t, weights, j, parents, radices)
        out[i] = ll - 0.5 * (r - 1) * q * log_n
    return out


# --------------------------------------------------------------------------- moves
@njit(cache=True, nogil=True)
def _reach(E):
    """``R[u, v]``: a directed path of length >= 1 from u to v (depth-first from each u)."""
    J = E.shape[0]
    R = np.zeros((J, J), dtype=np.bool_)
    stack = np.empty(J, dtype=np.int64)
    for s in range(J):
        top = 0
        for v in range(J):
            if E[s, v] and not R[s, v]:
                R[s, v] = True
                stack[top] = v
                top += 1
        while top > 0:
            top -= 1
            u = stack[top]
            for v in range(J):
                if E[u, v] and not R[s, v]:
                    R[s, v] = True
                    stack[top] = v
                    top += 1
    return R


@njit(cache=True, nogil=True)
def _move_masks(E, add_gain, pair_ok, required, max_in_degree, kinds):
    """Legal add / remove / reverse masks (``max_in_degree`` < 0: no limit)."""
    J = E.shape[0]
    R = _reach(E)
    add = np.zeros((J, J), dtype=np.bool_)
    rem = np.zeros((J, J), dtype=np.bool_)
    rev = np.zeros((J, J), dtype=np.bool_)
    room = np.ones(J, dtype=np.bool_)
    if max_in_degree >= 0:
        for c in range(J):
            d = 0
            for p in range(J):
                if E[p, c]:
                    d += 1
            room[c] = d < max_in_degree
    for p in range(J):
        for c in range(J):
            if E[p, c]:
                if required[p, c]:
                    continue
                rem[p, c] = kinds[1]
                if kinds[2] and pair_ok[c, p] and room[p]:
                    # p -> c reversible when no other path p ~> c exists (it would close
                    # a cycle)
                    other = False
                    for w in range(J):
                        if E[p, w] and R[w, c]:
                            other = True
                            break
                    rev[p, c] = not other
            elif (kinds[0] and np.isfinite(add_gain[p, c]) and not E[c, p]
                  and not R[c, p]):
                add[p, c] = True
    return add, rem, rev


@njit(cache=True, nogil=True)
def legal_moves(E, add_gain, rem_gain, pair_ok, required, max_in_degree, kinds, zobrist, h):
    """Every legal move as arrays (kind 0/1/2 = add/remove/reverse, parent, child, gain,
    hash after), adds first, then removals, then reversals, each in row-major order of
    (parent, child)."""
    add, rem, rev = _move_masks(E, add_gain, pair_ok, required, max_in_degree, kinds)
    n = add.sum() + rem.sum() + rev.sum()
    kind = np.empty(n, dtype=np.int64)
    pp = np.empty(n, dtype=np.int64)
    cc = np.empty(n, dtype=np.int64)
    gain = np.empty(n)
    hh = np.empty(n, dtype=np.int64)
    J = E.shape[0]
    i = 0
    for k in range(3):
        mask = add if k == 0 else (rem if k == 1 else rev)
        for p in range(J):
            for c in range(J):
                if not mask[p, c]:
                    continue
                kind[i], pp[i], cc[i] = k, p, c
                if k == 0:
                    gain[i] = add_gain[p, c]
                    hh[i] = h ^ zobrist[p, c]
                elif k == 1:
                    gain[i] = rem_gain[p, c]
                    hh[i] = h ^ zobrist[p, c]
                else:
                    gain[i] = rem_gain[p, c] + add_gain[c, p]
                    hh[i] = h ^ zobrist[p, c] ^ zobrist[c, p]
                i += 1
    return kind, pp, cc, gain, hh


@njit(cache=True, nogil=True)
def best_move(E, add_gain, rem_gain, pair_ok, required, max_in_degree, kinds, zobrist, h,
              tabu):
    """The legal move of highest gain whose graph's hash is not in ``tabu`` (the first
    in the order of :func:`legal_moves` among equal gains): ``(n_legal, kind, parent,
    child, gain, hash after)``, kind -1 when every legal move is tabu."""
    kind, pp, cc, gain, hh = legal_moves(E, add_gain, rem_gain, pair_ok, required,
                                         max_in_degree, kinds, zobrist, h)
    pick = -1
    for i in range(gain.size):
        if pick >= 0 and not gain[i] > gain[pick]:
            continue
        banned = False
        for t in range(tabu.size):
            if tabu[t] == hh[i]:
                banned = True
                break
        if not banned:
            pick = i
    if pick < 0:
        return gain.size, -1, -1, -1, -np.inf, h
    return gain.size, kind[pick], pp[pick], cc[pick], gain[pick], hh[pick]
