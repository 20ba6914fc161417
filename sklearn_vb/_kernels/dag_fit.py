"""Whole EM and VBEM restarts of a discrete DAG in compiled code.

The iterations, bounds, stopping rule and choice among restarts are those of
:class:`sklearn_vb.dag.VBDiscreteDAG` with ``method="ml"`` (EM) and ``method="vb"``
(VBEM with SQUAREM extrapolation, ``acceleration="squarem"``), with ``bound_check="off"``:
what the estimator does per iteration in Python (one compiled E step, an M step and
bookkeeping) runs here as one call per fit, for callers that fit many small models
(Beal's Chapter 6 scores 136 structures at 20 data sizes).  Layout and data as in
:mod:`sklearn_vb._kernels.dag`; ``starts`` holds one row of starting log tables per
restart (what the estimator's ``_initialize`` builds).

Restarts run in order; the kept one is the first with the highest final bound.  A run
stops when its bound changes by less than ``tol`` or after ``max_iter`` iterations.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .dag import dirichlet_update, enumerate_posterior, masked_dot, normalise_rows

__all__ = ["em_restarts", "vbem_restarts"]

#: SQUAREM step-length control (as :class:`sklearn_vb.base.SquaremSteps`)
_GROWTH = 4.0
#: proposals that are not valid Dirichlet parameters are shrunk at most this often
_MAX_SHRINKS = 6


@njit(cache=True, nogil=True)
def _dot(a, b):
    # np.dot (BLAS) as the estimator sums: restarts that reach the same optimum (a flat
    # likelihood along hidden directions) are then told apart by the same rounding
    return np.dot(a, b)


@njit(cache=True, nogil=True)
def _log_into(values, out):
    for k in range(values.shape[0]):
        v = values[k]
        out[k] = math.log(v) if v > 0.0 else -np.inf


@njit(cache=True, nogil=True)
def em_restarts(starts, row_ptr, idx, row_start, weights, max_iter, tol, counts_out, theta_out,
                entropy_out):
    """EM for the maximum-likelihood tables from every row of ``starts``.

    Iteration: M step ``theta = counts / row sums``, E step at ``ln theta``, bound
    ``sum counts ln theta + sum_u w_u H_u`` (the estimator's EM objective for
    ``method="ml"``).  Writes the kept restart's expected counts, tables and per-pattern
    posterior entropies; returns ``(bound, n_iter, converged)``.
    """
    R, P = starts.shape
    U = row_start.shape[0] - 1
    counts = np.empty(P)
    theta = np.empty(P)
    log_theta = np.empty(P)
    post = np.empty(idx.shape[0])
    log_z = np.empty(U)
    ent = np.empty(U)
    best = -np.inf
    best_iter = 0
    best_conv = False
    for s in range(R):
        enumerate_posterior(starts[s], idx, row_start, weights, counts, post, log_z, ent)
        value = 0.0
        previous = 0.0
        n_iter = 0
        converged = False
        for it in range(max_iter):
            normalise_rows(counts, row_ptr, theta)
            _log_into(theta, log_theta)
            enumerate_posterior(log_theta, idx, row_start, weights, counts, post, log_z, ent)
            value = masked_dot(counts, log_theta) + _dot(weights, ent)
            if not np.isfinite(value):
                raise FloatingPointError("EM: the objective is not finite; degenerate data or priors.")
            n_iter += 1
            if n_iter > 1 and abs(value - previous) < tol:
                converged = True
                break
            previous = value
        if s == 0 or value > best:
            best = value
            best_iter = n_iter
            best_conv = converged
            counts_out[:] = counts
            theta_out[:] = theta
            entropy_out[:] = ent
    return best, best_iter, best_conv


@njit(cache=True, nogil=True)
def _vb_bound(counts, elog, weights, ent, kl):
    """Beal's F in its general form: sum N E[ln theta] + sum_u w_u H_u - KL(q || p)."""
    return masked_dot(counts, elog) + _dot(weights, ent) - kl


