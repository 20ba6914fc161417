"""Numba kernels for discrete DAGs with hidden nodes (pure functions of arrays).

Layout shared by every kernel
-----------------------------
All conditional probability tables (CPTs) live in one flat vector of length ``P``:
node ``j`` occupies ``[offset_j, offset_j + q_j r_j)``, row ``l`` (parent
configuration) of that table is the contiguous block ``offset_j + l r_j + k``.
``row_ptr`` (length ``n_rows + 1``) lists the start of every CPT row in that vector.

Inference works on compressed data: ``U`` distinct observed patterns with weights.
Pattern ``u`` owns the *configuration rows* ``row_start[u] .. row_start[u+1]-1`` of
``idx``; each configuration row is one joint setting of the nodes that are not
observed in that pattern (hidden nodes plus missing observed values), and
``idx[r, j]`` is the flat CPT entry that node ``j`` uses in that setting.  The
potential of a configuration is therefore ``sum_j log_phi[idx[r, j]]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "digamma",
    "enumerate_posterior",
    "pattern_log_normalisers",
    "dirichlet_update",
    "normalise_rows",
    "masked_dot",
    "log_dirichlet_integral_flat",
]


@njit(cache=True, nogil=True)
def digamma(x):
    """psi(x) for x > 0: upward recurrence to x >= 10, then the asymptotic series
    (truncation error below 1e-14 there)."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (
        1.0 / 12.0
        - inv2
        * (
            1.0 / 120.0
            - inv2 * (1.0 / 252.0 - inv2 * (1.0 / 240.0 - inv2 * (1.0 / 132.0)))
        )
    )
    return result + math.log(x) - 0.5 * inv - series


@njit(cache=True, nogil=True, inline="always")
def _row_potential(log_phi, idx, r):
    """``sum_j log_phi[idx[r, j]]``: the log potential of configuration row ``r``."""
    s = 0.0
    for j in range(idx.shape[1]):
        s += log_phi[idx[r, j]]
    return s


@njit(cache=True, nogil=True, inline="always")
def pattern_log_normaliser(log_phi, idx, a, b):
    """``ln sum_r exp(potential_r)`` over the configuration rows ``a .. b-1`` of one
    pattern (-inf if every configuration has zero potential)."""
    peak = -np.inf
    for r in range(a, b):
        s = _row_potential(log_phi, idx, r)
        if s > peak:
            peak = s
    if peak == -np.inf:
        return peak
    total = 0.0
    for r in range(a, b):
        total += math.exp(_row_potential(log_phi, idx, r) - peak)
    return peak + math.log(total)


@njit(cache=True, nogil=True)
def enumerate_posterior(log_phi, idx, row_start, weights, counts, post, log_z, entropy):
    """Exact inference by enumeration for every pattern.

    ``log_phi`` (P,) may be any log tables (normalised ln theta for EM, the
    sub-normalised E[ln theta] for VB); rows are never renormalised.  Writes
    ``post[r]`` (posterior of configuration row r within its pattern),
    ``log_z[u] = ln sum_r exp(potential_r)``, ``entropy[u]`` (entropy of the joint
    posterior of the unobserved nodes of pattern u) and ``counts`` (P,), the
    expected family counts ``sum_u w_u sum_r post[r] 1[entry used]``.
    A pattern with zero total potential gets ``log_z = -inf`` and no counts.
    """
    n_patterns = row_start.shape[0] - 1
    n_nodes = idx.shape[1]
    counts[:] = 0.0
    for u in range(n_patterns):
        a = row_start[u]
        b = row_start[u + 1]
        peak = -np.inf
        for r in range(a, b):
            s = _row_potential(log_phi, idx, r)
            post[r] = s
            if s > peak:
                peak = s
        if peak == -np.inf:
            log_z[u] = -np.inf
            entropy[u] = 0.0
            for r in range(a, b):
                post[r] = 0.0
            continue
        # one exp per configuration: post[r] <- exp(s_r - peak); the entropy uses
        # H = ln Z - sum_r p_r s_r (both relative to the peak)
        total = 0.0
        weighted = 0.0
        for r in range(a, b):
            s = post[r]
            e = math.exp(s - peak)
            post[r] = e
            total += e
            if e > 0.0:
                weighted += e * (s - peak)
        lz = peak + math.log(total)
        log_z[u] = lz
        inv = 1.0 / total
        w = weights[u]
        for r in range(a, b):
            p = post[r] * inv
            post[r] = p
            if p > 0.0:
                wp = w * p
                for j in range(n_nodes):
                    counts[idx[r, j]] += wp
        ent = math.log(total) - weighted * inv
        if ent < 0.0:  # round-off only
            ent = 0.0
        entropy[u] = ent


