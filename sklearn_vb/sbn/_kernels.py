"""Compiled loops of the sigmoid belief network (binary nodes, logistic conditionals).

Every case is expanded into its enumeration rows: one row per joint configuration of
the case's unobserved nodes, holding the 0/1 states of all nodes (``states``, shape
(rows, J)).  Node ``j`` has the input vector ``u`` of length ``d_j``: input ``k`` is the
constant 1 when ``in_idx[w_ptr[j] + k] < 0`` (the bias) and the state of node
``in_idx[w_ptr[j] + k]`` otherwise (0/1, or -1/+1 with ``spin``); its weights sit at ``w[w_ptr[j]:w_ptr[j+1]]``.  A
fixed (known) bias is not a weight: it is ``offset[j]``, and the activation is
``a = offset[j] + w.u``.  Second-moment matrices ``E[w w^T]`` are stored
row-major at ``M2[m2_ptr[j]:m2_ptr[j+1]]``.

The Jaakkola–Jordan bound (Jaakkola & Jordan 2000) for ``s = 2x - 1`` and
activation ``a``: ``ln sigma(s a) >= ln sigma(xi) + (s a - xi)/2 - lambda(xi)(a^2 - xi^2)``
with ``lambda(xi) = tanh(xi/2)/(4 xi)``; its expectation under q(w) replaces ``a`` by
``E[a]`` and ``a^2`` by ``E[a^2]``, and the best ``xi`` is ``sqrt(E[a^2])``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._core.kernels.linalg import log_sum_exp_range

__all__ = ["jj_lambda", "log_sigmoid", "jj_row_terms", "normalise_rows", "jj_statistics",
           "pattern_log_likelihoods", "sequential_pass"]


@njit(cache=True)
def log_sigmoid(x):
    """ln sigma(x), stable for large |x|."""
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(cache=True)
def jj_lambda(xi):
    """lambda(xi) = tanh(xi/2) / (4 xi), with its limit 1/8 at xi = 0."""
    a = abs(xi)
    if a < 1e-4:
        return 0.125 - a * a / 96.0
    return math.tanh(0.5 * a) / (4.0 * a)


@njit(cache=True)
def _input(states, r, in_idx, k, spin):
    """Input ``k`` of a row: 1 for the bias (``in_idx < 0``), else the parent's state,
    0/1 or, with ``spin``, -1/+1."""
    i = in_idx[k]
    if i < 0:
        return 1.0
    if spin:
        return 2.0 * states[r, i] - 1.0
    return states[r, i]


@njit(cache=True)
def _max_inputs(w_ptr):
    """The largest number of inputs of a node (at least 1)."""
    out = 1
    for j in range(w_ptr.shape[0] - 1):
        out = max(out, w_ptr[j + 1] - w_ptr[j])
    return out


@njit(cache=True)
def _nonzero_inputs(states, r, in_idx, w0, d, spin, nz, val):
    """The non-zero inputs of one node in row ``r``, in order: positions into
    ``nz``, values into ``val``; returns how many.  (Zero inputs add nothing to the
    sums over input pairs, which are then accumulated in the same order as over all
    inputs.)"""
    n = 0
    for k in range(d):
        u = _input(states, r, in_idx, w0 + k, spin)
        if u != 0.0:
            nz[n] = k
            val[n] = u
            n += 1
    return n


@njit(cache=True)
def jj_row_terms(states, in_idx, mean, w_ptr, M2, m2_ptr, offset, spin, xi, set_xi, terms):
    """Expected Jaakkola–Jordan bound of ln p(row | w), summed over nodes, per row.

    The activation of node ``j`` is ``a = offset[j] + w.u`` (``offset`` a fixed bias,
    0 when the bias is a weight), so ``E[a^2] = u^T E[w w^T] u + 2 offset E[w.u]
    + offset^2``.  With ``set_xi`` the variational parameters are first set to their
    optimum ``xi[r, j] = sqrt(E[a^2])``; otherwise the stored ones are used.
    """
    R, J = states.shape
    nz = np.empty(_max_inputs(w_ptr), dtype=np.int64)
    val = np.empty(nz.shape[0])
    for r in range(R):
        tot = 0.0
        for j in range(J):
            w0 = w_ptr[j]
            d = w_ptr[j + 1] - w0
            b0 = m2_ptr[j]
            off = offset[j]
            ew = 0.0
            quad = 0.0
            n_nz = _nonzero_inputs(states, r, in_idx, w0, d, spin, nz, val)
            for a1 in range(n_nz):
                k1 = nz[a1]
                u1 = val[a1]
                ew += u1 * mean[w0 + k1]
                for a2 in range(n_nz):
                    quad += u1 * val[a2] * M2[b0 + k1 * d + nz[a2]]
            quad += 2.0 * off * ew + off * off
            if quad < 0.0:
                quad = 0.0
            if set_xi:
                xi[r, j] = math.sqrt(quad)
            x = xi[r, j]
            s = 2.0 * states[r, j] - 1.0
            tot += log_sigmoid(x) + 0.5 * (s * (off + ew) - x) - jj_lambda(x) * (quad - x * x)
        terms[r] = tot


@njit(cache=True)
def normalise_rows(terms, row_start, post, log_z, entropy):
    """Per case: ``post = softmax(terms)`` over its rows, ``log_z`` = log-sum-exp and
    the entropy of ``post``."""
    P = row_start.shape[0] - 1
    for p in range(P):
        a, b = row_start[p], row_start[p + 1]
        lz = log_sum_exp_range(terms, a, b)
        log_z[p] = lz
        h = 0.0
        for r in range(a, b):
            lp = terms[r] - lz
            q = math.exp(lp)
            post[r] = q
            if q > 0.0:
                h -= q * lp
        entropy[p] = h


@njit(cache=True)
def jj_statistics(states, in_idx, w_ptr, m2_ptr, offset, spin, xi, row_weight, prec, lin):
    """Data terms of the Gaussian q(w) update: for every node
    ``prec_j = sum_r g_r 2 lambda(xi_rj) u u^T`` and
    ``lin_j = sum_r g_r (s_rj / 2 - 2 lambda(xi_rj) offset_j) u`` with row weights
    ``g_r`` (case weight times q(row))."""
    prec[:] = 0.0
    lin[:] = 0.0
    R, J = states.shape
    nz = np.empty(_max_inputs(w_ptr), dtype=np.int64)
    val = np.empty(nz.shape[0])
    for r in range(R):
        g = row_weight[r]
        if g == 0.0:
            continue
        for j in range(J):
            w0 = w_ptr[j]
            d = w_ptr[j + 1] - w0
            b0 = m2_ptr[j]
            c = 2.0 * jj_lambda(xi[r, j]) * g
            h = (states[r, j] - 0.5) * g - c * offset[j]
            n_nz = _nonzero_inputs(states, r, in_idx, w0, d, spin, nz, val)
            for a1 in range(n_nz):
                k1 = nz[a1]
                u1 = val[a1]
                lin[w0 + k1] += h * u1
                for a2 in range(n_nz):
                    prec[b0 + k1 * d + nz[a2]] += c * u1 * val[a2]


@njit(cache=True)
def pattern_log_likelihoods(states, row_start, in_idx, W, w_ptr, offset, spin, out):
    """Exact ``ln p(x_p | w)`` of every case ``p`` (unobserved nodes summed out) for a
    batch of weight vectors ``W`` (C, total weights); ``out`` is (C, cases)."""
    C = W.shape[0]
    R, J = states.shape
    P = row_start.shape[0] - 1
    rowll = np.empty(R)
    for c in range(C):
        for r in range(R):
            tot = 0.0
            for j in range(J):
                w0 = w_ptr[j]
                a = offset[j]
                for k in range(w_ptr[j + 1] - w0):
                    a += _input(states, r, in_idx, w0 + k, spin) * W[c, w0 + k]
                s = 2.0 * states[r, j] - 1.0
                tot += log_sigmoid(s * a)
            rowll[r] = tot
        for p in range(P):
            out[c, p] = log_sum_exp_range(rowll, row_start[p], row_start[p + 1])


@njit(cache=True)
def _gather(states, r, in_idx, w0, d, spin, u):
    """The input vector of one node in row ``r`` into ``u[:d]``."""
    for k in range(d):
        u[k] = _input(states, r, in_idx, w0 + k, spin)


@njit(cache=True)
def _case_rows(states, a, b, in_idx, w_ptr, m2_ptr, offset, spin, mean, cov, xi, set_xi, q,
               u):
    """Expected JJ bound of every row ``a:b`` of one case under ``N(mean, cov)`` per
    node (``xi`` first set to its optimum with ``set_xi``), then ``q`` = their softmax.
    ``xi`` and ``q`` are indexed from 0 for row ``a``."""
    J = states.shape[1]
    for r in range(a, b):
        tot = 0.0
        for j in range(J):
            w0 = w_ptr[j]
            d = w_ptr[j + 1] - w0
            off = offset[j]
            _gather(states, r, in_idx, w0, d, spin, u)
            ew = 0.0
            quad = 0.0
            for k1 in range(d):
                ew += u[k1] * mean[w0 + k1]
                for k2 in range(d):
                    quad += u[k1] * u[k2] * cov[m2_ptr[j] + k1 * d + k2]
            quad += (ew + off) * (ew + off)
            if quad < 0.0:
                quad = 0.0
            if set_xi:
                xi[r - a, j] = math.sqrt(quad)
            x = xi[r - a, j]
            s = 2.0 * states[r, j] - 1.0
            tot += log_sigmoid(x) + 0.5 * (s * (off + ew) - x) - jj_lambda(x) * (quad - x * x)
        q[r - a] = tot
    top = -np.inf
    for i in range(b - a):
        top = max(top, q[i])
    z = 0.0
    for i in range(b - a):
        q[i] = math.exp(q[i] - top)
        z += q[i]
    for i in range(b - a):
        q[i] /= z


@njit(cache=True)
def _case_update(states, a, b, in_idx, w_ptr, m2_ptr, offset, spin, m0, S0, P0, xi, q,
                 mean, cov, prec, u, v, g):
    """Gaussian update of every node for one case (rows ``a:b`` with weights ``q``,
    variational parameters ``xi``) from the previous posterior ``N(m0, S0)`` (precision
    ``P0``): ``P = P0 + sum_r q_r 2 lambda u u^T``, ``m = m0 + S g`` with
    ``g = sum_r (q_r (s/2 - 2 lambda offset) - q_r 2 lambda u.m0) u``; ``S`` by one
    Sherman-Morrison step per row.  Returns the case's bound
    ``ln E_{N(m0, S0)}[exp(E_q[JJ bound of ln p(x, h | w)])] + H[q]``, a lower bound
    on the case's predictive ``ln E_{N(m0, S0)}[p(x | w)]``."""
    J = states.shape[1]
    nr = b - a
    bound = 0.0
    for i in range(nr):
        if q[i] > 0.0:
            bound -= q[i] * math.log(q[i])
    for j in range(J):
        w0 = w_ptr[j]
        d = w_ptr[j + 1] - w0
        b0 = m2_ptr[j]
        off = offset[j]
        for k in range(d * d):
            cov[b0 + k] = S0[b0 + k]
            prec[b0 + k] = P0[b0 + k]
        for k in range(d):
            g[k] = 0.0
        logdet = 0.0
        for r in range(a, b):
            x = xi[r - a, j]
            lam = jj_lambda(x)
            s = 2.0 * states[r, j] - 1.0
            qr = q[r - a]
            bound += qr * (log_sigmoid(x) - 0.5 * x + lam * x * x + 0.5 * s * off
                           - lam * off * off)
            c = 2.0 * lam * qr
            if d == 0 or c == 0.0:
                continue
            h = qr * (0.5 * s - 2.0 * lam * off)
            _gather(states, r, in_idx, w0, d, spin, u)
            um = 0.0
            for k in range(d):
                um += u[k] * m0[w0 + k]
            bound += h * um - 0.5 * c * um * um
            for k in range(d):
                g[k] += (h - c * um) * u[k]
            uv = 0.0
            for k1 in range(d):
                acc = 0.0
                for k2 in range(d):
                    acc += cov[b0 + k1 * d + k2] * u[k2]
                v[k1] = acc
                uv += u[k1] * acc
            den = 1.0 + c * uv
            logdet += math.log(den)
            f = c / den
            for k1 in range(d):
                for k2 in range(d):
                    cov[b0 + k1 * d + k2] -= f * v[k1] * v[k2]
                    prec[b0 + k1 * d + k2] += c * u[k1] * u[k2]
        gdm = 0.0
        for k1 in range(d):
            acc = 0.0
            for k2 in range(d):
                acc += cov[b0 + k1 * d + k2] * g[k2]
            mean[w0 + k1] = m0[w0 + k1] + acc
            gdm += g[k1] * acc
        bound += 0.5 * gdm - 0.5 * logdet
    return bound