@njit(cache=True, nogil=True)
def vbem_restarts(starts, prior, row_ptr, idx, row_start, weights, max_iter, tol, alpha_out):
    """VBEM with SQUAREM extrapolation of ``ln alpha`` from every row of ``starts``.

    Plain iteration: VBM (``alpha = prior + counts``), VBE at ``E[ln theta]``.  Once three
    plain iterates are known and the bound has two values, the extrapolated point
    ``x0 + 2 s r + s^2 v`` (SqS3 step ``s = |r| / |v|`` clipped to ``[1, step_max]``;
    ``step_max`` grows 4-fold after an accepted capped step and shrinks after a
    rejection, Varadhan & Roland 2008; Du & Varadhan 2020) is kept when its bound (after
    a VBE step) is not below the last one; otherwise the last plain iterate is restored
    and a plain iteration runs.  Writes the kept restart's Dirichlet parameters; returns
    ``(bound, n_iter, converged)``.
    """
    R, P = starts.shape
    U = row_start.shape[0] - 1
    counts = np.empty(P)
    saved_counts = np.empty(P)
    alpha = np.empty(P)
    elog = np.empty(P)
    trial = np.empty(P)
    scratch = np.empty(P)
    points = np.empty((3, P))
    post = np.empty(idx.shape[0])
    log_z = np.empty(U)
    ent = np.empty(U)
    best = -np.inf
    best_iter = 0
    best_conv = False
    for s in range(R):
        enumerate_posterior(starts[s], idx, row_start, weights, counts, post, log_z, ent)
        n_points = 0
        step_max = 1.0
        step = 1.0
        at_cap = False
        value = 0.0
        previous = 0.0
        n_iter = 0
        converged = False
        for it in range(max_iter):
            plain = True
            if n_points == 3 and n_iter >= 2:
                # the SQUAREM proposal from the last three plain iterates
                saved_counts[:] = counts
                shrink = 1.0
                valid = False
                for _ in range(_MAX_SHRINKS):
                    nr = 0.0
                    nv = 0.0
                    for k in range(P):
                        r = points[1, k] - points[0, k]
                        v = points[2, k] - 2.0 * points[1, k] + points[0, k]
                        nr += r * r
                        nv += v * v
                    nr = math.sqrt(nr)
                    nv = math.sqrt(nv)
                    sl = nr / nv if nv > 0.0 else 1.0
                    at_cap = sl >= step_max
                    sl = min(max(sl, 1.0), step_max)
                    step = 1.0 + (sl - 1.0) * shrink
                    if step <= 1.0:
                        if at_cap:
                            step_max *= _GROWTH
                        break
                    ok = True
                    for k in range(P):
                        r = points[1, k] - points[0, k]
                        v = points[2, k] - 2.0 * points[1, k] + points[0, k]
                        a = math.exp(points[0, k] + 2.0 * step * r + step * step * v)
                        trial[k] = a
                        if not (a > 0.0 and a < np.inf):
                            ok = False
                    if ok:
                        valid = True
                        break
                    shrink *= 0.5
                if valid:
                    for k in range(P):
                        alpha[k] = trial[k]
                        scratch[k] = trial[k] - prior[k]
                    kl = dirichlet_update(prior, scratch, row_ptr, trial, elog)
                    enumerate_posterior(elog, idx, row_start, weights, counts, post, log_z, ent)
                    value = _vb_bound(counts, elog, weights, ent, kl)
                    if np.isfinite(value) and value >= previous:
                        plain = False
                        if at_cap:
                            step_max *= _GROWTH
                        for k in range(P):
                            points[0, k] = math.log(alpha[k])
                        n_points = 1
                    else:
                        step_max = max(1.0, step / _GROWTH)
                        points[0] = points[n_points - 1]
                        n_points = 1
                        counts[:] = saved_counts
                elif step > 1.0:
                    step_max = max(1.0, step / _GROWTH)
                    points[0] = points[n_points - 1]
                    n_points = 1
            if plain:
                kl = dirichlet_update(prior, counts, row_ptr, alpha, elog)
                enumerate_posterior(elog, idx, row_start, weights, counts, post, log_z, ent)
                value = _vb_bound(counts, elog, weights, ent, kl)
                if not np.isfinite(value):
                    raise FloatingPointError("VBEM: the bound is not finite; degenerate data or priors.")
                if n_points == 3:
                    points[0] = points[1]
                    points[1] = points[2]
                    n_points = 2
                for k in range(P):
                    points[n_points, k] = math.log(alpha[k])
                n_points += 1
            n_iter += 1
            if n_iter > 1 and abs(value - previous) < tol:
                converged = True
                break
            previous = value
        if s == 0 or value > best:
            best = value
            best_iter = n_iter
            best_conv = converged
            alpha_out[:] = alpha
    return best, best_iter, best_conv
