"""Exact inference on the joint state table of a pairwise discrete MRF by zeta transforms.

The joint states are the cells of the table of shape ``K = (K_0, ..., K_{p-1})`` in C
order (node 0 most significant, ``strides[i] = prod_{j > i} K_j``), as
:meth:`sklearn_vb.mrf.layout.MRFLayout.all_states` lists them.  Every feature of the
layout is the indicator of a *partial assignment* (one or two nodes at states >= 1;
state 0 is the reference, :mod:`sklearn_vb.mrf.layout`), and a partial assignment is
itself a cell of the table, with the unconstrained nodes at 0.  Two transforms along
the axes, ``O(M sum_i (K_i - 1) / K_i)`` additions each for ``M = prod K_i`` cells,
replace the ``(M, F)`` feature matrix:

* the energy table ``E(x) = sum_f coef_f f(x)``: the coefficients placed at their
  features' cells, then along every axis ``T[.., k, ..] += T[.., 0, ..]`` for ``k >= 1``
  (each state gathers the coefficients of the partial assignments it extends);
* the marginal table ``m(a) = P(x_i = a_i for every i with a_i >= 1)``: the
  probabilities, then along every axis ``T[.., 0, ..] += sum_{k >= 1} T[.., k, ..]``
  (state 0 of an axis comes to mean "any state").  ``m`` at a feature's cell is its
  mean; the product of two features is the indicator of the union of their partial
  assignments (or 0 when they give one node two states), so
  ``Cov(f, g) = m(f u g) - m(f) m(g)`` reads every covariance, also of features of
  edges the layout does not have, off the same table.

The marginal transform sums the table in a balanced tree along the axes (binary
tables: pairwise), so the normaliser ``m(0)`` is as accurate as a pairwise sum.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["transform_plan", "energy_table", "exp_table", "marginal_table", "log_partitions",
           "assignment_cells", "covariance_block"]


def transform_plan(K, block_max=8, chunk_max=4096, tile=256):
    """The strides of the table of shape ``K`` and the plan of its transforms.

    The trailing axes whose cells fit in a block of at most ``block_max`` are transformed
    block by block from a list of ``(destination, source)`` cell pairs (their runs along
    an axis are too short for vector loops), the other axes by contiguous runs.  For
    tables larger than the caches the axes are taken in two groups: the trailing axes
    within chunks of at most ``chunk_max`` cells, chunk by chunk, then the leading
    ``n_split`` axes column tile by column tile (``tile`` cells of every chunk at a
    time), so that each group reads the table about once instead of once per axis.
    Returns ``(strides, plan, up_pairs, down_pairs)`` with ``plan = (n_lead, block,
    n_split, chunk, tile)``."""
    K = np.asarray(K, dtype=np.int64)
    p = K.size
    strides = np.ones(p, dtype=np.int64)
    for i in range(p - 2, -1, -1):
        strides[i] = strides[i + 1] * K[i + 1]
    n_lead, block = p, 1
    while n_lead > 0 and block * K[n_lead - 1] <= block_max:
        n_lead -= 1
        block *= int(K[n_lead])
    n_split, chunk = n_lead, block
    while n_split > 0 and chunk * K[n_split - 1] <= max(chunk_max, block):
        n_split -= 1
        chunk *= int(K[n_split])
    up, down = [], []
    for i in range(n_lead, p):
        for c in range(block):
            d = (c // int(strides[i])) % int(K[i])
            if d >= 1:
                up.append((c, c - d * int(strides[i])))
                down.append((c - d * int(strides[i]), c))
    as_pairs = lambda v: np.asarray(v, dtype=np.int64).reshape(-1, 2)  # noqa: E731
    plan = (n_lead, block, n_split, chunk, max(1, int(tile)))
    return strides, plan, as_pairs(up), as_pairs(down)


@njit(cache=True)
def _add_run(T, dst, src, n):
    """``T[dst:dst + n] += T[src:src + n]`` (disjoint runs), through views so that the
    loop vectorises."""
    a = T[dst:dst + n]
    b = T[src:src + n]
    for c in range(n):
        a[c] += b[c]


@njit(cache=True)
def _transform(T, K, strides, n_lead, block, n_split, chunk, tile, pairs, up):
    """Along every axis, ``T[.., k, ..] += T[.., 0, ..]`` for ``k >= 1`` (``up``) or
    ``T[.., 0, ..] += sum_{k >= 1} T[.., k, ..]`` (in place; ``pairs``: the plan's pairs
    of the same direction).  The transforms along different axes commute, and each
    group of axes maps the cells of a chunk (trailing axes) or of a column set (leading
    axes) among themselves, so the groups are applied piece by piece."""
    M = T.size
    for c0 in range(0, M, chunk):
        for base in range(c0, c0 + chunk, block):
            for q in range(pairs.shape[0]):
                T[base + pairs[q, 0]] += T[base + pairs[q, 1]]
        for i in range(n_split, n_lead):
            s = strides[i]
            k = K[i]
            for base in range(c0, c0 + chunk, s * k):
                for d in range(1, k):
                    if up:
                        _add_run(T, base + d * s, base, s)
                    else:
                        _add_run(T, base, base + d * s, s)
    for t0 in range(0, chunk, tile):
        w = min(tile, chunk - t0)
        for i in range(n_split):
            s = strides[i]
            k = K[i]
            for base in range(0, M, s * k):
                for r in range(0, s, chunk):
                    a = base + r + t0
                    for d in range(1, k):
                        if up:
                            _add_run(T, a + d * s, a, w)
                        else:
                            _add_run(T, a, a + d * s, w)


@njit(cache=True)
def energy_table(coef, cell, K, strides, n_lead, block, n_split, chunk, tile, up_pairs, out):
    """``out[x] = sum_f coef[f] f(x)`` for every joint state ``x`` (``cell[f]``: the cell of
    feature ``f``'s partial assignment; distinct features have distinct cells)."""
    out[:] = 0.0
    for f in range(coef.size):
        out[cell[f]] += coef[f]
    _transform(out, K, strides, n_lead, block, n_split, chunk, tile, up_pairs, True)


@njit(cache=True)
def marginal_table(T, K, strides, n_lead, block, n_split, chunk, tile, down_pairs):
    """From a table of (unnormalised) probabilities, the (unnormalised) probability of
    every partial assignment, in place; ``T[0]`` is the total."""
    _transform(T, K, strides, n_lead, block, n_split, chunk, tile, down_pairs, False)


def exp_table(energy, out):
    """``out = exp(energy - max energy)`` (NumPy's vectorised exponential); returns the
    maximum."""
    mx = float(energy.max())
    np.subtract(energy, mx, out=out)
    np.exp(out, out=out)
    return mx


@njit(cache=True)
def _log_partitions_small(coefs, cell, K, strides, n_lead, block, n_split, chunk, tile, up_pairs,
                          out):
    """``ln Z`` of every row of ``coefs`` in one compiled loop (small tables, where a
    call per row would cost more than the row)."""
    M = 1
    for k in K:
        M *= k
    en = np.empty(M)
    for c in range(coefs.shape[0]):
        energy_table(coefs[c], cell, K, strides, n_lead, block, n_split, chunk, tile, up_pairs, en)
        mx = -np.inf
        for t in range(M):
            mx = max(mx, en[t])
        total = 0.0
        for t in range(M):
            total += np.exp(en[t] - mx)
        out[c] = mx + np.log(total)


#: up to this many joint states a batch of ln Z runs in one compiled loop
SMALL_TABLE = 1024


def log_partitions(coefs, cell, K, strides, plan, up_pairs):
    """``ln Z`` of every row of ``coefs`` (C, F) (``plan``: of :func:`transform_plan`)."""
    M = int(np.prod(K))
    out = np.empty(coefs.shape[0])
    if M <= SMALL_TABLE:
        _log_partitions_small(coefs, cell, K, strides, *plan, up_pairs, out)
        return out
    en = np.empty(M)
    for c in range(coefs.shape[0]):
        energy_table(coefs[c], cell, K, strides, *plan, up_pairs, en)
        mx = exp_table(en, en)
        out[c] = mx + np.log(np.sum(en))  # pairwise summation
    return out


@njit(cache=True)
def assignment_cells(nodes, states, strides):
    """The cell of every partial assignment ``(nodes[f], states[f])`` (rows of two
    entries, node -1 where unused)."""
    out = np.empty(nodes.shape[0], dtype=np.int64)
    for f in range(nodes.shape[0]):
        c = 0
        for r in range(nodes.shape[1]):
            if nodes[f, r] >= 0:
                c += states[f, r] * strides[nodes[f, r]]
        out[f] = c
    return out


@njit(cache=True)
def _union_cell(na, sa, nb, sb, r, strides):
    """Cell of the union of the assignments of row ``r`` of ``(na, sa)`` and of
    ``(nb, sb)`` (``nb``, ``sb``: 1-D rows); -1 when they give a node two states."""
    c = 0
    for u in range(na.shape[1]):
        if na[r, u] >= 0:
            c += sa[r, u] * strides[na[r, u]]
    for v in range(nb.size):
        node = nb[v]
        if node < 0:
            continue
        shared = False
        for u in range(na.shape[1]):
            if na[r, u] == node:
                if sa[r, u] != sb[v]:
                    return -1
                shared = True
        if not shared:
            c += sb[v] * strides[node]
    return c


@njit(cache=True)
def covariance_block(m, strides, nodes_a, states_a, mean_a, nodes_b, states_b, mean_b, out):
    """``out[f, g] = Cov(f, g) = m(f u g) - mean_a[f] mean_b[g]`` of the assignment
    indicators ``f`` of ``(nodes_a, states_a)`` and ``g`` of ``(nodes_b, states_b)``,
    from the normalised marginal table ``m``."""
    for g in range(nodes_b.shape[0]):
        nb = nodes_b[g]
        sb = states_b[g]
        for f in range(nodes_a.shape[0]):
            c = _union_cell(nodes_a, states_a, nb, sb, f, strides)
            joint = m[c] if c >= 0 else 0.0
            out[f, g] = joint - mean_a[f] * mean_b[g]
