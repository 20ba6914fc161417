"""The ARD check of one restart (the ``ard_check`` parameter of
:class:`~sklearn_vb.lds.VBLinearDynamicalSystem`): when a run ends with state
dimensions switched off, a second run from the same start that first holds the ARD
precisions at ``ard_init``, and the better of the two is kept.

``est`` is the estimator during its fit and ``data`` its ``_FitData``.
"""

from __future__ import annotations


import numpy as np

from .._core.base import bound_round_off
from .._core.warn import warn_at_caller

__all__ = ["active_state_mask", "run_with_ard_check"]


def active_state_mask(alpha, gamma, stats, threshold):
    """The ``ard_threshold`` rule of ``active_states_``: a dimension is off when both
    its ARD precisions ``alpha`` and ``gamma`` are at least ``threshold`` times its
    expected second moments ``<x_j^2>`` of ``stats`` (``W_A`` and ``W_C``)."""
    dead_a = alpha >= threshold * np.diag(stats.W_A)
    dead_c = gamma >= threshold * np.diag(stats.W_C)
    return ~(dead_a & dead_c)


def run_with_ard_check(est, data):
    """One restart; with the ARD check (``ard_check``), when it ends with state
    dimensions switched off, the better of it and the checked run
    (:func:`_run_checked`) from the same start.  Returns ``(bounds, converged)`` of
    the kept run and sets ``ard_check_iter_``."""
    check = getattr(est, "_check_ard", False)
    start = est._get_state() if check else None
    bounds, converged = est._run_stage(data, est.max_iter)
    est.ard_check_iter_ = 0
    if not check or np.all(est._active_state_mask()) and est.n_states_ == est._k_max:
        return bounds, converged
    n_eff = int(np.sum(est._active_state_mask()))
    checked = (est._get_state(), list(bounds), converged)
    alt_bounds, alt_converged, first = _run_checked(est, data, start, checked[1])
    checked_state, bounds, converged = checked
    check_iter = first + len(alt_bounds)
    if est.verbose:
        print(f"[{type(est).__name__}] ARD check: bound {bounds[-1]:.6f} with "
              f"{n_eff} of {est._k_max} states; precisions first held fixed: "
              f"{alt_bounds[-1]:.6f} with {int(np.sum(est._active_state_mask()))} "
              f"({first} + {len(alt_bounds)} iterations"
              f"{'' if alt_converged else ', not converged'})")
    loss = alt_bounds[-1] - bounds[-1]
    if loss <= max(est.tol, bound_round_off(bounds[-1])):
        est._set_state(checked_state)
        est.ard_check_iter_ = check_iter
        return bounds, converged
    est.ard_check_iter_ = check_iter
    warn_at_caller(
        f"{type(est).__name__}: ARD switched off {est._k_max - n_eff} of "
        f"{est._k_max} state dimensions and lost {loss:.4g} nats of bound against "
        "a fit that first holds the ARD precisions at ard_init and then optimises them "
        f"({int(np.sum(est._active_state_mask()))} effective states); that fit is kept.",
        UserWarning,
    )
    return alt_bounds, alt_converged


def _run_checked(est, data, start, checked_bounds):
    """The ARD check of one restart, after its run (bounds ``checked_bounds``) ended
    with state dimensions switched off: from the same ``start``, a run that first
    holds the ARD precisions at ``ard_init`` (every dimension kept) and then optimises
    them.  ARD that switches dimensions off in its first iterations, before the
    dynamics are learned, can lose tens of nats (a noisy oscillation fitted with one
    state instead of two).  The first stage only has to learn the dynamics before ARD
    starts: it gets the iterations the checked run needed (its bound, with the
    precisions held, is not comparable with the checked run's, so it cannot stop on
    that); the second gets ``max_iter`` and is abandoned once its bound plus the gain
    still to come, predicted as the convergence test predicts it, stays below the
    checked run's bound.  Returns ``(bounds, converged, first)``: the history of the
    second stage and the length of the first."""
    first_budget = max(1, len(checked_bounds))
    est._set_state(start)
    est._ard_held = True
    try:
        first, _ = est._run_stage(data, first_budget)
    finally:
        est._ard_held = False
    checked_bound = checked_bounds[-1]
    est._abandon_below = checked_bound + max(est.tol, bound_round_off(checked_bound))
    try:
        second, converged = est._run_stage(data, est.max_iter)
    finally:
        del est._abandon_below
    return list(second), converged, len(first)
