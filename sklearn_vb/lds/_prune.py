"""The pruning step of the estimator: a bound-guided move that removes one
dimension of the hidden state, kept only if it raises the bound (see the
``prune_states`` parameter of :class:`~sklearn_vb.lds.VBLinearDynamicalSystem`).

``est`` is the estimator during its fit and ``data`` its ``_FitData``.
"""

from __future__ import annotations

import numpy as np

from .._core.base import bound_round_off
from ._state import PruneSchedule
from ._vbem import hidden_stats

__all__ = ["prune_step", "remove_state", "state_strength"]


def state_strength(q, stats, k):
    """How much each state dimension j carries under q(theta) ``q`` and the
    statistics ``stats`` of q(x): the expected sums over time of its contributions to
    the outputs, in noise units, and to the next state, in innovation units:
    ``<C_j' R^-1 C_j> [W_C]_jj + <A_j' A_j> [W_A]_jj`` (``C_j``, ``A_j`` the j-th
    columns, ``k`` the state dimension).  The pruning move proposes the weakest dimension first."""
    return (np.diag(q.E_CD)[:k] * np.diag(stats.W_C)
            + np.diag(q.E_AB)[:k] * np.diag(stats.W_A))


def remove_state(est, data, j):
    """Delete state dimension j: its row and column of A, row of B and column of
    C (through q(x), from which the next VBM step rebuilds q(theta)), its ARD
    precisions and its entries of the initial-state prior."""
    keep = np.delete(np.arange(est.n_states_), j)
    est._q_x = est._q_x.keep_states(keep)
    est.n_states_ = keep.size
    est.kept_states_ = est.kept_states_[keep]
    est.alpha_ = est.alpha_[keep]
    est.gamma_ = est.gamma_[keep]
    est.init_state_mean_ = est.init_state_mean_[keep]
    est.init_state_cov_ = est.init_state_cov_[np.ix_(keep, keep)]
    est._stats = hidden_stats(data, est._q_x)


def prune_step(est, data, iteration):
    """Bound-guided removal of a state dimension, accepted only if it raises F.

    A move removes one dimension (:func:`remove_state`), re-converges the
    smaller model for ``prune_iter`` VBEM iterations (hyperparameter update, VBM,
    VBE; the first without the hyperparameter update) and is accepted if the
    bound then exceeds ``F + prune_iter * dF``, the bound before the move
    extrapolated at the current per-iteration gain ``dF`` of the unpruned run
    (so a move is not credited with the climb the unpruned run would have made
    anyway).  A removal tried at a stall may instead re-converge for the
    iterations the fit has left and is accepted as soon as it passes that
    target.  The re-convergence stops early, rejecting the move, once even its
    latest per-iteration gain kept up for the rest of its budget cannot reach
    that target (with shrinking gains, as in VBEM, the
    full run would fall short too).  A rejected move restores the saved state exactly.  The bound after
    this step is therefore never below the bound before it, and the recorded
    history holds only accepted states.

    Moves are proposed once every hyperparameter group has started and
    ``prune_interval`` further iterations have passed, then every
    ``prune_interval`` iterations (the weakest dimension by
    :func:`state_strength`; straight after an accepted move the next one is
    tried; after consecutive rejections the interval doubles, up to 8 times),
    and whenever the bound has stalled (gain below ``tol``) after the schedule:
    then every dimension is tried, weakest first, before convergence can be
    declared, so a converged fit is one that no single removal improves.
    """
    if est._q_theta is None:
        return
    value = est._lower_bound(data)
    book = getattr(est, "_prune_book", None)
    if iteration == 1 or book is None:
        sched = est.hyperparameter_schedule
        started = max(sched) if sched is not None else 0
        book = est._prune_book = PruneSchedule(next=started + est.prune_interval + 1,
                                               stall_from=started + 1)
    rate = max(value - book.last, 0.0) if np.isfinite(book.last) else np.inf
    book.last = value
    stalled = rate < est.tol
    if not stalled:
        book.stalled = False  # a new stall gets a new round of proposals
    due = iteration >= book.next or (
        stalled and not book.stalled and iteration >= book.stall_from)
    if not due or est.n_states_ < 2:
        return
    # a removal tried at a stall compares two fits at their optima: the smaller model
    # may use the iterations the fit has left (it can sit on a plateau for longer than
    # prune_iter before it climbs past the larger one)
    budget = max(est.prune_iter, est.max_iter - iteration) if stalled else est.prune_iter
    target = value + est.prune_iter * rate
    order = np.argsort(state_strength(est._q_theta, est._stats, est.n_states_), kind="stable")
    accepted = False
    for j in order[: est.n_states_ if stalled else 1]:
        saved = est._get_state()
        label, n_before = est.kept_states_[j], est.n_states_
        remove_state(est, data, int(j))
        est._vbm(data, est._stats)
        est._vbe(data)
        new = est._lower_bound(data)
        done = 1
        for done in range(2, budget + 1):
            est._step_hyper(data, iteration)
            est._vbm(data, est._stats)
            est._vbe(data)
            last, new = new, est._lower_bound(data)
            # give up once even the current gain kept up to the end of the
            # budget cannot reach the target (gains that shrink, as they do
            # in VBEM, fall further short)
            if new > target + bound_round_off(value) and stalled:
                break  # above the larger model's optimum: the main loop continues
            if new + (budget - done) * max(new - last, 0.0) \
                    <= target + bound_round_off(value):
                break
        accepted = new > target + bound_round_off(value)
        if est.verbose >= 2:
            print(f"  iteration {iteration}: remove state {label} "
                  f"of {n_before}: bound {value:.6f} -> {new:.6f} after "
                  f"{done} of {budget} iterations, needs {target:.6f}: "
                  f"{'accepted' if accepted else 'rejected'}")
        if accepted:
            break
        est._set_state(saved)
    if accepted:
        book.last = est._lower_bound(data)
        book.next = iteration + 1
        book.stalled = False
        book.rejected = 0
    else:
        # a stalled run that no removal improves is left to converge
        book.stalled = stalled
        book.rejected += 1
        book.next = iteration + est.prune_interval * 2 ** min(book.rejected - 1, 3)