@njit(cache=True, nogil=True)
def pattern_log_normalisers(log_phi, idx, row_start, log_z):
    """``log_z[u] = ln sum_r exp(sum_j log_phi[idx[r, j]])``; with normalised tables
    this is ln p(y_u | theta), the likelihood of the observed part of pattern u."""
    for u in range(row_start.shape[0] - 1):
        log_z[u] = pattern_log_normaliser(log_phi, idx, row_start[u], row_start[u + 1])


@njit(cache=True, nogil=True)
def dirichlet_update(prior, counts, row_ptr, alpha, expected_log):
    """VBM step for every CPT row at once.

    ``alpha = prior + counts``; ``expected_log = psi(alpha) - psi(alpha_0)`` per row;
    returns ``sum_rows KL(Dir(alpha_row) || Dir(prior_row))``.
    """
    kl = 0.0
    n_rows = row_ptr.shape[0] - 1
    for i in range(n_rows):
        a = row_ptr[i]
        b = row_ptr[i + 1]
        a0 = 0.0
        l0 = 0.0
        for k in range(a, b):
            alpha[k] = prior[k] + counts[k]
            a0 += alpha[k]
            l0 += prior[k]
        psi0 = digamma(a0)
        kl += math.lgamma(a0) - math.lgamma(l0)
        for k in range(a, b):
            e = digamma(alpha[k]) - psi0
            expected_log[k] = e
            kl += math.lgamma(prior[k]) - math.lgamma(alpha[k]) + (alpha[k] - prior[k]) * e
    return kl


@njit(cache=True, nogil=True)
def normalise_rows(values, row_ptr, out):
    """``out`` = each CPT row of ``values`` divided by its sum; an all-zero row
    becomes uniform."""
    n_rows = row_ptr.shape[0] - 1
    for i in range(n_rows):
        a = row_ptr[i]
        b = row_ptr[i + 1]
        s = 0.0
        for k in range(a, b):
            s += values[k]
        if s > 0.0:
            for k in range(a, b):
                out[k] = values[k] / s
        else:
            for k in range(a, b):
                out[k] = 1.0 / (b - a)


@njit(cache=True, nogil=True)
def masked_dot(counts, log_values):
    """``sum_k counts[k] * log_values[k]`` with ``0 * (-inf) = 0``."""
    s = 0.0
    for k in range(counts.shape[0]):
        c = counts[k]
        if c != 0.0:
            s += c * log_values[k]
    return s


@njit(cache=True, nogil=True)
def log_dirichlet_integral_flat(prior, counts, row_ptr):
    """``sum_rows [lnB(prior + counts) - lnB(prior)]`` (real-valued counts allowed):
    the complete-data log marginal likelihood of a DAG with Dirichlet priors."""
    total = 0.0
    n_rows = row_ptr.shape[0] - 1
    for i in range(n_rows):
        a = row_ptr[i]
        b = row_ptr[i + 1]
        l0 = 0.0
        n0 = 0.0
        for k in range(a, b):
            l0 += prior[k]
            n0 += counts[k]
            total += math.lgamma(prior[k] + counts[k]) - math.lgamma(prior[k])
        total += math.lgamma(l0) - math.lgamma(l0 + n0)
    return total
