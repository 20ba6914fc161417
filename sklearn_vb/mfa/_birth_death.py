"""The birth/death search of :class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers`
(Beal 2003, Section 4.3).

:class:`BirthDeathSearch` runs one search on one estimator: a first VBEM epoch with
deaths, birth epochs (a split of one component, the partial updates of its children,
then VBEM with deaths until the birth is accepted or rejected) until a pass through the
candidates accepts none, the polish of the final structure, and the fixed-size refits
of ``refit_final``.  It drives the estimator's own VBEM loop (``_iterate``) and tells
the loop's steps what they may do through a :class:`RunControl`; the search's
bookkeeping (iteration count, log of events and moves) is its own.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from .._core.base import bound_round_off, predicted_remaining_gain
from ._hyper import selected_hyperparameters
from ._search import PartialBound, children_iteration
from ._state import MFAState
from ._structure import birth, prune_dead_factors
from ._vbem import component_scores, first_updates, initial_state, n_loading_columns

__all__ = ["BirthDeathSearch", "RunControl", "birth_verdict", "partial_birth_iter", "propose_birth",
           "resolved_max_tries", "run_fixed_structure"]


@dataclass
class RunControl:
    """What the steps and the stopping rule of a VBEM run need to know of the run."""

    deaths_allowed: bool = False  # a q(s) update deletes the components that died
    in_birth_epoch: bool = False  # no pruning: its gain is not the birth's
    searching: bool = False  # no decoupling: a child may use a column its parent switched off
    strict_stop: bool = False  # stop only once the predicted remaining gain is below tol
    trace: list = field(default_factory=list)  # F since the last structure change

    def can_stop(self, tol, accelerated):
        """The ``tol`` test of the loop holds; in a run that must converge fully
        (``strict_stop``), also require the predicted remaining gain to be below ``tol``."""
        if not self.strict_stop:
            return True
        if accelerated:
            # extrapolations every few iterations make single increments jump
            return predicted_remaining_gain(self.trace, window=3, block=10) < tol
        return predicted_remaining_gain(self.trace) < tol


def run_fixed_structure(estimator, data, control):
    """VBEM on the estimator's current structure (``search=False``: no births, no
    deaths) until it converges fully (``strict_stop``) or ``max_iter``; returns the
    trace and whether it converged."""
    def watch(iteration, trace, restarted):
        control.trace = trace  # for can_stop

    control.strict_stop = True
    try:
        return estimator._iterate(data, range(1, estimator.max_iter + 1), watch)
    finally:
        control.strict_stop = False


def partial_birth_iter(est, data):
    """The partial iterations of a birth's children (``birth_partial_iter``); none when
    ``data`` has missing entries, whose children settle in the full VBEM updates of the
    birth epoch (the partial updates of :mod:`sklearn_vb.mfa._search` use the
    complete-data statistics)."""
    return est.birth_partial_iter if data.missing is None else 0


def propose_birth(est, data, parent, split=birth):
    """Split of component index ``parent`` of ``est``'s state into two children, at
    ``parent`` and at the new last index: the responsibility split (eqs. 4.73-4.76) or
    the spatial split (``split``), along the direction of ``split_direction``, made by
    ``split`` (:func:`~sklearn_vb.mfa._structure.birth` on a variational state)."""
    tried = est.__dict__.setdefault("_principal_split_tried", set())
    parent_id = int(est._vb_.ids[parent])
    # the spatial split moves the children by d itself: the parent's strongest
    # loading column is no displacement when ARD has shrunk every column
    principal = (est.split_direction == "principal-first" and est.split != "spatial"
                 and parent_id not in tried and est.__dict__.get("_restart_index", 0) == 0)
    if split(est._vb_, data, parent, est._search_rng, principal, est.split == "spatial",
             est.split_hardness, partial_updates_follow=bool(partial_birth_iter(est, data))):
        tried.add(parent_id)


@dataclass
class SearchLog:
    """What the search records as it goes: one ``(iteration, bound, n_components,
    epoch, event)`` per VBEM iteration or structure event, the birth moves, the
    current epoch and the birth counts."""

    history: list = field(default_factory=list)
    moves: list = field(default_factory=list)
    epoch: int = 0
    proposed: int = 0
    accepted: int = 0


class _Kept(NamedTuple):
    """A state of the search with its bound, its trace and whether it converged."""

    bound: float
    state: MFAState
    trace: list
    converged: bool


def _better(kept, candidate):
    """The one of two :class:`_Kept` states with the higher bound (``kept`` may be
    None); the earlier one on a tie."""
    if kept is None or candidate.bound > kept.bound:
        return candidate
    return kept


def birth_verdict(trace, target, accept_rtol, reject_rtol):
    """Whether a birth epoch can end early: True accepts the birth, False rejects
    it, None lets the epoch run on.  ``trace`` holds F since the last structure
    change, ``target`` is F before the split.

    Two rules are relative to the birth's own progress (``accept_rtol``,
    ``reject_rtol``: the estimator's ``birth_accept_rtol``, ``birth_reject_rtol``; 0
    disables either): once F is above ``target``, the birth is accepted as soon as the
    last increment of F is below ``accept_rtol`` times ``F - target``; while F is below
    ``target``, from the sixth iteration since the last structure change on, it is
    rejected as soon as the last increment is below ``reject_rtol`` times the gain
    since that change.  A third rejects a hopeless birth: from the sixth
    iteration since the last structure change on, when the last three increments
    of F decay geometrically (both ratios ``r <= 0.9``) and the gap to
    ``target`` exceeds ten times the geometric extrapolation of the remaining
    gain, ``Δ r / (1 - r)`` with the larger ratio.  All only stop the VBEM run
    early; every recorded F is still the exact bound of the stored state and
    never decreases within the run.
    """
    if len(trace) > 1:
        gain = trace[-1] - trace[-2]
        if (trace[-1] > target + bound_round_off(target)
                and gain < accept_rtol * (trace[-1] - target)):
            return True  # the remaining gain is a small fraction
        if (len(trace) >= 6 and trace[-1] < target
                and gain < reject_rtol * (trace[-1] - trace[0])):
            return False  # progress has slowed while still below the target
    if len(trace) >= 6 and trace[-1] < target:
        d = np.diff(trace[-4:])
        if d[0] > 0 and d[1] > 0:
            r = max(d[1] / d[0], d[2] / d[1])
            if r <= 0.9 and target - trace[-1] > 10.0 * d[2] * r / (1.0 - r):
                return False
    return None


def resolved_max_tries(max_tries, split):
    """The number of passes without an accepted birth that end the search."""
    if max_tries == "auto":
        return 3 if split == "spatial" else 1
    return max_tries


class BirthDeathSearch:
    """One birth/death search of ``estimator`` on ``data``; ``control`` is the
    :class:`RunControl` its VBEM steps read.

    The birth epochs ask four methods what to do, which the point-estimate search
    (:class:`~sklearn_vb.mfa._ml_birth_search.PointBirthSearch`) overrides: the order of
    the candidate parents (:meth:`candidate_order`), the split (:meth:`propose`), the
    value a birth must beat (:meth:`birth_target`); two flags say whether switched-off
    loading columns are pruned before a proposal (``prunes``) and whether the children
    first run partial updates of their own (``settles_children``)."""

    prunes = True
    settles_children = True

    def __init__(self, estimator, data, control):
        self.est = estimator
        self.data = data
        self.control = control
        self.total_iter = 0  # VBEM iterations so far, numbered across epochs
        self.n_partial_iter = 0  # partial iterations of the birth's children
        self.log = SearchLog()
        self.size_before_last_birth = None  # components before the last accepted birth

    def run(self):
        """The search: the first epoch, birth epochs until a pass through the
        candidates accepts none (``max_tries``), the polish of the final structure;
        then, with ``refit_final``, fixed-size fits from a fresh start at the final
        number of components and at the number before the last accepted birth, and
        the births continue from the better refit whenever its bound is higher than
        the search's.  The state with the highest bound at the end of any of these
        stages (its polished continuation when that is not the last state) is the
        result.  Returns the trace of the result and whether the search converged."""
        est, control, log = self.est, self.control, self.log
        control.searching = True
        control.deaths_allowed = True
        try:
            trace, _ = self.run_epoch(log.epoch, "iter")
            best = None
            refitted = set()  # numbers of components refitted already
            rounds = 0
            while True:
                trace, converged = self.birth_epochs(trace)
                # a death in the polish can lower F for good: the unpolished state counts
                best = _better(best, _Kept(trace[-1], copy.deepcopy(est._vb_), trace,
                                           converged))
                trace, converged = self.polish(trace, converged)
                best = _better(best, _Kept(trace[-1], copy.deepcopy(est._vb_), trace,
                                           converged))
                if not est.refit_final or self.total_iter >= est.max_iter:
                    break
                refit = self.refit_sizes(refitted)
                if refit is None or refit.bound <= best.bound + bound_round_off(best.bound):
                    # no better than the search: back to the best state, polished already
                    est._vb_ = copy.deepcopy(best.state)
                    trace, converged = best.trace, best.converged
                    break
                best = refit
                est._vb_ = copy.deepcopy(refit.state)
                trace, converged = refit.trace, refit.converged
                if rounds >= est.refit_final:
                    break  # the refit is converged: it is the result
                rounds += 1  # births continue from the refit
            if best.bound > trace[-1] + bound_round_off(trace[-1]):
                # the search ended below a state it passed through: that state's
                # continuation with its number of components is the result (it can only
                # rise)
                est._vb_ = copy.deepcopy(best.state)
                control.deaths_allowed = False
                try:
                    trace, converged = self.polish(best.trace, best.converged)
                finally:
                    control.deaths_allowed = True
                if trace[-1] < best.bound:  # cannot happen: the polish never lowers F
                    est._vb_ = best.state
                    trace, converged = best.trace, best.converged
            return trace, converged
        finally:
            control.searching = False

    def refit_sizes(self, refitted):
        """Fixed-size refits (:meth:`refit_fixed_size`) at the current number of
        components and at the number before the last accepted birth, each size at most
        once per search (``refitted`` holds the sizes done and is updated).  A birth is
        accepted as soon as its F passes the parent's, and the parent need not have
        converged: a structure one birth too large can then end above its parent's F
        but below a converged fit at the parent's size.  Returns the refit with the
        higher bound as a :class:`_Kept`, or None when none could run."""
        sizes = [self.est._vb_.resp.shape[1], self.size_before_last_birth]
        found = None
        for S in dict.fromkeys(s for s in sizes if s is not None and s not in refitted):
            if self.total_iter >= self.est.max_iter:
                break
            refitted.add(S)
            refit = self.refit_fixed_size(S)
            if refit is None:
                continue
            trace, converged = refit
            found = _better(found, _Kept(trace[-1], copy.deepcopy(self.est._vb_), trace,
                                         converged))
        return found

    def fitted_attributes(self):
        """The estimator's attributes that describe the search."""
        log = self.log
        h = list(zip(*log.history)) if log.history else [[], [], [], [], []]
        return {
            "search_history_": {
                "iteration": np.asarray(h[0], dtype=int),
                "bound": np.asarray(h[1], dtype=float),
                "n_components": np.asarray(h[2], dtype=int),
                "epoch": np.asarray(h[3], dtype=int),
                "event": np.asarray(h[4], dtype=object),
                "moves": log.moves,
            },
            "n_births_proposed_": log.proposed,
            "n_births_accepted_": log.accepted,
            "n_epochs_": log.epoch + 1,
            "n_partial_iter_": self.n_partial_iter,
            "_search_total_iter_": self.total_iter,
        }

    def run_epoch(self, epoch, event, agitation_tol=None, max_iter=None, target=None,
                  relative=True):
        """VBEM with deaths until F or the agitation (eq. 4.72) converges.

        The iterations are numbered on from the search's ``total_iter`` and stop at
        ``max_iter`` in total; each is recorded in the log with the event
        ``"death"`` when a component died in it, ``event`` for the first iteration
        of the epoch, and ``"iter"`` otherwise.  Besides the ``tol`` test of the
        estimator's loop, the epoch ends when no component's responsibilities
        changed by more than ``agitation_tol`` (a fraction of its mass) in the last
        iteration, a birth epoch (``target``: F before the split) by the rules of
        :func:`birth_verdict`, and (``relative``) any epoch once an iteration raises F
        by less than ``epoch_rtol`` times ``|F|``.
        """
        est, history = self.est, self.log.history
        agitation_tol = est.agitation_tol if agitation_tol is None else agitation_tol
        n_iter = est.max_iter_epoch if max_iter is None else max_iter
        iterations = range(self.total_iter + 1,
                           min(self.total_iter + n_iter, est.max_iter) + 1)
        # q(s) before each iteration, for the agitation rule
        old_resp, old_ids = est._vb_.resp, est._vb_.ids

        def record_and_stop(iteration, trace, restarted):
            nonlocal old_resp, old_ids
            self.control.trace = trace
            self.total_iter = iteration
            new, ids = est._vb_.resp, est._vb_.ids
            if restarted:
                agitation = 1.0
                ev = "death"
            else:
                # with one component the responsibilities cannot move: the rule
                # says nothing, and the epoch runs on the change of F alone
                agitation = float(np.max(
                    np.abs(new - old_resp).sum(0) / np.maximum(new.sum(0), 1e-300)
                )) if np.array_equal(old_ids, ids) and new.shape[1] > 1 else 1.0
                ev = event if len(trace) == 1 else "iter"
            old_resp, old_ids = new, ids
            history.append((iteration, trace[-1], new.shape[1], epoch, ev))
            if len(trace) > 1 and agitation < agitation_tol:
                return True
            if target is not None:
                verdict = birth_verdict(trace, target, est.birth_accept_rtol,
                                        est.birth_reject_rtol)
                if verdict is not None:
                    return verdict
            if (relative and len(trace) > 1
                    and trace[-1] - trace[-2] < est.epoch_rtol * abs(trace[-1])):
                return True
            return None

        return est._iterate(self.data, iterations, record_and_stop)

    def birth_epochs(self, trace):
        """Birth epochs from the current state until a pass through the candidates
        accepts none (``max_tries``), ``max_components`` or ``max_iter``; ``trace`` is F
        of the current state since its last structure change.  Returns the trace of
        the final state and whether the search stopped by its own rule."""
        est, data, log = self.est, self.data, self.log
        history = log.history
        F_target = trace[-1]
        tries = 0
        order = []
        pos = 0
        rejected = set()  # parents rejected since the last pass without an acceptance
        converged = False
        max_S = est.max_components if est.max_components is not None else np.inf
        while True:
            if self.total_iter >= est.max_iter:
                break
            if est._vb_.resp.shape[1] >= max_S:
                converged = True
                break
            if pos >= len(order):
                if order:
                    tries += 1
                    rejected.clear()
                    if tries >= resolved_max_tries(est.max_tries, est.split):
                        converged = True
                        break
                order = self.candidate_order()
                pos = 0
            parent_id = order[pos]
            pos += 1
            where = np.flatnonzero(est._vb_.ids == parent_id)
            if where.size == 0:
                continue
            if int(parent_id) in rejected:
                continue
            if self.prunes and est.prune_factors and prune_dead_factors(
                    est._vb_, data, est.prune_threshold) > 0.0:
                # the state the birth is compared with loses its dead columns first;
                # the target is raised by exactly the gain of the removal
                F_target = est._lower_bound(data)
                trace = [F_target]
                history.append((self.total_iter, F_target, est._vb_.resp.shape[1],
                                log.epoch, "prune"))
            saved = copy.deepcopy(est._vb_)
            log.epoch += 1
            log.proposed += 1
            S_before = est._vb_.resp.shape[1]
            self.propose(int(where[0]))
            target = self.birth_target(F_target, S_before)
            new_trace = None
            if self.settles_children and partial_birth_iter(est, data):
                partial = self.settle_children([int(where[0]), S_before], F_target)
                self.n_partial_iter += len(partial) - 1
                if est.birth_partial_reject and partial[-1] <= F_target:
                    # the children alone do not beat the parent: reject without a
                    # full epoch
                    new_trace = partial
            if new_trace is None:
                self.control.in_birth_epoch = True
                try:
                    new_trace, _ = self.run_epoch(log.epoch, "birth", target=target)
                finally:
                    self.control.in_birth_epoch = False
            F_new = new_trace[-1] if new_trace else -np.inf
            ok = F_new > target + bound_round_off(target)
            log.moves.append((log.epoch, int(parent_id), bool(ok), float(F_target),
                              float(F_new)))
            if ok:
                log.accepted += 1
                self.size_before_last_birth = S_before
                F_target = F_new
                trace = new_trace
                tries = 0
                if est._vb_.resp.shape[1] > S_before:
                    order = []  # recompute the candidate list
                history.append((self.total_iter, F_new, est._vb_.resp.shape[1],
                                log.epoch, "accept"))
            else:
                if est.skip_rejected_parents:
                    rejected.add(int(parent_id))
                est._vb_ = saved
                history.append((self.total_iter, F_target, saved.resp.shape[1],
                                log.epoch, "reject"))
        return trace, converged

    def candidate_order(self):
        """The ids of the current components in the order their births are proposed:
        lowest ``F_s`` (eq. 4.77) first."""
        scores = component_scores(self.est._vb_, self.data)
        return list(self.est._vb_.ids[np.argsort(scores)])

    def propose(self, parent):
        """Split component index ``parent`` (:func:`propose_birth`)."""
        self.est._birth(self.data, parent)

    def birth_target(self, value, n_components):
        """The value the objective of a birth epoch must exceed for the birth to be
        accepted, given its ``value`` before the split of a state with
        ``n_components``: F itself."""
        return value

    def settle_children(self, children, target):
        """Partial VBEM iterations over the two children of a birth only (see
        :mod:`sklearn_vb.mfa._search`) until the bound exceeds ``target`` (F before the
        split), at most ``birth_partial_iter``; they also stop when an iteration adds
        less than ``tol`` or when the gap to ``target`` is more than ten times the
        geometric extrapolation of the remaining gain (the rule of
        :func:`birth_verdict`).  Returns the exact bound before and after each
        iteration; it never decreases."""
        est, data = self.est, self.data
        trace = [est._lower_bound(data)]  # also caches every component's statistics
        hyper = selected_hyperparameters(est.optimize_hyperparameters)
        # F of the partial states at the cost of the children's terms
        bound = PartialBound(est._vb_, data.Z, children, data.log_jacobian)
        fixed = bound.residuals if "noise" in hyper else None
        b_min = est.ard_rate_min if "ard_rate" in hyper else None
        for _ in range(partial_birth_iter(est, data)):
            children_iteration(est._vb_, data.Z, children, fixed, data.psi_floor, b_min,
                               est.ard_rate_update)
            value = bound(est._vb_)
            est._check_decrease(trace[-1], value, self.total_iter, "partial birth")
            trace.append(value)
            if value > target or value - trace[-2] < est.tol:
                break
            d = np.diff(trace[-4:])
            if len(trace) >= 4 and np.all(d > 0):
                r = max(d[1] / d[0], d[2] / d[1])
                if r <= 0.9 and target - value > 10.0 * d[2] * r / (1.0 - r):
                    break
        return trace

    def polish(self, trace, converged):
        """Iterate the current structure (deaths, no births, rotations and compression)
        until it converges by the ``tol`` rule, at most ``polish_iter`` iterations: the
        agitation rule ends epochs once the responsibilities settle, but ARD keeps
        pruning long after that.  Returns the trace and whether the search converged."""
        est, log, control = self.est, self.log, self.control
        if est.polish_iter <= 0 or self.total_iter >= est.max_iter:
            return trace, converged
        log.epoch += 1
        control.strict_stop = True
        searching, control.searching = control.searching, False  # decoupling from here on
        try:
            tail, polished = self.run_epoch(log.epoch, "polish", agitation_tol=0.0,
                                            max_iter=est.polish_iter, relative=False)
        finally:
            control.strict_stop = False
            control.searching = searching
        # the search is converged only if its final structure is
        converged = converged and polished
        # a death in the last polish iteration restarts the trace
        if (tail and log.history[-1][4] != "death"
                and tail[0] >= trace[-1] - bound_round_off(trace[-1])):
            trace = trace + tail
        elif tail:
            trace = tail
        return trace, converged

    def refit_fixed_size(self, S):
        """A fixed-size fit (no births, no deaths) with ``S`` components from a fresh
        start (``init_params``), as ``search=False`` fits it.
        Replaces the current state and returns ``(trace, converged)``, or returns None
        (state unchanged) when there are no iterations left."""
        est, data, log, control = self.est, self.data, self.log, self.control
        n_left = min(est.polish_iter, est.max_iter - self.total_iter
                     - (-self.total_iter % est.rotation_interval))
        if n_left <= 0 or S > data.n_samples:
            return None
        first_id = est._vb_.next_id
        # the first restart with an integer seed starts where ``search=False`` with
        # this number of components would: the search can then not end below that fit
        if est.__dict__.get("_restart_index", 0) == 0 and isinstance(est.random_state,
                                                                     Integral):
            rng = check_random_state(est.random_state)
        else:
            rng = est._search_rng
        est._vb_ = initial_state(
            data, S, n_loading_columns(est.n_factors, data.n_features), est.init_params,
            est.alpha, est.a, est.b, rng,
            noise_estimated="noise" in selected_hyperparameters(est.optimize_hyperparameters))
        # new components: ids not used before, so no parent counts as tried
        est._vb_.ids = est._vb_.ids + first_id
        est._vb_.next_id = first_id + S
        first_updates(est._vb_, data)
        log.epoch += 1
        # number the refit's iterations so that the moves of every
        # ``rotation_interval``-th iteration fall where they do in a search=False fit
        self.total_iter += -self.total_iter % est.rotation_interval
        control.deaths_allowed = False
        control.strict_stop = True
        searching, control.searching = control.searching, False  # as search=False fits
        try:
            trace, converged = self.run_epoch(log.epoch, "refit", agitation_tol=0.0,
                                              max_iter=n_left, relative=False)
        finally:
            control.deaths_allowed = True
            control.strict_stop = False
            control.searching = searching
        # births may follow: a child must be free to use a column decoupled here (the
        # decoupled q is a valid q, so dropping the constraint leaves F as it is)
        est._vb_.active = None
        return trace, converged
