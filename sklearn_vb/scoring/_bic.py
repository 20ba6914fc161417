"""BIC and BICp."""

from __future__ import annotations

import numpy as np

from .._core.evidence.protocols import has, require
from .._core.numerics import spawn_generators
from ._base import Scorer, prepare_data, resolve_model
from ._dimension import effective_dimension
from ._result import ScoreResult

__all__ = ["BICScore", "BICMAPScore", "BICpScore", "model_dimension"]


def model_dimension(model, X, theta, dimension, rng, R=100, scorer="bic", kind="incomplete"):
    if dimension == "count":
        require(model, scorer, "n_parameters")
        return int(model.n_parameters())
    if dimension == "effective":
        if has(model, "effective_dimension"):
            return int(model.effective_dimension(X, rng, kind=kind, R=R))
        return effective_dimension(model, X, theta, rng, kind=kind, R=R)
    raise ValueError(f"dimension must be 'count' or 'effective', got {dimension!r}.")


class BICScore(Scorer):
    """``ln p(X) ~ l(theta_hat) - (d/2) ln n`` (sklearn's ``bic`` is ``-2`` times this).

    The textbook (Schwarz) BIC: ``theta_hat`` is the maximum-likelihood point
    (``estimate="ml"``, the default, for every family).  With no hidden variables EM
    reaches it in one step (a fully observed discrete DAG: the normalised family counts,
    so the value is ``sum_j sum_{l,k} N_jlk ln(N_jlk / N_jl) - (d/2) ln n`` exactly); with
    hidden variables it is the best EM optimum found.  ``estimate="map"`` evaluates the
    likelihood at the MAP point instead (Beal 2003 keeps the MAP for BIC, and
    :class:`BICMAPScore`, ``"bic_map"``, is that variant; in the default softmax basis a
    uniform Dirichlet prior makes it add-one smoothing, which lowers ``l`` by a
    data-dependent amount and so penalises structures with many sparse rows more than
    BIC does).

    With a ScoringModel: ``theta_hat = fit_point(kind=estimate)``, ``d`` from
    ``n_parameters()`` (``dimension="count"``) or Algorithm 6.2 (``"effective"``) and
    ``n = n_cases(X)``.  Without one, the estimator's own ``bic(X, **fit_params)`` is
    converted: ``-bic / 2`` (at the estimator's fitted parameters).  No bound: the error
    is O(1) and does not shrink with n; BIC over-penalises complex structures on small
    data sets.

    ``theta_hat`` comes from EM started at the fitted q(theta)'s point plus
    ``n_init - 1`` seeded, screened restarts (the model's ``fit_point``); the score is
    seeded by the estimator's ``random_state`` when ``random_state`` is None, so a
    seeded estimator gets the same value on every call.  A ``ConvergenceWarning``
    naming the scorer says when the EM stopped at its iteration cap.

    Cost: the EM is most of it, a few fits of the estimator (the point estimate can lie
    in another basin than VB's, which restarts from prior draws find; the restarts
    screened out are not run on once one of them has beaten the run from VB's point);
    ``benchmarks/bench_score_cost.py`` measures it in fits for every family
    (``benchmarks/results/score_cost.md``).  The
    EM's result is shared with the other scorers of the same fitted estimator, data,
    seed and point estimate (BICp, BIC-MAP, MAP, CS, CS-dagger, Laplace:
    :mod:`~sklearn_vb.scoring._point_cache`), so ranking one model by several of them
    pays for it once per kind of point.
    """

    name = "bic"
    with_prior = False
    options = {"estimate": "ml", "dimension": "count", "n_init": 3, "R": 100}

    def _score(self, estimator, X, fit_params, opts):
        if opts["estimate"] not in ("map", "ml"):
            raise ValueError(f"estimate must be 'map' or 'ml', got {opts['estimate']!r}.")
        model = resolve_model(estimator, self.name, required=False)
        if model is None and getattr(estimator, "transition_inputs", None) is not None:
            # the estimator's own bic is at its posterior mean, not at the ML point the
            # score means: not comparable with the scores of models without inputs
            resolve_model(estimator, self.name, required=True)  # raises with the reason
        if model is None:
            if self.with_prior or not has(estimator, "bic"):
                raise NotImplementedError(f"{self.name} needs scoring_model")
            if opts["alias_correction"]:
                raise NotImplementedError(f"{self.name} needs n_aliases")
            value = -0.5 * float(estimator.bic(X, **fit_params))
            return ScoreResult(
                method=self.name, log_evidence=value, bound="approx",
                diagnostics={"source": "estimator.bic"},
            )
        require(model, self.name, "fit_point", "log_likelihood", "n_cases")
        if self.with_prior:
            require(model, self.name, "log_prior")
        log_alias = self._log_alias(model, opts)
        data = prepare_data(model, X, fit_params)
        rng = spawn_generators(opts["random_state"], 1)[0]
        point = {"basis": opts["basis"]} if "basis" in opts else {}
        theta = self._fit_point(model, data, estimator, kind=opts["estimate"], rng=rng,
                                n_init=opts["n_init"], verbose=opts["verbose"], **point)
        loglik = float(model.log_likelihood(theta, data)[0])
        d = model_dimension(model, data, theta, opts["dimension"], rng, R=opts["R"], scorer=self.name)
        n = int(model.n_cases(data))
        value = loglik - 0.5 * d * np.log(n)
        diagnostics = {"loglik": loglik, "d": d, "n": n, "theta": theta}
        if self.with_prior:
            lp = float(model.log_prior(theta)[0])
            value += lp
            diagnostics["log_prior"] = lp
        return ScoreResult(
            method=self.name, log_evidence=float(value), bound="approx",
            log_alias_correction=log_alias, diagnostics=diagnostics,
        )


class BICMAPScore(BICScore):
    """BIC at the MAP point: ``l(theta_MAP) - (d/2) ln n`` (Beal 2003, eq. 6.26, which
    keeps the MAP estimate for BIC; the "BIC-MAP" of Beal & Ghahramani's comparisons,
    beside the "BIC-ML" that is ``"bic"``).  ``basis`` is the MAP basis as for the
    ``"map"`` score (``"softmax"``: ``theta ∝ lambda + N``; ``"natural"``:
    ``theta ∝ lambda - 1 + N``, which under a uniform Dirichlet prior is the ML point)."""

    name = "bic_map"
    options = {"estimate": "map", "basis": "softmax", "dimension": "count", "n_init": 3, "R": 100}


class BICpScore(BICScore):
    """``ln p(theta_hat) + l(theta_hat) - (d/2) ln n`` (Beal's BICp) at the MAP point
    (the prior density is part of the score, so its point is the one that maximises
    it with the likelihood: ``estimate="map"`` by default, as for ``"bic_map"``)."""

    name = "bicp"
    with_prior = True
    options = {"estimate": "map", "dimension": "count", "n_init": 3, "R": 100}
