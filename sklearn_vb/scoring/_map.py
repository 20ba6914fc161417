"""The "MAP" score: the log-likelihood at the point estimate (Beal 2003, eq. 6.64)."""

from __future__ import annotations

from .._core.evidence.protocols import require
from .._core.numerics import spawn_generators
from ._base import Scorer, prepare_data, resolve_model
from ._result import ScoreResult

__all__ = ["MAPScore"]


class MAPScore(Scorer):
    """``ln p(X | theta_hat)`` at the EM point estimate (``estimate="map"`` or ``"ml"``).

    Not an approximation of the marginal likelihood: it has no penalty for the number of
    parameters, so it favours the largest structure.  At a global maximum of the
    likelihood (``estimate="ml"``, or ``"map"`` on the natural basis with a uniform prior,
    where the two coincide, Beal 2003 eq. 6.23) it is an upper bound on ln p(X | m)
    (eq. 6.63); the EM's local optimum gives no guarantee, so ``bound="approx"``.  Beal's
    Chapter 6 tables list it beside the evidence approximations.

    ``theta_hat`` comes from EM (the model's ``fit_point``) started at the fitted
    q(theta)'s point plus ``n_init - 1`` seeded, screened restarts; ``basis`` is the MAP
    basis (``"softmax"``: ``theta ∝ lambda + N``; ``"natural"``: ``theta ∝ lambda - 1 + N``).
    The alias correction is accepted but Beal applies none to this score.
    """

    name = "map"
    options = {"estimate": "map", "basis": "softmax", "n_init": 3}

    def _score(self, estimator, X, fit_params, opts):
        if opts["estimate"] not in ("map", "ml"):
            raise ValueError(f"estimate must be 'map' or 'ml', got {opts['estimate']!r}.")
        model = resolve_model(estimator, self.name)
        require(model, self.name, "fit_point", "log_likelihood")
        log_alias = self._log_alias(model, opts)
        data = prepare_data(model, X, fit_params)
        rng = spawn_generators(opts["random_state"], 1)[0]
        theta = self._fit_point(model, data, estimator, kind=opts["estimate"], basis=opts["basis"], rng=rng,
                                n_init=opts["n_init"], verbose=opts["verbose"])
        loglik = float(model.log_likelihood(theta, data)[0])
        return ScoreResult(self.name, loglik, "approx", log_alias_correction=log_alias,
                           diagnostics={"loglik": loglik, "theta": theta})
