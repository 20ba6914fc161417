"""Numba kernels for theta-only AIS on discrete DAGs (Beal's Algorithm 6.1).

Layout as in :mod:`sklearn_vb.dag.kernels`: all CPTs in one flat vector ``theta`` (P,),
CPT row ``i`` is ``theta[row_ptr[i]:row_ptr[i+1]]``; the data are compressed patterns,
pattern ``u`` (weight ``w_u``) owning the configuration rows
``row_start[u] .. row_start[u+1]-1`` of ``idx`` (one per joint setting of its unobserved
nodes), so ``p(y_u | theta) = sum_r prod_j theta[idx[r, j]]``.

One AIS chain: theta ~ prior; for k = 1..K one Metropolis–Hastings
step targeting ``f_{k-1} = p(theta) p(y|theta)^{b_{k-1}}``, then
``log_w += (b_k - b_{k-1}) ln p(y | theta)``.  The proposal moves every CPT
row at once, ``theta'_row ~ Dir(a theta_row + g_row)``, with one joint accept/reject; the
strength ``a(b) = alpha0 + kappa n b`` (``kappa = 0``: Beal's fixed strength) and the
per-entry floor ``g >= 0`` (``g = 0``: Beal's proposal).  Rows of length 1 are constants.

Random numbers come from numba's generator, seeded once per chain from ``seeds[c]``, so a
chain's result does not depend on which call or thread runs it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import pattern_log_normaliser

__all__ = ["dag_pattern_loglik", "dag_ais_init", "dag_ais_chains", "dag_ais_chains_from_start",
           "dag_ais_chains_from_mixture", "dag_mixture_log_density", "dag_prior_log_density",
           "dag_sample_hidden", "dag_log_hidden_conditional"]


@njit(cache=True, nogil=True)
def product_trie(idx):
    """The products ``prod_{j <= l} theta[idx[r, j]]`` of every configuration row ``r`` up
    to the last level ``l = J - 2`` as a trie: rows with the same first ``l + 1`` entries
    share one node.

    Returns ``(parent, entry, n_roots, row_parent, row_entry)``: node ``m`` holds
    ``theta[entry[m]]`` times the value of node ``parent[m]`` (nodes ``0 .. n_roots-1`` are
    the first level, with parent -1; every parent comes before its children), and row
    ``r``'s whole product is the value of node ``row_parent[r]`` times
    ``theta[row_entry[r]]`` (``row_entry[r] = idx[r, J-1]``; with a single node,
    ``row_parent`` is the extra node ``len(parent)`` of value 1).  Patterns are sorted
    and mostly differ only in their last observed nodes, and the hidden configurations
    repeat across patterns, so the trie has far fewer nodes than ``idx`` has entries."""
    R, J = idx.shape
    parent = np.empty(R * J, dtype=np.int64)
    entry = np.empty(R * J, dtype=np.int64)
    node = np.full(R, -1, dtype=np.int64)  # row -> its node at the current level
    keys = np.empty(R, dtype=np.int64)
    width = np.int64(idx.max() + 1) if R > 0 else np.int64(1)
    n_nodes = 0
    n_roots = 0
    for j in range(J - 1):
        for r in range(R):
            keys[r] = (node[r] + 1) * width + idx[r, j]
        order = np.argsort(keys, kind="mergesort")
        last = np.int64(-1)
        for t in range(R):
            r = order[t]
            if t == 0 or keys[r] != last:
                last = keys[r]
                parent[n_nodes] = node[r]
                entry[n_nodes] = idx[r, j]
                n_nodes += 1
            node[r] = n_nodes - 1
        if j == 0:
            n_roots = n_nodes
    row_entry = np.empty(R, dtype=np.int64)
    for r in range(R):
        if node[r] < 0:
            node[r] = n_nodes
        row_entry[r] = idx[r, J - 1]
    return parent[:n_nodes].copy(), entry[:n_nodes].copy(), n_roots, node, row_entry


#: the running product of pattern likelihoods is rescaled by 2**500 when it leaves
#: [1e-150, 1e150]
_RESCALE = 2.0 ** 500
_LOG_RESCALE = 500.0 * math.log(2.0)


@njit(cache=True, nogil=True)
def _loglik_trie(theta, idx, row_start, weights, parent, entry, n_roots, row_parent, row_entry,
                 values):
    """:func:`dag_pattern_loglik` through the product trie of :func:`product_trie`
    (``values`` is scratch, one entry per node and one more).  Every row's product is formed by the
    same multiplications in the same order as the plain loop (entry by entry, in node
    order), so every pattern likelihood is bit-for-bit the plain one.  Patterns of weight
    1 or 2 enter a running product instead of one logarithm each."""
    for m in range(n_roots):
        values[m] = theta[entry[m]]
    for m in range(n_roots, parent.shape[0]):
        values[m] = values[parent[m]] * theta[entry[m]]
    values[parent.shape[0]] = 1.0  # 1 * theta is theta exactly
    n_patterns = row_start.shape[0] - 1
    total = 0.0
    prod = 1.0
    n_rescaled = 0
    log_theta = np.empty(0)
    for u in range(n_patterns):
        a = row_start[u]
        b = row_start[u + 1]
        s = 0.0
        for r in range(a, b):
            s += values[row_parent[r]] * theta[row_entry[r]]
        w = weights[u]
        if s > 1e-100 and w == 1.0:
            prod *= s
        elif s > 1e-50 and w == 2.0:
            prod *= s * s
        elif s > 0.0:
            total += w * math.log(s)
        else:
            if log_theta.shape[0] == 0:
                log_theta = np.empty(theta.shape[0])
                for k in range(theta.shape[0]):
                    t = theta[k]
                    log_theta[k] = math.log(t) if t > 0.0 else -np.inf
            lz = pattern_log_normaliser(log_theta, idx, a, b)
            if lz == -np.inf:
                return -np.inf
            total += w * lz
        if prod < 1e-150:
            prod *= _RESCALE
            n_rescaled += 1
        elif prod > 1e150:  # only with tables that are not normalised
            prod /= _RESCALE
            n_rescaled -= 1
    return total + math.log(prod) - n_rescaled * _LOG_RESCALE


@njit(cache=True, nogil=True)
def dag_pattern_loglik(theta, idx, row_start, weights):
    """``sum_u w_u ln sum_r prod_j theta[idx[r, j]]`` (probability space, with a log-space
    fallback for a pattern whose terms all underflow)."""
    parent, entry, n_roots, row_parent, row_entry = product_trie(idx)
    return _loglik_trie(theta, idx, row_start, weights, parent, entry, n_roots, row_parent,
                        row_entry, np.empty(parent.shape[0] + 1))


@njit(cache=True, nogil=True)
def dag_prior_log_density(theta, prior, row_ptr):
    """``sum_rows ln Dir(theta_row | prior_row)`` (rows of length 1 contribute 0)."""
    out = _prior_kernel(theta, prior, row_ptr)
    for i in range(row_ptr.shape[0] - 1):
        a = row_ptr[i]
        b = row_ptr[i + 1]
        if b - a < 2:
            continue
        a0 = 0.0
        for k in range(a, b):
            a0 += prior[k]
            out -= math.lgamma(prior[k])
        out += math.lgamma(a0)
    return out


@njit(cache=True, nogil=True)
def _prior_kernel(theta, prior, row_ptr):
    """``sum (lambda_k - 1) ln theta_k`` over rows of length >= 2: the log prior density
    up to its constant normaliser (entries with lambda_k = 1 cost nothing)."""
    out = 0.0
    for i in range(row_ptr.shape[0] - 1):
        a = row_ptr[i]
        b = row_ptr[i + 1]
        if b - a < 2:
            continue
        for k in range(a, b):
            if prior[k] != 1.0:
                out += (prior[k] - 1.0) * math.log(theta[k])
    return out


@njit(cache=True, nogil=True)
def _prior_kernel_log(log_theta, prior, row_ptr):
    """:func:`_prior_kernel` from ``ln theta`` (the same sum, without the logarithms)."""
    out = 0.0
    for i in range(row_ptr.shape[0] - 1):
        a = row_ptr[i]
        b = row_ptr[i + 1]
        if b - a < 2:
            continue
        for k in range(a, b):
            if prior[k] != 1.0:
                out += (prior[k] - 1.0) * log_theta[k]
    return out


@njit(cache=True, nogil=True)
def _log_gamma_variate(shape):
    """ln G with G ~ Gamma(shape, 1), accurate for tiny shapes
    (G = G' U^{1/shape}, G' ~ Gamma(shape + 1))."""
    if shape >= 1.0:
        return math.log(np.random.standard_gamma(shape))
    g = np.random.standard_gamma(shape + 1.0)
    u = 1.0 - np.random.random()
    return math.log(g) + math.log(u) / shape


@njit(cache=True, nogil=True)
def _propose(theta, log_theta, prop, log_prop, row_ptr, strength, floor, scratch, lg_current,
             lg_proposed, lg_current_rows, lg_proposed_rows, lg_strength):
    """Draw every row of ``prop`` from Dir(strength theta_row + floor_row), with
    ``log_prop = ln prop``; ``log_theta`` is ``ln theta`` (cached by the caller, it changes
    only when a move is accepted).  Returns
    ln q(prop | theta) - ln q(theta | prop) (the forward minus the reverse density).

    The log-gamma terms of the forward density depend only on theta and the strength, and
    are the reverse terms of the move that proposed theta: ``lg_current`` (per entry) and
    ``lg_current_rows`` (per row) hold them for theta, valid for the strength
    ``lg_strength[0]`` (NaN: not yet known), and ``lg_proposed`` / ``lg_proposed_rows``
    receive those of ``prop``, which the caller copies over when it accepts.  While the
    strength stays the same (a path from q, or Beal's fixed strength) only the reverse
    terms are computed."""
    tiny = 2.2250738585072014e-308
    cached = lg_strength[0] == strength
    out = 0.0
    for i in range(row_ptr.shape[0] - 1):
        a = row_ptr[i]
        b = row_ptr[i + 1]
        if b - a < 2:
            prop[a] = 1.0
            log_prop[a] = 0.0
            continue
        small = False
        for k in range(a, b):
            shape = strength * theta[k] + floor[k]
            scratch[k] = shape
            if shape < 1.0:
                small = True
        s = 0.0
        if small:  # log-space Gamma variates (tiny shapes underflow otherwise)
            peak = -np.inf
            for k in range(a, b):
                lg = _log_gamma_variate(scratch[k])
                scratch[k] = lg
                if lg > peak:
                    peak = lg
            for k in range(a, b):
                e = math.exp(scratch[k] - peak)
                scratch[k] = e
                s += e
        else:
            for k in range(a, b):
                e = np.random.standard_gamma(scratch[k])
                scratch[k] = e
                s += e
        s2 = 0.0
        for k in range(a, b):
            v = scratch[k] / s
            if v < tiny:
                v = tiny
            prop[k] = v
            s2 += v
        # ln Dir(prop | a theta + g) - ln Dir(theta | a prop + g), in the loop that
        # normalises prop (each sum accumulates in the same order as in separate loops)
        f0 = 0.0
        r0 = 0.0
        for k in range(a, b):
            pk = prop[k] / s2
            prop[k] = pk
            lpk = math.log(pk)
            log_prop[k] = lpk
            af = strength * theta[k] + floor[k]
            ar = strength * pk + floor[k]
            f0 += af
            r0 += ar
            if cached:
                lg_af = lg_current[k]
            else:
                lg_af = math.lgamma(af)
                lg_current[k] = lg_af
            lg_ar = math.lgamma(ar)
            lg_proposed[k] = lg_ar
            out += (af - 1.0) * lpk - lg_af
            out -= (ar - 1.0) * log_theta[k] - lg_ar
        if cached:
            lg_f0 = lg_current_rows[i]
        else:
            lg_f0 = math.lgamma(f0)
            lg_current_rows[i] = lg_f0
        lg_r0 = math.lgamma(r0)
        lg_proposed_rows[i] = lg_r0
        out += lg_f0 - lg_r0
    lg_strength[0] = strength
    return out


@njit(cache=True, nogil=True)
def dag_ais_init(theta, prior, row_ptr, idx, row_start, weights, ll, lp):
    """Cached ``ln p(X | theta_c)`` and the unnormalised ``ln p(theta_c)`` (without its
    constant, see ``_prior_kernel``) of every chain (rows of theta)."""
    for c in range(theta.shape[0]):
        ll[c] = dag_pattern_loglik(theta[c], idx, row_start, weights)
        lp[c] = _prior_kernel(theta[c], prior, row_ptr)


@njit(cache=True, nogil=True)
def dag_ais_chains(theta, ll, lp, log_w, betas, k0, k1, prior, row_ptr, idx, row_start, weights,
                   n_cases, alpha0, kappa, floor, seeds, accepted, log_ratio_sum):
    """Advance every chain (rows of ``theta`` (C, P), with cached ``ll``/``lp`` and
    running ``log_w``, all updated in place) through steps ``k = k0+1 .. k1``: a move
    targeting ``betas[k-1]``, then ``log_w += (betas[k] - betas[k-1]) ll``.

    Chain ``c`` is reseeded from ``seeds[c]`` at the start of the call, so a chain's path
    depends only on its seeds and the segment boundaries, not on which call or thread runs
    it.  ``accepted[k-1]`` (int, +=) counts the chains that accepted the move of step k and
    ``log_ratio_sum[k-1]`` (+=) sums the weight increments.
    """
    _ais_chains(theta, ll, lp, lp, log_w, betas, k0, k1, prior, prior, 0.0, False, row_ptr, idx,
                row_start, weights, n_cases, alpha0, kappa, floor, seeds, accepted,
                log_ratio_sum)


@njit(cache=True, nogil=True)
def dag_ais_chains_from_start(theta, ll, lp, ls, log_w, betas, k0, k1, prior, start, norm_diff,
                              row_ptr, idx, row_start, weights, n_cases, alpha0, kappa, floor,
                              seeds, accepted, log_ratio_sum):
    """As :func:`dag_ais_chains` on the geometric path from a product-Dirichlet start
    density ``s`` (concentrations ``start``, e.g. the variational posterior) to the
    posterior: ``ln f_b = (1 - b) ln s + b [ln p + ln p(X | theta)]``.  ``ls`` caches the
    unnormalised ``ln s`` of every chain; ``norm_diff`` is the difference of the log
    normalisers ``N(prior) - N(start)``, ``N(a) = sum_rows lgamma(sum a) - sum lgamma(a)``,
    so that the increment ``(b_k - b_{k-1}) [ln p + ll - ln s]`` uses normalised densities.
    """
    _ais_chains(theta, ll, lp, ls, log_w, betas, k0, k1, prior, start, norm_diff, True, row_ptr,
                idx, row_start, weights, n_cases, alpha0, kappa, floor, seeds, accepted,
                log_ratio_sum)


@njit(cache=True, nogil=True)
def _ais_chains(theta, ll, lp, ls, log_w, betas, k0, k1, prior, start, norm_diff, from_start,
                row_ptr, idx, row_start, weights, n_cases, alpha0, kappa, floor, seeds, accepted,
                log_ratio_sum):
    C, P = theta.shape
    prop = np.empty(P)
    log_prop = np.empty(P)
    log_th = np.empty(P)
    scratch = np.empty(P)
    parent, entry, n_roots, row_parent, row_entry = product_trie(idx)
    values = np.empty(parent.shape[0] + 1)
    n_rows = row_ptr.shape[0] - 1
    lg_current = np.empty(P)
    lg_proposed = np.empty(P)
    lg_current_rows = np.empty(n_rows)
    lg_proposed_rows = np.empty(n_rows)
    lg_strength = np.empty(1)
    for c in range(C):
        np.random.seed(seeds[c])
        lg_strength[0] = np.nan
        th = theta[c]
        for p in range(P):
            log_th[p] = math.log(th[p])
        llc = ll[c]
        lpc = lp[c]
        lsc = ls[c]
        lw = log_w[c]
        for k in range(k0 + 1, k1 + 1):
            b = betas[k - 1]
            strength = alpha0 + kappa * n_cases * b
            log_q_ratio = _propose(th, log_th, prop, log_prop, row_ptr, strength, floor, scratch,
                                   lg_current, lg_proposed, lg_current_rows, lg_proposed_rows,
                                   lg_strength)
            lp_new = _prior_kernel_log(log_prop, prior, row_ptr)
            ls_new = _prior_kernel_log(log_prop, start, row_ptr) if from_start else lp_new
            ll_new = _loglik_trie(prop, idx, row_start, weights, parent, entry, n_roots,
                                  row_parent, row_entry, values)
            if ll_new > -np.inf:
                if from_start:
                    log_a = ((1.0 - b) * (ls_new - lsc) + b * (lp_new - lpc + ll_new - llc)
                             - log_q_ratio)
                elif b > 0.0:
                    log_a = lp_new - lpc + b * (ll_new - llc) - log_q_ratio
                else:
                    log_a = lp_new - lpc - log_q_ratio
                if math.log(1.0 - np.random.random()) < log_a:
                    for p in range(P):
                        th[p] = prop[p]
                        log_th[p] = log_prop[p]
                    # the proposal's reverse log-gamma terms are the new forward ones
                    lg_current, lg_proposed = lg_proposed, lg_current
                    lg_current_rows, lg_proposed_rows = lg_proposed_rows, lg_current_rows
                    llc = ll_new
                    lpc = lp_new
                    lsc = ls_new
                    accepted[k - 1] += 1
            if from_start:
                inc = (betas[k] - b) * (lpc - lsc + norm_diff + llc)
            else:
                inc = (betas[k] - b) * llc
            lw += inc
            log_ratio_sum[k - 1] += inc
        ll[c] = llc
        lp[c] = lpc
        ls[c] = lsc
        log_w[c] = lw


@njit(cache=True, nogil=True)
def _mixture_log_density_log(log_theta, starts, log_norms, row_ptr):
    """``ln sum_m exp(log_norms[m] + sum (starts[m, k] - 1) ln theta_k)`` over rows of
    length >= 2: the normalised log density of a mixture of products of Dirichlets when
    ``log_norms[m]`` holds component m's log normaliser plus its log mixing weight."""
    M = starts.shape[0]
    top = -np.inf
    terms = np.empty(M)
    for m in range(M):
        t = log_norms[m] + _prior_kernel_log(log_theta, starts[m], row_ptr)
        terms[m] = t
        if t > top:
            top = t
    if top == -np.inf:
        return top
    acc = 0.0
    for m in range(M):
        acc += math.exp(terms[m] - top)
    return top + math.log(acc)


@njit(cache=True, nogil=True)
def dag_mixture_log_density(theta, starts, log_norms, row_ptr, out):
    """``out[c]``: the mixture log density (see ``_mixture_log_density_log``) at every
    chain's ``theta[c]``."""
    P = theta.shape[1]
    log_th = np.empty(P)
    for c in range(theta.shape[0]):
        for p in range(P):
            log_th[p] = math.log(theta[c, p])
        out[c] = _mixture_log_density_log(log_th, starts, log_norms, row_ptr)


@njit(cache=True, nogil=True)
def dag_ais_chains_from_mixture(theta, ll, lp, ls, log_w, betas, k0, k1, prior, prior_norm,
                                starts, log_norms, row_ptr, idx, row_start, weights, strength,
                                floor, seeds, accepted, log_ratio_sum):
    """As :func:`dag_ais_chains_from_start` on the geometric path from a mixture of
    products of Dirichlets ``s`` (rows of ``starts``, log normalisers plus log mixing
    weights ``log_norms``; e.g. the variational posterior and its relabelled copies) to
    the posterior: ``ln f_b = (1 - b) ln s + b [ln p + ln p(X | theta)]``.  ``ls`` caches
    the normalised ``ln s`` of every chain, ``lp`` the unnormalised log prior, whose
    log normaliser is ``prior_norm``; the proposal strength is fixed (every target is
    about as concentrated as the posterior)."""
    C, P = theta.shape
    prop = np.empty(P)
    log_prop = np.empty(P)
    log_th = np.empty(P)
    scratch = np.empty(P)
    parent, entry, n_roots, row_parent, row_entry = product_trie(idx)
    values = np.empty(parent.shape[0] + 1)
    n_rows = row_ptr.shape[0] - 1
    lg_current = np.empty(P)
    lg_proposed = np.empty(P)
    lg_current_rows = np.empty(n_rows)
    lg_proposed_rows = np.empty(n_rows)
    lg_strength = np.empty(1)
    for c in range(C):
        np.random.seed(seeds[c])
        lg_strength[0] = np.nan
        th = theta[c]
        for p in range(P):
            log_th[p] = math.log(th[p])
        llc = ll[c]
        lpc = lp[c]
        lsc = ls[c]
        lw = log_w[c]
        for k in range(k0 + 1, k1 + 1):
            b = betas[k - 1]
            log_q_ratio = _propose(th, log_th, prop, log_prop, row_ptr, strength, floor, scratch,
                                   lg_current, lg_proposed, lg_current_rows, lg_proposed_rows,
                                   lg_strength)
            lp_new = _prior_kernel_log(log_prop, prior, row_ptr)
            ls_new = _mixture_log_density_log(log_prop, starts, log_norms, row_ptr)
            ll_new = _loglik_trie(prop, idx, row_start, weights, parent, entry, n_roots,
                                  row_parent, row_entry, values)
            if ll_new > -np.inf:
                log_a = ((1.0 - b) * (ls_new - lsc) + b * (lp_new - lpc + ll_new - llc)
                         - log_q_ratio)
                if math.log(1.0 - np.random.random()) < log_a:
                    for p in range(P):
                        th[p] = prop[p]
                        log_th[p] = log_prop[p]
                    lg_current, lg_proposed = lg_proposed, lg_current
                    lg_current_rows, lg_proposed_rows = lg_proposed_rows, lg_current_rows
                    llc = ll_new
                    lpc = lp_new
                    lsc = ls_new
                    accepted[k - 1] += 1
            inc = (betas[k] - b) * (lpc + prior_norm - lsc + llc)
            lw += inc
            log_ratio_sum[k - 1] += inc
        ll[c] = llc
        lp[c] = lpc
        ls[c] = lsc
        log_w[c] = lw


@njit(cache=True, nogil=True)
def _row_potentials(lt, idx, tempered_u, a, H, hid, obs):
    """Split every configuration row ``a .. a+H-1`` of one pattern into the sum of its
    untempered columns' log-entries (``hid``) and of its tempered ones (``obs``, the
    observed values present)."""
    for h in range(H):
        r = a + h
        ph = 0.0
        po = 0.0
        for j in range(idx.shape[1]):
            if tempered_u[j]:
                po += lt[idx[r, j]]
            else:
                ph += lt[idx[r, j]]
        hid[h] = ph
        obs[h] = po


@njit(cache=True, nogil=True)
def _tempered_potentials(hid, obs, H, beta, pot):
    """``pot[h] = hid[h] + beta obs[h]`` (beta = 0: the observed factors drop out, no
    ``0 * -inf``); returns the largest potential."""
    top = -np.inf
    for h in range(H):
        p = hid[h] + beta * obs[h] if beta > 0.0 else hid[h]
        pot[h] = p
        if p > top:
            top = p
    return top


@njit(cache=True, nogil=True)
def _pattern_width(row_start):
    width = 1
    for u in range(row_start.shape[0] - 1):
        width = max(width, row_start[u + 1] - row_start[u])
    return width


@njit(cache=True, nogil=True)
def dag_sample_hidden(log_theta, idx, tempered, row_start, case_order, case_ptr, betas,
                      uniforms, out):
    """Draw every case's hidden configuration from ``p(z | theta) p(x | z, theta)^beta_i``
    for every chain (the tempered conditional of joint annealing; ``betas`` (n,) holds
    each case's exponent).

    ``log_theta`` (C, P) holds each chain's flat log-CPTs; pattern ``u`` owns the
    configuration rows ``row_start[u] .. row_start[u+1]-1`` of ``idx`` (one per setting of
    its unobserved nodes: hidden nodes and missing values) and the cases
    ``case_order[case_ptr[u] .. case_ptr[u+1]-1]`` (sorted by exponent within a pattern,
    so the conditional is rebuilt only when the exponent changes).  The potential of a
    row is the sum of its untempered columns' log-entries plus ``beta_i`` times its
    ``tempered[u]`` columns' (the observed values present in the pattern); case ``i`` of chain ``c`` takes the row where the cumulative normalised
    potential first exceeds ``uniforms[c, i]`` (inverse-CDF), stored as its offset within
    the pattern's rows.
    """
    C = log_theta.shape[0]
    U = row_start.shape[0] - 1
    width = _pattern_width(row_start)
    hid = np.empty(width)
    obs = np.empty(width)
    cdf = np.empty(width)
    for c in range(C):
        lt = log_theta[c]
        for u in range(U):
            a = row_start[u]
            H = row_start[u + 1] - a
            _row_potentials(lt, idx, tempered[u], a, H, hid, obs)
            last = -1.0  # exponents are >= 0: forces the first build
            acc = 0.0
            for k in range(case_ptr[u], case_ptr[u + 1]):
                i = case_order[k]
                beta = betas[i]
                if beta != last:
                    top = _tempered_potentials(hid, obs, H, beta, cdf)
                    acc = 0.0
                    for h in range(H):
                        acc += math.exp(cdf[h] - top)
                        cdf[h] = acc
                    last = beta
                t = uniforms[c, i] * acc
                lo, hi = 0, H - 1
                while lo < hi:  # first h with cdf[h] > t
                    mid = (lo + hi) // 2
                    if cdf[mid] > t:
                        hi = mid
                    else:
                        lo = mid + 1
                out[c, i] = lo


@njit(cache=True, nogil=True)
def dag_log_hidden_conditional(log_theta, idx, tempered, row_start, case_order, case_ptr,
                               betas, Z, out):
    """``out[c] = sum_i ln [p(z_i | theta) p(x_i | z_i, theta)^beta_i / normaliser]``: the
    log-density of the hidden configurations ``Z`` (C, n) (offsets within each case's
    pattern rows) under the tempered conditional that :func:`dag_sample_hidden` draws
    from, with the same potentials and the same case grouping."""
    C = log_theta.shape[0]
    U = row_start.shape[0] - 1
    width = _pattern_width(row_start)
    hid = np.empty(width)
    obs = np.empty(width)
    pot = np.empty(width)
    for c in range(C):
        lt = log_theta[c]
        total = 0.0
        for u in range(U):
            a = row_start[u]
            H = row_start[u + 1] - a
            _row_potentials(lt, idx, tempered[u], a, H, hid, obs)
            last = -1.0
            log_norm = 0.0
            for k in range(case_ptr[u], case_ptr[u + 1]):
                i = case_order[k]
                beta = betas[i]
                if beta != last:
                    top = _tempered_potentials(hid, obs, H, beta, pot)
                    acc = 0.0
                    for h in range(H):
                        acc += math.exp(pot[h] - top)
                    log_norm = top + math.log(acc)
                    last = beta
                total += pot[Z[c, i]] - log_norm
        out[c] = total
