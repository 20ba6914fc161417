"""EM for a point estimate (MAP or ML) from several starts: the loop every ScoringModel's
``fit_point`` runs.

The first start is the point of the fitted q(theta) in the EM's basis (where VB has
already done the climbing, so EM from it converges in a few iterations), the others are
seeded draws (far from VB's basin where the model has such starts, else from q(theta)); the start with the highest
objective wins.  A restart after
the first may use at most ``restart_iter`` E steps (by default as many as the first
run took, shared among ``draws_per_init`` draws): it only has to show that it climbs
above the best run so far, and a draw that does not is not worth the cost of a full
run.  A restart that is ahead when its budget runs out is continued to convergence;
the highest of the restarts that were behind gets one more budget of the first run's
E steps (it may be climbing towards a better optimum more slowly) and is continued if
that brings it ahead.  So ``n_init`` runs cost about ``n_init + 1`` times the first
run, plus the full runs of restarts that got ahead; the first is cheap because it
starts where VB ended.

A winning run that stopped at ``max_iter`` without meeting the tolerance raises a
:class:`~sklearn.exceptions.ConvergenceWarning`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..warn import warn_at_caller

__all__ = ["PointEMRun", "em_climb", "best_point_em", "posterior_then_draws"]


@dataclass
class PointEMRun:
    """One EM run: the last evaluated ``theta``, its ``objective``, the number of E steps
    ``n_iter`` and whether the objective changed by less than the tolerance."""

    theta: Any
    objective: float
    n_iter: int
    converged: bool


def em_climb(theta, evaluate, m_step, max_iter, tol, prev=-np.inf, space=None, trace=None):
    """EM from ``theta``: ``evaluate(theta) -> (objective, stats)`` (one E step),
    ``m_step(stats, theta) -> theta``.

    Stops when one EM step changes the objective by less than ``tol`` (converged) or
    after ``max_iter`` E steps.  Returns a :class:`PointEMRun` whose ``theta`` is the
    last point evaluated, so that ``objective`` is its objective.

    With ``space`` (the model's ParamSpace) every two EM steps are extrapolated in the
    unconstrained coordinates by SQUAREM (Varadhan & Roland 2008, step length
    ``alpha = -|r| / |v|``); the extrapolated point is kept only if its objective is at
    least that of the plain EM step, else the run continues from the plain EM step,
    so the objectives of the points the run continues from never decrease.  ``trace``
    (a list) receives the objective of every such point.
    """
    max_iter = int(max_iter)
    n = 0
    obj, stats = evaluate(theta)
    n += 1
    while True:
        if trace is not None:
            trace.append(float(obj))
        if not np.isfinite(obj):
            return PointEMRun(theta, float(obj), n, False)
        if abs(obj - prev) < tol:
            return PointEMRun(theta, float(obj), n, True)
        if n >= max_iter:
            return PointEMRun(theta, float(obj), n, False)
        theta1 = m_step(stats, theta)
        obj1, stats1 = evaluate(theta1)
        n += 1
        if space is None or not np.isfinite(obj1) or abs(obj1 - obj) < tol or n >= max_iter:
            theta, obj, stats, prev = theta1, obj1, stats1, obj
            continue
        theta2 = m_step(stats1, theta1)
        jump = _squarem_point(space, theta, theta1, theta2)
        if jump is not None:
            obj_j, stats_j = evaluate(jump)
            n += 1
            if np.isfinite(obj_j) and obj_j >= obj1:
                theta, obj, stats, prev = jump, obj_j, stats_j, -np.inf  # judged by the next EM step
                continue
            if n >= max_iter:  # the rejected jump used the last E step
                return PointEMRun(theta1, float(obj1), n, False)
        obj2, stats2 = evaluate(theta2)
        n += 1
        theta, obj, stats, prev = theta2, obj2, stats2, obj1


def _squarem_point(space, theta0, theta1, theta2):
    """``phi0 - 2 alpha r + alpha^2 v`` with ``r = phi1 - phi0``, ``v = phi2 - 2 phi1 + phi0``
    and ``alpha = min(-1, -|r| / |v|)`` (``alpha = -1`` gives ``phi2``), or None when the
    extrapolation is not defined (non-finite coordinates, e.g. a probability of zero)."""
    phi0, phi1, phi2 = (space.to_unconstrained(t)[0] for t in (theta0, theta1, theta2))
    r = phi1 - phi0
    v = phi2 - phi1 - r
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(v))):
        return None
    nv = float(np.linalg.norm(v))
    if nv == 0.0:
        return None
    alpha = min(-1.0, -float(np.linalg.norm(r)) / nv)
    if alpha == -1.0:
        return None
    phi = phi0 - 2.0 * alpha * r + alpha * alpha * v
    with np.errstate(all="ignore"):
        theta, _ = space.from_unconstrained(phi[None])
    if not all(np.all(np.isfinite(b)) for b in theta.values()):
        return None
    return theta


def posterior_then_draws(first, far):
    """``starts(i)`` for :func:`best_point_em`: ``first()`` (the fitted posterior's point)
    for ``i = 0``, then ``far()`` (e.g. a prior draw).  The MAP need not lie in VB's
    basin: under sparse Dirichlet priors VB's preference for well-supported states and the
    MAP's preference for sharp ones part ways (on 30k characters of text with K = 8 a
    prior draw beat the posterior's point by 65 nats of objective), while draws from
    q(theta) climb back to the posterior's point."""

    def starts(i):
        return first() if i == 0 else far()

    return starts


def best_point_em(starts, evaluate, m_step, *, n_init, max_iter, tol, owner,
                  restart_iter=None, polish=None, space=None, finish_screened=True,
                  draws_per_init=1, min_screen_iter=None, progress=None):
    """The best of ``n_init`` EM runs.

    Parameters
    ----------
    starts : callable
        ``starts(i) -> theta``: the posterior-mode start for ``i = 0``, seeded draws after.
    evaluate, m_step : callables
        As in :func:`em_climb`.
    n_init, max_iter, tol : int, int, float
        Number of runs, E-step cap of a run, tolerance on the change of the objective.
    owner : str
        Named in the warning (the model's class).
    restart_iter : int or None
        E-step budget of the screening phase of every run after the first; None:
        as many E steps as the first run took divided by ``draws_per_init`` (at least
        20 when ``draws_per_init`` is 1, else at least 5).
    polish : callable or None
        ``polish(run) -> PointEMRun`` applied to every run not screened out (e.g. a
        quasi-Newton finish of a slowly converging EM).
    space : ParamSpace or None
        Enables the SQUAREM extrapolation of :func:`em_climb`.
    finish_screened : bool, default True
        While the first run is still the best, give the highest of the screened-out
        restarts another budget of the first run's E steps (at least a screening
        budget) and run it on to convergence if it gets ahead of the best run (one more
        run at most), so that a restart heading for a better optimum that it had not
        yet reached within its screening budget is not lost.  Once a restart has got
        ahead of the first run within its screening budget, the screening has shown
        that it reaches a better basin and no screened-out restart is finished.
    draws_per_init : int, default 1
        Every run after the first is replaced by this many seeded draws, each screened
        with a budget that much shorter: the screening costs the same, but more basins
        are tried (a short run already tells a draw heading for a better optimum from
        the rest, and the best of them is finished).
    min_screen_iter : int or None, default None
        With ``restart_iter`` None: every run after the first gets a screening budget of
        as many E steps as the first run took, at least ``min_screen_iter``, shared
        among as many draws (at most ``draws_per_init``) as give each draw at least
        ``min_screen_iter`` E steps.  The restarts then cost what the first run cost
        when EM from the fitted posterior converges in a few steps, instead of a fixed
        floor.  None: the floors above (20 E steps per run, 5 per draw).
    progress : callable or None
        ``progress(done, total, text)`` after every run (progress lines of a long point
        estimate).

    Returns
    -------
    PointEMRun
        The run with the highest objective.  A ``ConvergenceWarning`` is raised when it
        hit ``max_iter``.
    """
    best = None
    first_run = None  # the run from starts(0), VB's basin
    screened = None  # the highest screened-out restart, still climbing
    screen_budget = 0
    n_steps = 0

    def finish(run, budget=None):
        cap = max(1, max_iter - run.n_iter)
        more = em_climb(run.theta, evaluate, m_step, cap if budget is None else min(budget, cap),
                        tol, space=space)
        return PointEMRun(more.theta, more.objective, run.n_iter + more.n_iter, more.converged)

    def consider(run):
        nonlocal best
        if polish is not None and run.converged is not None and np.isfinite(run.objective):
            run = polish(run)
        if np.isfinite(run.objective) and (best is None or run.objective > best.objective):
            best = run
        return run

    draws_per_init = max(1, int(draws_per_init))
    n_restarts = max(1, int(n_init)) - 1
    n_runs = 1 + n_restarts * draws_per_init
    per_draw = None  # the screening budget of a draw when set from min_screen_iter
    i = -1
    while i + 1 < n_runs:
        i += 1
        theta = starts(i)
        if i == 0 or best is None:
            run = em_climb(theta, evaluate, m_step, max_iter, tol, space=space)
        else:
            budget = screen_budget = (
                restart_iter if restart_iter is not None
                else per_draw if per_draw is not None
                else max(20, best_first_iter) if draws_per_init == 1
                else max(5, -(-best_first_iter // draws_per_init)))
            run = em_climb(theta, evaluate, m_step, min(budget, max_iter), tol, space=space)
            if not run.converged and np.isfinite(run.objective) and run.objective > best.objective:
                run = finish(run)  # ahead of the best run: worth finishing
            elif not run.converged:
                run.converged = None  # screened out, not run to convergence
                if np.isfinite(run.objective) and (screened is None
                                                   or run.objective > screened.objective):
                    screened = run
        n_steps += run.n_iter
        run = consider(run)
        if i == 0:
            first_run = run
            best_first_iter = run.n_iter
            if min_screen_iter is not None and restart_iter is None:
                per_run = max(int(min_screen_iter), best_first_iter)
                draws = min(draws_per_init, max(1, per_run // int(min_screen_iter)))
                per_draw = -(-per_run // draws)
                n_runs = 1 + n_restarts * draws
        if progress is not None:
            progress(i + 1, n_runs, f"{n_steps} E steps, best objective "
                     f"{best.objective if best is not None else float('nan'):.10g}")
    if (screened is not None and finish_screened and best is not None and screened is not best
            and best is first_run):
        # A restart still climbing when its budget ran out may end above the best run:
        # the MAP need not lie in VB's basin (see posterior_then_draws), and a draw far
        # from it climbs slowly at first.  While no restart has got ahead of the first
        # run (VB's basin), the highest such restart is run to convergence if, within
        # another budget of the first run's E steps (at least a screening budget), it
        # gets ahead of the best run: one more run at most, whatever n_init.  A restart
        # that got ahead within its screening budget has already found a better basin:
        # the extra budget (as much as the first run again) is then not spent.
        run = finish(screened, max(best_first_iter, screen_budget))
        if not run.converged and np.isfinite(run.objective) and run.objective > best.objective:
            run = finish(run)
        elif not run.converged:
            run.converged = None
        n_steps += run.n_iter - screened.n_iter
        consider(run)
    if best is None:
        raise RuntimeError(f"{owner}.fit_point: EM failed from every start.")
    best.n_iter = n_steps
    if best.converged is False:
        warn_at_caller(
            f"{owner}.fit_point: EM for the point estimate did not converge within "
            f"max_iter={int(max_iter)} iterations (tol={tol:.3g} nats on the objective); "
            "the score is computed at the last iterate.", ConvergenceWarning)
    return best
