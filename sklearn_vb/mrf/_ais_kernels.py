"""Compiled forward AIS for log-linear models whose partition function is a sum over an
enumerated state set (the exact engine of a pairwise MRF).

The kernels reproduce :func:`sklearn_vb.scoring._ais.run_ais` with
:class:`~sklearn_vb.mrf.scoring_model.MRFPreconditionedRW` step for step: the same
tempered targets, the same Gaussian proposal ``lambda + c L_b eps``, the same random
numbers in the same order (chain ``c`` draws ``eps`` (F normals) and then one uniform
per move from its own generator), the same accept test.  Only the summation order of
the dot products differs from NumPy's BLAS calls, so log-weights agree to rounding.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["draw_moves", "ais_segment"]


@njit(cache=True)
def draw_moves(gens, n_moves, n_features, out):
    """Fill ``out[c, m, :F]`` with F standard normals and ``out[c, m, F]`` with
    ``ln(1 - u)`` for move m of chain c, in the order the Python kernel draws them."""
    for c in range(len(gens)):
        g = gens[c]
        for m in range(n_moves):
            for i in range(n_features):
                out[c, m, i] = g.standard_normal()
            out[c, m, n_features] = np.log(1.0 - g.random())


@njit(cache=True)
def _log_f(lp, ll, lq, beta, from_q):
    """``Target.log_f`` of one chain (NaN likelihoods count as -inf)."""
    if np.isnan(ll):
        ll = -np.inf
    if not from_q:
        if beta > 0:
            return lp + beta * ll
        return lp + 0.0
    post = lp + ll
    if 0 < beta < 1:
        return (1.0 - beta) * lq + beta * post
    if beta == 0:
        return lq
    return post


@njit(cache=True)
def _evaluate(x, S, N, Phi, P, lp_const, q_mean, q_Linv, lq_c1, lq_c2, from_q, en, z):
    """(log prior, log likelihood, log q) at ``x``; ``en`` and ``z`` are work arrays."""
    F = x.size
    acc = 0.0
    for i in range(F):
        acc += P[i] * x[i] ** 2
    lp = lp_const - 0.5 * acc
    M = Phi.shape[0]
    mx = -np.inf
    for s in range(M):
        e = 0.0
        for i in range(F):
            e += x[i] * Phi[s, i]
        en[s] = e
        if e > mx:
            mx = e
    if np.isfinite(mx):
        tot = 0.0
        for s in range(M):
            tot += np.exp(en[s] - mx)
        lz = np.log(tot) + mx
    else:
        lz = mx
    xs = 0.0
    for i in range(F):
        xs += x[i] * S[i]
    ll = xs - N * lz
    lq = 0.0
    if from_q:
        for i in range(F):
            zi = 0.0
            for j in range(F):
                zi += q_Linv[i, j] * (x[j] - q_mean[j])
            z[i] = zi
        acc = 0.0
        for i in range(F):
            acc += z[i] * z[i]
        lq = -0.5 * acc - lq_c1 - lq_c2
    return lp, ll, lq


@njit(cache=True)
def evaluate_rows(X, S, N, Phi, P, lp_const, q_mean, q_Linv, lq_c1, lq_c2, from_q):
    """(log prior, log likelihood, log q) of every row of ``X`` (C, F)."""
    C, F = X.shape
    lp, ll, lq = np.empty(C), np.empty(C), np.empty(C)
    en, z = np.empty(Phi.shape[0]), np.empty(F)
    for c in range(C):
        lp[c], ll[c], lq[c] = _evaluate(X[c], S, N, Phi, P, lp_const, q_mean, q_Linv,
                                        lq_c1, lq_c2, from_q, en, z)
    return lp, ll, lq


@njit(cache=True)
def ais_segment(betas, k_start, k_end, coef, lp, ll, lq, f_prev, log_w, log_ratio, accept,
                draws, step, sU, mu, n_cases, tune_fixed, S, N, Phi, P, lp_const, q_mean,
                q_Linv, lq_c1, lq_c2, from_q):
    """Temperatures ``k_start .. k_end - 1`` (1-based, as in ``run_ais``) of every chain.

    State (``coef``, ``lp``, ``ll``, ``lq``, ``f_prev``, ``log_w``) is updated in place;
    ``log_ratio[k - 1, c]`` gets the weight increment and ``accept[k - 1]`` the fraction
    of chains that accepted the move at ``betas[k]`` (k < K).  ``draws[c, m]`` holds the
    random numbers of the move at temperature ``k_start + m``.  The proposal factor is
    ``L_b = sU / sqrt(b n mu + 1)`` (columnwise), ``b = 1`` when ``tune_fixed`` (the path
    from q) and ``b = beta`` otherwise (the path from the prior)."""
    C, F = coef.shape
    K = betas.size - 1
    L = np.empty((F, F))
    new = np.empty(F)
    en, z = np.empty(Phi.shape[0]), np.empty(F)
    if tune_fixed:
        for i in range(F):
            for j in range(F):
                L[i, j] = sU[i, j] / np.sqrt(1.0 * n_cases * mu[j] + 1.0)
    for k in range(k_start, k_end):
        beta = betas[k]
        if k < K and not tune_fixed:
            for i in range(F):
                for j in range(F):
                    L[i, j] = sU[i, j] / np.sqrt(beta * n_cases * mu[j] + 1.0)
        n_acc = 0
        for c in range(C):
            f_cur = _log_f(lp[c], ll[c], lq[c], beta, from_q)
            inc = f_cur - f_prev[c]
            log_ratio[k - 1, c] = inc
            log_w[c] += inc
            if k >= K:
                continue
            m = k - k_start
            for j in range(F):
                acc = 0.0
                for i in range(F):
                    acc += (step * draws[c, m, i]) * L[j, i]
                new[j] = coef[c, j] + acc
            lp_n, ll_n, lq_n = _evaluate(new, S, N, Phi, P, lp_const, q_mean, q_Linv,
                                         lq_c1, lq_c2, from_q, en, z)
            lr = _log_f(lp_n, ll_n, lq_n, beta, from_q) - f_cur
            if np.isnan(lr):
                lr = -np.inf
            if draws[c, m, F] < lr:
                n_acc += 1
                for j in range(F):
                    coef[c, j] = new[j]
                lp[c], ll[c], lq[c] = lp_n, ll_n, lq_n
            f_prev[c] = _log_f(lp[c], ll[c], lq[c], beta, from_q)
        if k < K:
            accept[k - 1] = n_acc / C
