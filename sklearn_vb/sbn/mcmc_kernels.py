"""Compiled variational-MCMC chains on the weights of a sigmoid belief network.

One call runs ``n_iter`` iterations of one chain: the proposal, the log target
``ln p(w) + ln p(X | w)`` and the accept/reject step of every block, drawing its random
numbers from the chain's own ``numpy.random.Generator`` in exactly the order of the
Python kernels of :mod:`sklearn_vb._core.evidence.mcmc_moves` (so, for a seed, both give the
same chain up to rounding).

Data layout as in :mod:`sklearn_vb.sbn._kernels`: enumeration rows ``states`` (R, J) grouped into
patterns by ``row_start``, ``pattern_weight`` cases per pattern, node ``j``'s weights at
``w[w_ptr[j]:w_ptr[j+1]]``; ``rep_ptr``, ``rep_rows`` and ``row_rep`` list the distinct
configurations of each node and its inputs (:func:`node_configurations`).  Block ``b`` of the sampler holds the weights of node
``block_node[b]``, so a block move changes one column of the per-row, per-node terms
``ln sigma(s a)``: the log-likelihood of a block proposal costs O(R d_j) plus the
re-normalisation over the unobserved configurations, not a full evaluation.

``kind``: 0 mixture (with probability ``nu`` a block variational sweep, else a
random-walk sweep; de Freitas et al. 2001, Fig. 7), 1 independence MH with q for the
whole vector, 2 block variational MH (Fig. 6), 3 block random-walk Metropolis.
q is Gaussian: mean ``q_mean`` (D,), ``q_chol`` (D, D) the lower Cholesky factor of the
whole-vector covariance (used by ``kind=1``) and ``q_chol_blocks`` (D, D) holding the
Cholesky factors of the block marginals on its diagonal blocks (used by the block
sweeps); ``q_logdet_blocks`` (B,) and ``q_logdet`` their log-determinants.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._core.kernels.linalg import log_sum_exp_range
from ._kernels import _input, log_sigmoid

__all__ = ["sbn_vmcmc_chain", "node_configurations"]

_LOG_2PI = math.log(2.0 * math.pi)


def node_configurations(states, in_idx, w_ptr):
    """For every node ``j``, the distinct configurations of (node ``j``, its inputs) among
    the rows of ``states``: ``rep_rows[rep_ptr[j]:rep_ptr[j+1]]`` holds one row of each
    and ``row_rep[j, r]`` the configuration of row ``r`` (J, R)."""
    R, J = states.shape
    reps, ptr = [], [0]
    row_rep = np.empty((J, R), dtype=np.int64)
    for j in range(J):
        cols = [j] + [int(i) for i in in_idx[w_ptr[j]:w_ptr[j + 1]] if i >= 0]
        _, first, inverse = np.unique(states[:, cols], axis=0, return_index=True,
                                      return_inverse=True)
        reps.append(first.astype(np.int64))
        ptr.append(ptr[-1] + first.size)
        row_rep[j] = inverse.ravel()
    return np.asarray(ptr, dtype=np.int64), np.concatenate(reps), row_rep


@njit(cache=True)
def _node_terms(states, in_idx, w, w_ptr, offset, spin, j, rep_ptr, rep_rows, row_rep, out):
    """``ln sigma(s a)`` of node ``j`` in every row for the weights ``w``.

    Rows that agree on node ``j`` and its inputs share the term: it is computed once per
    distinct configuration (the rows ``rep_rows[rep_ptr[j]:rep_ptr[j+1]]``) and copied
    to row ``r`` from configuration ``row_rep[j, r]`` (a parentless node has two)."""
    R = states.shape[0]
    w0 = w_ptr[j]
    d = w_ptr[j + 1] - w0
    u0 = rep_ptr[j]
    U = rep_ptr[j + 1] - u0
    vals = np.empty(U)
    for i in range(U):
        r = rep_rows[u0 + i]
        a = offset[j]
        for k in range(d):
            a += _input(states, r, in_idx, w0 + k, spin) * w[w0 + k]
        vals[i] = log_sigmoid((2.0 * states[r, j] - 1.0) * a)
    for r in range(R):
        out[r] = vals[row_rep[j, r]]


@njit(cache=True)
def _pattern_total(rowll, row_start, pattern_weight):
    """``sum_p weight_p ln sum_{r in p} exp(rowll_r)``."""
    P = row_start.shape[0] - 1
    total = 0.0
    for p in range(P):
        a, b = row_start[p], row_start[p + 1]
        if b - a == 1:  # a fully observed case: no sum to form
            total += pattern_weight[p] * rowll[a]
        else:
            total += pattern_weight[p] * log_sum_exp_range(rowll, a, b)
    return total


@njit(cache=True)
def _log_prior(w, prior_mean, prior_var):
    D = w.shape[0]
    s = 0.0
    for i in range(D):
        z = w[i] - prior_mean[i]
        s += z * z
    return -0.5 * s / prior_var - 0.5 * D * math.log(2.0 * math.pi * prior_var)


@njit(cache=True)
def _gauss_log_pdf(x, mean, chol, a, b, logdet):
    """Log density of ``x[a:b]`` under ``N(mean[a:b], L L^T)``, ``L = chol[a:b, a:b]``."""
    d = b - a
    z = np.empty(d)
    s = 0.0
    for i in range(d):
        v = x[a + i] - mean[a + i]
        for k in range(i):
            v -= chol[a + i, a + k] * z[k]
        z[i] = v / chol[a + i, a + i]
        s += z[i] * z[i]
    return -0.5 * s - 0.5 * d * _LOG_2PI - 0.5 * logdet


@njit(cache=True)
def _gauss_draw(gen, mean, chol, a, b, out):
    """``out[a:b] = mean[a:b] + L z`` with ``d`` standard normals from ``gen``."""
    d = b - a
    z = np.empty(d)
    for i in range(d):
        z[i] = gen.standard_normal()
    for i in range(d):
        v = mean[a + i]
        for k in range(i + 1):
            v += chol[a + i, a + k] * z[k]
        out[a + i] = v


@njit(cache=True)
def _full_state(w, states, row_start, pattern_weight, in_idx, w_ptr, offset, spin, rep_ptr,
                rep_rows, row_rep, terms, rowll):
    """Fill ``terms`` (R, J) and ``rowll`` (R,) for ``w``; returns ``ln p(X | w)``."""
    R, J = states.shape
    col = np.empty(R)
    for r in range(R):
        rowll[r] = 0.0
    for j in range(J):
        _node_terms(states, in_idx, w, w_ptr, offset, spin, j, rep_ptr, rep_rows, row_rep, col)
        for r in range(R):
            terms[r, j] = col[r]
            rowll[r] += col[r]
    return _pattern_total(rowll, row_start, pattern_weight)


@njit(cache=True)
def sbn_vmcmc_chain(gen, w, n_iter, kind, nu, block_ptr, block_node, states, row_start,
                    pattern_weight, in_idx, w_ptr, offset, spin, rep_ptr, rep_rows, row_rep,
                    prior_mean, prior_var,
                    q_mean, q_chol, q_logdet, q_chol_blocks, q_logdet_blocks, rw_sd,
                    out_w, out_log_target, accepts, counts):
    """Run one chain from ``w`` (D,), updated in place; iteration ``t``'s state goes to
    ``out_w[t]`` and its ``ln p(w) + ln p(X | w)`` to ``out_log_target[t]``.

    ``accepts`` (3, B) is incremented with the accepted moves of the block variational
    sweep (row 0, per block), the random-walk sweep (row 1, per block) and the
    whole-vector independence move (row 2, column 0); ``counts`` (4,) with the number of
    block sweeps, random-walk sweeps and independence moves run and of likelihood
    evaluations.
    """
    R, J = states.shape
    B = block_node.shape[0]
    D = w.shape[0]
    terms = np.empty((R, J))
    rowll = np.empty(R)
    new_rowll = np.empty(R)
    col = np.empty(R)
    prop = np.empty(D)
    new_terms = np.empty((R, J))
    eps = np.empty(D)
    logu = np.empty(B)
    ll = _full_state(w, states, row_start, pattern_weight, in_idx, w_ptr, offset, spin, rep_ptr,
                     rep_rows, row_rep, terms, rowll)
    lp = _log_prior(w, prior_mean, prior_var)
    if math.isnan(ll):
        ll = -np.inf
    for t in range(n_iter):
        # which sweep: the mixture draws its choice first (one uniform per iteration)
        sweep = kind
        if kind == 0:
            sweep = 2 if gen.random() < nu else 3
        if sweep == 1:
            _gauss_draw(gen, q_mean, q_chol, 0, D, prop)
            new_ll = _full_state(prop, states, row_start, pattern_weight, in_idx, w_ptr, offset,
                                 spin, rep_ptr, rep_rows, row_rep, new_terms, new_rowll)
            if math.isnan(new_ll):
                new_ll = -np.inf
            new_lp = _log_prior(prop, prior_mean, prior_var)
            lr = (new_lp + new_ll - _gauss_log_pdf(prop, q_mean, q_chol, 0, D, q_logdet)
                  - lp - ll + _gauss_log_pdf(w, q_mean, q_chol, 0, D, q_logdet))
            counts[2] += 1
            counts[3] += 1
            u = gen.random()
            if not math.isnan(lr) and math.log(u) < lr:
                accepts[2, 0] += 1
                for i in range(D):
                    w[i] = prop[i]
                for r in range(R):
                    rowll[r] = new_rowll[r]
                    for j in range(J):
                        terms[r, j] = new_terms[r, j]
                ll, lp = new_ll, new_lp
        else:
            if sweep == 3:
                # the random walk draws all its numbers up front, as its Python kernel
                for i in range(D):
                    eps[i] = gen.standard_normal()
                for b in range(B):
                    logu[b] = math.log(1.0 - gen.random())
                counts[1] += 1
            else:
                counts[0] += 1
            for i in range(D):
                prop[i] = w[i]
            for b in range(B):
                a0, a1 = block_ptr[b], block_ptr[b + 1]
                j = block_node[b]
                if sweep == 3:
                    for i in range(a0, a1):
                        prop[i] = w[i] + rw_sd[i] * eps[i]
                else:
                    _gauss_draw(gen, q_mean, q_chol_blocks, a0, a1, prop)
                _node_terms(states, in_idx, prop, w_ptr, offset, spin, j, rep_ptr, rep_rows,
                            row_rep, col)
                for r in range(R):
                    new_rowll[r] = rowll[r] - terms[r, j] + col[r]
                new_ll = _pattern_total(new_rowll, row_start, pattern_weight)
                if math.isnan(new_ll):
                    new_ll = -np.inf
                new_lp = _log_prior(prop, prior_mean, prior_var)
                counts[3] += 1
                lr = new_lp + new_ll - lp - ll
                if sweep == 2:
                    lr += (_gauss_log_pdf(w, q_mean, q_chol_blocks, a0, a1, q_logdet_blocks[b])
                           - _gauss_log_pdf(prop, q_mean, q_chol_blocks, a0, a1,
                                            q_logdet_blocks[b]))
                    u = math.log(gen.random())
                else:
                    u = logu[b]
                if not math.isnan(lr) and u < lr:
                    accepts[0 if sweep == 2 else 1, b] += 1
                    for i in range(a0, a1):
                        w[i] = prop[i]
                    for r in range(R):
                        terms[r, j] = col[r]
                        rowll[r] = new_rowll[r]
                    ll, lp = new_ll, new_lp
                else:
                    for i in range(a0, a1):
                        prop[i] = w[i]
            # the incrementally updated row sums drift by rounding: refresh once a sweep
            for r in range(R):
                s = 0.0
                for j in range(J):
                    s += terms[r, j]
                rowll[r] = s
            ll = _pattern_total(rowll, row_start, pattern_weight)
            if math.isnan(ll):
                ll = -np.inf
        for i in range(D):
            out_w[t, i] = w[i]
        out_log_target[t] = lp + ll
