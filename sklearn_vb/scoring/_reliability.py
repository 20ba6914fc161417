"""Is a Monte Carlo evidence estimate trustworthy?

The sampling scorers report a standard error from the spread of independent runs and
check it against what the weights and the known bounds say: a tiny effective sample size,
runs that disagree beyond their own error bars, or an estimate below a proven lower
bound (the VB bound) all mean the error bar understates the real error, which for these
estimators is usually a large downward bias (Grosse et al. 2015; Beal 2003 §6.5).  Each
such finding is recorded and raised as an :class:`UnreliableEstimateWarning`.
"""

from __future__ import annotations


import numpy as np
from scipy.stats import chi2

from ._result import UnreliableEstimateWarning
from .._core.warn import warn_at_caller

__all__ = ["runs_disagree", "reliability_reasons", "warn_unreliable", "known_lower_bound",
           "LOWER_BOUND_Z"]


def known_lower_bound(estimator, lower_bound="vb"):
    """The proven lower bound on ln p(X) to check an estimate against, or None.

    ``"vb"``: the fitted estimator's ``lower_bound_`` (valid when X is the data it was
    fitted on); a number: that value (e.g. a Cheeseman-Stutz score, which Beal 2003
    Theorem 6.1 shows is a lower bound); None: no check.
    """
    if lower_bound is None:
        return None
    if isinstance(lower_bound, str):
        if lower_bound != "vb":
            raise ValueError(f"lower_bound must be 'vb', a number or None, got {lower_bound!r}.")
        value = getattr(estimator, "lower_bound_", None)
        return None if value is None else float(value)
    value = float(lower_bound)
    if np.isnan(value):
        raise ValueError("lower_bound must not be NaN.")
    return value


def runs_disagree(estimates, stderrs, level=0.01):
    """True when independent run estimates scatter more than their own standard errors
    allow: the chi-square statistic ``sum_r (e_r - e_bar)^2 / s_r^2`` (``e_bar`` the
    precision-weighted mean) exceeds its ``1 - level`` quantile with ``R - 1`` degrees of
    freedom.  A run whose own standard error is 0 or not finite cannot vouch for itself
    and makes the runs disagree whenever the estimates differ."""
    e = np.asarray(estimates, dtype=float).ravel()
    s = np.asarray(stderrs, dtype=float).ravel()
    if e.size < 2:
        return False
    if not np.all(np.isfinite(e)):
        return True
    if np.ptp(e) <= 1e-9 * max(1.0, float(np.max(np.abs(e)))):  # equal up to rounding
        return False
    if not np.all(np.isfinite(s) & (s > 0)):
        return True
    w = 1.0 / s**2
    mean = np.sum(w * e) / np.sum(w)
    stat = float(np.sum(w * (e - mean) ** 2))
    return bool(stat > chi2.ppf(1.0 - level, e.size - 1))


#: a stochastic lower bound lying more than this many standard errors below a proven
#: lower bound (the VB bound) is flagged: its schedule or sample size is inadequate
LOWER_BOUND_Z = 2.0


def reliability_reasons(ess, min_ess, run_estimates=None, run_stderrs=None, estimate=None,
                        stderr=None, lower_bound=None, upper_bound_estimate=False):
    """Why an importance-weighted evidence estimate cannot be trusted (empty if it can).

    Checks, in order: the effective sample size of the pooled weights is below
    ``min_ess``; fewer than two independent runs (no between-run spread); the runs
    disagree beyond their own error bars (:func:`runs_disagree`); the estimate lies more
    than ``LOWER_BOUND_Z`` standard errors below ``lower_bound``, a proven lower bound on
    ln Z (for a stochastic upper bound, ``upper_bound_estimate=True``, the same test
    applies: it must not fall below a lower bound either).
    """
    reasons = []
    if not ess >= min_ess:
        reasons.append(f"effective sample size {ess:.3g} < {min_ess:.3g}")
    if run_estimates is not None:
        if len(run_estimates) < 2:
            reasons.append("a single run: no between-run spread to measure the error")
        elif runs_disagree(run_estimates, run_stderrs):
            spread = float(np.ptp(np.asarray(run_estimates, dtype=float)))
            reasons.append(f"independent runs disagree beyond their error bars "
                           f"(range {spread:.3g} nats)")
    if lower_bound is not None and estimate is not None and np.isfinite(lower_bound):
        se = stderr if stderr is not None and np.isfinite(stderr) else 0.0
        if estimate < lower_bound - LOWER_BOUND_Z * se:
            reasons.append(f"estimate {estimate:.4f} lies {lower_bound - estimate:.3g} nats below "
                           f"the lower bound {lower_bound:.4f} (more than {LOWER_BOUND_Z:g} "
                           f"standard errors of {se:.3g})")
    return reasons


def warn_unreliable(method, reasons, advice):
    """Issue an :class:`UnreliableEstimateWarning` listing ``reasons`` and ``advice``."""
    if reasons:
        warn_at_caller(f"{method} evidence estimate is unreliable: {'; '.join(reasons)}. "
                      f"{advice}", UnreliableEstimateWarning)


