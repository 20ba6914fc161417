"""EM and VBEM runs of a discrete DAG in compiled code.

One call runs one restart of :class:`sklearn_vb.dag.VBDiscreteDAG` to convergence: the
M / VBM step, the exact E / VBE step (:mod:`sklearn_vb.dag.kernels`), the bound, the
SQUAREM extrapolation of ``ln alpha`` (Varadhan & Roland 2008, as
:class:`sklearn_vb.base.SquaremSteps`) and the stopping rule.  The estimator calls
:func:`em_run` / :func:`vbem_run` once per restart; :func:`em_restarts` /
:func:`vbem_restarts` run several restarts from given starting tables in one call, for
callers that fit many small models (Beal's Chapter 6 scores 136 structures at 20 data
sizes).

A run starts from the expected counts of an exact E step (under the starting tables, or
a fitted state to continue) and stops when its bound changes by less than ``tol`` or
after ``max_iter`` iterations.  It writes the bound after every iteration into
``trace``.  With ``check_steps`` the bound is also evaluated after the M / VBM step and
the run stops at the first step that lowers it by more than round-off (a bug: every step
maximises the bound over one factor, Beal 2003 Theorem 2.1).

Every run returns a status: :data:`OK`, :data:`DECREASED` (``check_steps`` only; with the
step, the bound before and the bound after) or :data:`NOT_FINITE` (a plain iteration gave
a bound that is not finite; ``after`` holds it).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import dirichlet_update, enumerate_posterior, masked_dot, normalise_rows

__all__ = ["em_run", "vbem_run", "em_restarts", "vbem_restarts", "OK", "DECREASED",
           "NOT_FINITE"]

#: run statuses
OK, DECREASED, NOT_FINITE = 0, 1, 2
#: SQUAREM step-length control (as :class:`sklearn_vb.base.SquaremSteps`)
_GROWTH = 4.0
#: proposals that are not valid Dirichlet parameters are shrunk at most this often
_MAX_SHRINKS = 6


@njit(cache=True, nogil=True)
def _dot(a, b):
    # np.dot (BLAS), as numpy sums np.dot and np.linalg.norm: the run is then the
    # estimator's Python-level definition bit for bit (restarts that reach the same
    # optimum along a flat direction are told apart by the same rounding)
    return np.dot(a, b)


@njit(cache=True, nogil=True)
def _log_into(values, out):
    for k in range(values.shape[0]):
        v = values[k]
        out[k] = math.log(v) if v > 0.0 else -np.inf


@njit(cache=True, nogil=True)
def _decreased(before, after):
    # sklearn_vb.base.bound_round_off
    return after < before - (1e-9 * abs(before) + 1e-7)


@njit(cache=True, nogil=True)
def _em_objective(counts, log_theta, weights, ent, offset, prior_const):
    """The EM objective: sum N ln theta + sum_u w_u H_u + ln p(theta), the log prior
    density in the MAP basis ``prior_const + sum offset ln theta`` (zero for ML)."""
    return masked_dot(counts, log_theta) + _dot(weights, ent) + (
        prior_const + masked_dot(offset, log_theta))


@njit(cache=True, nogil=True)
def em_run(counts, offset, prior_const, row_ptr, idx, row_start, weights, max_iter,
           tol, check_steps, theta, log_theta, post, log_z, ent, trace):
    """EM for a point estimate from the E-step state ``counts`` (updated in place).

    M step ``theta = (offset + counts) / row sums`` (``offset`` 0 for ML, ``lambda`` for
    the softmax MAP basis, ``lambda - 1`` for the natural one), E step at ``ln theta``;
    ``prior_const`` is the log normaliser of the prior density in that basis (0 for ML).  Writes ``theta``,
    ``log_theta``, the E-step arrays and ``trace``; returns ``(n_iter, converged,
    status, step, before, after)`` (step 0 = M, 1 = E).
    """
    P = counts.shape[0]
    values = np.empty(P)
    previous = 0.0
    n_iter = 0
    for it in range(max_iter):
        for k in range(P):
            values[k] = offset[k] + counts[k]
        normalise_rows(values, row_ptr, theta)
        _log_into(theta, log_theta)
        if check_steps and it > 0:
            after_m = _em_objective(counts, log_theta, weights, ent, offset, prior_const)
            if _decreased(previous, after_m):
                return n_iter, False, DECREASED, 0, previous, after_m
            previous = after_m
        enumerate_posterior(log_theta, idx, row_start, weights, counts, post, log_z, ent)
        value = _em_objective(counts, log_theta, weights, ent, offset, prior_const)
        if not np.isfinite(value):
            return n_iter, False, NOT_FINITE, 1, previous, value
        if check_steps and it > 0 and _decreased(previous, value):
            return n_iter, False, DECREASED, 1, previous, value
        trace[it] = value
        n_iter += 1
        if n_iter > 1 and abs(value - trace[it - 1]) < tol:
            return n_iter, True, OK, 0, 0.0, 0.0
        previous = value
    return n_iter, False, OK, 0, 0.0, 0.0


@njit(cache=True, nogil=True)
def _vb_bound(counts, elog, weights, ent, kl):
    """Beal's F in its general form: sum N E[ln theta] + sum_u w_u H_u - KL(q || p)."""
    return masked_dot(counts, elog) + _dot(weights, ent) - kl


