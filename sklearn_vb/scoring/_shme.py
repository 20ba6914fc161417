"""The sequential harmonic mean estimator (SMC over the data run in reverse).

Grosse, Ghahramani & Adams (2015), §4.2.2, Algorithm 3: particles start at exact
posterior draws given all cases; cases are deleted one at a time (the reverse of the
order in which :mod:`._smc` adds them).  Before case t is deleted every particle makes
moves that leave ``p(theta | cases still present)`` invariant, then its log-weight gains
``-ln p(y_t | theta)``; particles are resampled in proportion to these reciprocal
weights when their effective sample size drops, and the banked means multiply to an
unbiased estimate of 1/p(X).  ``log_evidence`` is minus its log: a stochastic upper
bound (simulated data only).
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.params import take
from .._core.numerics import importance_effective_sample_size, log_mean_exp, spawn_generators
from ._ais import _exact_samples
from ._reliability import warn_unreliable
from ._result import ScoreResult
from ._smc import SequentialScorer, _resample, case_log_likelihood, case_order, pool_runs

__all__ = ["SHMEScore", "run_shme", "SHME_STDERR_REASON"]

#: why the standard error of the sequential harmonic mean estimate is always flagged: even
#: on a conjugate problem with exact posterior draws its +- 2 stderr misses the exact
#: evidence far more often than 1 in 20, from above (``benchmarks/results/calibration.md``)
SHME_STDERR_REASON = ("the reciprocal weights are heavy-tailed: the typical run lies above "
                      "ln p(X) by more than the spread of a few runs shows, so the standard "
                      "error understates the error")


def run_shme(model, X, mover, exact, order, seed, ess_threshold=0.5):
    """One reverse run from the exact draws ``exact`` (one per particle); returns
    (log 1/Z estimate, number of resampling steps)."""
    rng = np.random.default_rng(seed)
    C = next(iter(exact.values())).shape[0]
    rngs = spawn_generators(rng, C)
    n = model.n_cases(X)
    params = exact
    w = np.ones(n)
    log_u = np.zeros(C)
    log_inv, n_resampled = 0.0, 0
    for step, t in enumerate(order[::-1]):
        if step > 0:  # the first state is already an exact draw given every case
            params, _ = mover(params, w, rng, rngs)
        log_u = log_u - case_log_likelihood(model, params, X, t)[:, 0]
        w[t] = 0.0
        if step < n - 1 and importance_effective_sample_size(log_u) < ess_threshold * C:
            log_inv += log_mean_exp(log_u)
            params = _resample(params, log_u, rng)
            log_u = np.zeros(C)
            n_resampled += 1
    return log_inv + log_mean_exp(log_u), n_resampled


class SHMEScore(SequentialScorer):
    """Sequential harmonic mean estimator: reverse SMC from exact posterior draws; a
    stochastic upper bound on ln p(X).

    Only valid on simulated data with ``exact_posterior_samples`` (the parameters that
    simulated X from the prior), or on conjugate models with analytic posterior draws.
    Options as :class:`~sklearn_vb.scoring._smc.SMCScore`; particle c of every run
    starts at exact draw c mod M.  Runs are pooled by the harmonic mean of their
    estimates of Z (each run's 1/Z estimate is unbiased).  Its error is controlled by
    the "cheating" terms of Grosse et al. (2015) eq. 35: how much case t sharpens the
    posterior of the earlier cases.

    Error bars: ``stderr`` is the spread of the runs widened for its few degrees of
    freedom, but a harmonic mean of heavy-tailed reciprocal weights usually lies above
    ln p(X) by more than that spread shows, so every result is flagged
    (``diagnostics["stderr_reliable"]`` False) with an
    :class:`~sklearn_vb.scoring.UnreliableEstimateWarning`.
    """

    name = "shme"
    options = dict(SequentialScorer.options, exact_posterior_samples=None)

    def _score(self, estimator, X, fit_params, opts):
        model, data, mover, seeds = self._setup(estimator, X, fit_params, opts)
        n = model.n_cases(data)
        C = int(opts["n_particles"])
        ex, source = _exact_samples(model, data, opts, C, seeds[-1], self.name)
        M = next(iter(ex.values())).shape[0]
        ex = take(ex, np.arange(C) % M)
        runs, resampled = [], []
        for r in range(int(opts["n_runs"])):
            order = case_order(n, opts["order"], np.random.default_rng(seeds[r]))
            log_inv, nr = run_shme(model, data, mover, ex, order, seeds[r].spawn(1)[0],
                                   float(opts["ess_threshold"]))
            runs.append(-log_inv)
            resampled.append(nr)
        est, se = pool_runs(runs, inverse=True)
        reasons = [SHME_STDERR_REASON]
        diag = {"run_estimates": runs, "n_resampled": resampled, "move": mover.kind,
                "exact_samples": source, "stderr_reliable": False, "reliable": False,
                "unreliable_reasons": reasons}
        warn_unreliable(self.name, reasons, "Compare with method='smc' (a stochastic lower "
                        "bound) or bracket with method='bdmc'.")
        return ScoreResult(self.name, est, "stochastic_upper",
                           log_alias_correction=self._log_alias(model, opts), stderr=se,
                           diagnostics=diag)
