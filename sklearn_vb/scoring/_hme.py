"""The harmonic mean estimator (Newton & Raftery 1994): a negative control.

``1/p(X) = E_{p(theta | X)}[1 / p(X | theta)]``, so the harmonic mean of the likelihoods
of posterior draws is unbiased for 1/p(X) when the draws are exact, and its log a
stochastic upper bound.  It is importance sampling from the posterior to the prior, two
very different distributions, so it over-estimates ln p(X) by a wide margin even with
exact draws (Grosse, Ghahramani & Adams 2015, §3.2 and §6.4; Neal 2008 called it the
worst Monte Carlo method ever).  Shipped to reproduce that finding, not to be used.
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.params import take
from .._core.evidence.protocols import require
from .._core.numerics import as_seed_sequence, spawn_generators
from ._ais import _exact_samples
from ._base import Scorer, prepare_data, resolve_model
from ._reliability import warn_unreliable
from ._result import ScoreResult
from ._smc import PosteriorMove, pool_runs

__all__ = ["HMEScore"]


class HMEScore(Scorer):
    """Harmonic mean of the likelihood over a posterior Markov chain started at exact
    posterior draws (simulated data, as in Grosse et al. 2015): a badly biased upper
    estimate, kept as the negative control of the estimator comparisons.

    Options: ``n_samples`` draws per chain (each after ``n_steps`` posterior moves),
    ``n_chains`` (each starts at exact draw c mod M and is one run), ``move`` ("auto",
    "gibbs", "kernel"), ``rw_scale``, ``exact_posterior_samples``.  Chains are pooled by
    the harmonic mean of all likelihoods.  Every result is flagged
    (``diagnostics["stderr_reliable"]`` False) with an
    :class:`~sklearn_vb.scoring.UnreliableEstimateWarning`: its standard error, a spread
    of the chains, does not describe its error.
    """

    name = "hme"
    options = {"n_samples": 1000, "n_chains": 4, "n_steps": 1, "move": "auto", "rw_scale": 1.0,
               "exact_posterior_samples": None}

    def _score(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, "log_prior", "sample_prior", "log_likelihood")
        data = prepare_data(model, X, fit_params)
        C, S = int(opts["n_chains"]), int(opts["n_samples"])
        if C < 1 or S < 1:
            raise ValueError("n_chains and n_samples must be >= 1.")
        s_exact, s_run = as_seed_sequence(opts["random_state"]).spawn(2)
        ex, source = _exact_samples(model, data, opts, C, s_exact, self.name)
        M = next(iter(ex.values())).shape[0]
        params = take(ex, np.arange(C) % M)
        rng = np.random.default_rng(s_run)
        rngs = spawn_generators(rng, C)
        mover = PosteriorMove(model, data, opts["move"], opts["n_steps"], opts["rw_scale"])
        w = np.ones(model.n_cases(data))
        log_lik = np.empty((S, C))
        for s in range(S):
            params, _ = mover(params, w, rng, rngs)
            log_lik[s] = model.log_likelihood(params, data)
        per_chain = [pool_runs(log_lik[:, c], inverse=True)[0] for c in range(C)]
        est = pool_runs(log_lik.ravel(), inverse=True)[0]
        _, se = pool_runs(per_chain, inverse=True)
        reasons = ["the harmonic mean of likelihoods has infinite or huge variance: the "
                   "spread of the chains says nothing about its (large, upward) error"]
        warn_unreliable(self.name, reasons, "Use method='ais', 'smc' or 'bdmc'; the harmonic "
                        "mean estimator is a negative control.")
        return ScoreResult(self.name, est, "stochastic_upper",
                           log_alias_correction=self._log_alias(model, opts), stderr=se,
                           diagnostics={"run_estimates": per_chain, "move": mover.kind,
                                        "exact_samples": source,
                                        "mean_log_likelihood": float(log_lik.mean()),
                                        "stderr_reliable": False, "reliable": False,
                                        "unreliable_reasons": reasons})