@njit(cache=True, nogil=True)
def vbem_run(counts, prior, row_ptr, idx, row_start, weights, max_iter, tol, accelerate,
             check_steps, alpha, elog, post, log_z, ent, trace):
    """VBEM from the VBE-step state ``counts`` (updated in place), with SQUAREM
    extrapolation of ``ln alpha`` when ``accelerate``.

    Plain iteration: VBM (``alpha = prior + counts``), VBE at ``E[ln theta]``.  Once three
    plain iterates are known and the bound has two values, the extrapolated point
    ``x0 + 2 s r + s^2 v`` (SqS3 step ``s = |r| / |v|`` clipped to ``[1, step_max]``;
    ``step_max`` grows 4-fold after an accepted capped step and shrinks after a
    rejection, Varadhan & Roland 2008; Du & Varadhan 2020) is kept when its bound (after
    a VBE step) is not below the last one; otherwise the last plain iterate is restored
    and a plain iteration runs.  Writes ``alpha``, ``elog``, the VBE-step arrays and
    ``trace``; returns ``(n_iter, converged, kl, accepted, rejected, status, step,
    before, after)`` (step 0 = VBM, 1 = VBE).
    """
    P = counts.shape[0]
    saved_counts = np.empty(P)
    saved_ent = np.empty(ent.shape[0])
    trial = np.empty(P)
    scratch = np.empty(P)
    rvec = np.empty(P)
    vvec = np.empty(P)
    points = np.empty((3, P))
    n_points = 0
    step_max = 1.0
    step = 1.0
    at_cap = False
    kl = 0.0
    value = 0.0
    previous = 0.0
    accepted = 0
    rejected = 0
    n_iter = 0
    for it in range(max_iter):
        plain = True
        if accelerate and n_points == 3 and n_iter >= 2:
            # the SQUAREM proposal from the last three plain iterates
            for k in range(P):
                rvec[k] = points[1, k] - points[0, k]
                vvec[k] = points[2, k] - 2.0 * points[1, k] + points[0, k]
            norm_r = math.sqrt(_dot(rvec, rvec))
            norm_v = math.sqrt(_dot(vvec, vvec))
            saved_counts[:] = counts
            saved_ent[:] = ent
            shrink = 1.0
            valid = False
            for _ in range(_MAX_SHRINKS):
                sl = norm_r / norm_v if norm_v > 0.0 else 1.0
                at_cap = sl >= step_max
                sl = min(max(sl, 1.0), step_max)
                step = 1.0 + (sl - 1.0) * shrink
                if step <= 1.0:
                    if at_cap:
                        step_max *= _GROWTH
                    break
                ok = True
                for k in range(P):
                    a = math.exp(points[0, k] + 2.0 * step * rvec[k] + step * step * vvec[k])
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
                kl_trial = dirichlet_update(prior, scratch, row_ptr, trial, elog)
                enumerate_posterior(elog, idx, row_start, weights, counts, post, log_z, ent)
                value = _vb_bound(counts, elog, weights, ent, kl_trial)
                if np.isfinite(value) and value >= previous:
                    plain = False
                    kl = kl_trial
                    accepted += 1
                    if at_cap:
                        step_max *= _GROWTH
                    for k in range(P):
                        points[0, k] = math.log(alpha[k])
                    n_points = 1
                else:
                    rejected += 1
                    step_max = max(1.0, step / _GROWTH)
                    points[0] = points[n_points - 1]
                    n_points = 1
                    counts[:] = saved_counts
                    ent[:] = saved_ent
            elif step > 1.0:
                rejected += 1
                step_max = max(1.0, step / _GROWTH)
                points[0] = points[n_points - 1]
                n_points = 1
        if plain:
            kl = dirichlet_update(prior, counts, row_ptr, alpha, elog)
            if check_steps and n_iter > 0:
                after_vbm = _vb_bound(counts, elog, weights, ent, kl)
                if _decreased(previous, after_vbm):
                    return n_iter, False, kl, accepted, rejected, DECREASED, 0, previous, after_vbm
                previous = after_vbm
            enumerate_posterior(elog, idx, row_start, weights, counts, post, log_z, ent)
            value = _vb_bound(counts, elog, weights, ent, kl)
            if not np.isfinite(value):
                return n_iter, False, kl, accepted, rejected, NOT_FINITE, 1, previous, value
            if check_steps and n_iter > 0 and _decreased(previous, value):
                return n_iter, False, kl, accepted, rejected, DECREASED, 1, previous, value
            if accelerate:
                if n_points == 3:
                    points[0] = points[1]
                    points[1] = points[2]
                    n_points = 2
                for k in range(P):
                    points[n_points, k] = math.log(alpha[k])
                n_points += 1
        trace[it] = value
        n_iter += 1
        if n_iter > 1 and abs(value - trace[it - 1]) < tol:
            return n_iter, True, kl, accepted, rejected, OK, 0, 0.0, 0.0
        previous = value
    return n_iter, False, kl, accepted, rejected, OK, 0, 0.0, 0.0