@njit(cache=True)
def sequential_pass(states, row_start, case_pattern, in_idx, w_ptr, m2_ptr, offset, spin,
                    mean, cov, prec, max_iter, tol, case_bound, case_iter):
    """One pass of the sequential (recursive) Jaakkola–Jordan approximation of de
    Freitas et al. (2001), Fig. 3 and §3.3: the cases are taken once, in order; for each,
    ``xi``, q(w) and q(h) of that case are iterated (Gaussian update, then ``xi`` at its
    optimum, then q(h)) until the case's bound changes by less than ``tol`` nats or
    ``max_iter`` iterations, and the posterior becomes the prior of the next case.

    ``mean``, ``cov`` and ``prec`` (per node, row-major at ``m2_ptr``) hold the prior on
    entry and the posterior on exit; ``case_bound`` and ``case_iter`` receive each
    case's bound and number of iterations.  ``xi`` and q(h) of a case start at their
    optima under the previous posterior.
    """
    J = states.shape[1]
    n_rows_max = 1
    for p in range(row_start.shape[0] - 1):
        n_rows_max = max(n_rows_max, row_start[p + 1] - row_start[p])
    dmax = 1
    for j in range(J):
        dmax = max(dmax, w_ptr[j + 1] - w_ptr[j])
    xi = np.empty((n_rows_max, J))
    q = np.empty(n_rows_max)
    u = np.empty(dmax)
    v = np.empty(dmax)
    g = np.empty(dmax)
    m0 = mean.copy()
    S0 = cov.copy()
    P0 = prec.copy()
    for t in range(case_pattern.shape[0]):
        p = case_pattern[t]
        a, b = row_start[p], row_start[p + 1]
        m0[:] = mean
        S0[:] = cov
        P0[:] = prec
        _case_rows(states, a, b, in_idx, w_ptr, m2_ptr, offset, spin, m0, S0, xi, True, q, u)
        old = -np.inf
        it = 0
        while True:
            it += 1
            bound = _case_update(states, a, b, in_idx, w_ptr, m2_ptr, offset, spin, m0, S0,
                                 P0, xi, q, mean, cov, prec, u, v, g)
            if abs(bound - old) < tol or it >= max_iter:
                break
            old = bound
            _case_rows(states, a, b, in_idx, w_ptr, m2_ptr, offset, spin, mean, cov, xi, True, q, u)
        case_bound[t] = bound
        case_iter[t] = it