@njit(cache=True, nogil=True)
def em_restarts(starts, row_ptr, idx, row_start, weights, max_iter, tol, counts_out, theta_out,
                entropy_out):
    """ML EM (:func:`em_run`) from every row of ``starts`` (starting log tables); the kept
    restart is the first with the highest final objective.  Writes its expected counts,
    tables and per-pattern posterior entropies; returns ``(bound, n_iter, converged)``."""
    R, P = starts.shape
    U = row_start.shape[0] - 1
    zeros = np.zeros(P)
    counts = np.empty(P)
    theta = np.empty(P)
    log_theta = np.empty(P)
    post = np.empty(idx.shape[0])
    log_z = np.empty(U)
    ent = np.empty(U)
    trace = np.empty(max_iter)
    best = -np.inf
    best_iter = 0
    best_conv = False
    for s in range(R):
        enumerate_posterior(starts[s], idx, row_start, weights, counts, post, log_z, ent)
        n_iter, converged, status, _, _, _ = em_run(
            counts, zeros, 0.0, row_ptr, idx, row_start, weights, max_iter, tol, False,
            theta, log_theta, post, log_z, ent, trace)
        if status != OK:
            raise FloatingPointError("EM: the objective is not finite; degenerate data or priors.")
        value = trace[n_iter - 1]
        if s == 0 or value > best:
            best = value
            best_iter = n_iter
            best_conv = converged
            counts_out[:] = counts
            theta_out[:] = theta
            entropy_out[:] = ent
    return best, best_iter, best_conv


@njit(cache=True, nogil=True)
def vbem_restarts(starts, prior, row_ptr, idx, row_start, weights, max_iter, tol, alpha_out):
    """VBEM with SQUAREM (:func:`vbem_run`) from every row of ``starts`` (starting log
    tables); the kept restart is the first with the highest final bound.  Writes its
    Dirichlet parameters; returns ``(bound, n_iter, converged)``."""
    R, P = starts.shape
    U = row_start.shape[0] - 1
    counts = np.empty(P)
    alpha = np.empty(P)
    elog = np.empty(P)
    post = np.empty(idx.shape[0])
    log_z = np.empty(U)
    ent = np.empty(U)
    trace = np.empty(max_iter)
    best = -np.inf
    best_iter = 0
    best_conv = False
    for s in range(R):
        enumerate_posterior(starts[s], idx, row_start, weights, counts, post, log_z, ent)
        n_iter, converged, _, _, _, status, _, _, _ = vbem_run(
            counts, prior, row_ptr, idx, row_start, weights, max_iter, tol, True, False,
            alpha, elog, post, log_z, ent, trace)
        if status != OK:
            raise FloatingPointError("VBEM: the bound is not finite; degenerate data or priors.")
        value = trace[n_iter - 1]
        if s == 0 or value > best:
            best = value
            best_iter = n_iter
            best_conv = converged
            alpha_out[:] = alpha
    return best, best_iter, best_conv
