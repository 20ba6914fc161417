"""Importance sampling from the variational posterior.

``a_m = ln p(theta_m) + l(theta_m) - ln g(theta_m)``, ``theta_m ~ g``; ``LME(a)`` is unbiased
for p(X) (a stochastic lower bound on ln p(X)); ``mean(a)`` estimates the parameter-level
bound and ``LME(a) - mean(a)`` estimates KL(g || p(theta | X)) (biased low for finite M).

Failure modes: a light-tailed proposal narrower than ``1/sqrt 2`` of the posterior in any
direction gives infinite-variance weights (VB posteriors are typically too narrow), the
weight range grows like exp(sqrt r) with dimension r, and a single q covers one alias of
a multimodal posterior.  Hence the Student-t default (``proposal="vb_t"``), restart
mixtures (``"vb_mixture"``), defensive mixtures with the prior (``"defensive"``), the
mixture of q over its relabellings (``aliases="auto"``) and the Pareto k-hat check of
the weights' tail.
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed

from .._core.base import Restart
from .._core.evidence.posteriors import MixturePosterior, PriorPosterior
from .._core.evidence.protocols import require
from .._core.numerics import (
    as_seed_sequence,
    between_run_stderr,
    delta_method_stderr,
    importance_effective_sample_size,
    log_mean_exp,
    normalised_weights,
    pareto_khat,
    pareto_khat_threshold,
)
from .._core.progress import Progress
from ._aliases import ALIAS_OPTIONS, cover_aliases
from ._base import Scorer, prepare_data, resolve_model, variational_posterior
from ._registry import scoring_model_for
from ._reliability import known_lower_bound, reliability_reasons, warn_unreliable
from ._result import ScoreResult

__all__ = ["ISScore", "importance_log_weights", "build_proposal"]

#: below this effective sample size (absolute, and as a fraction of all draws) the
#: pooled weights are carried by a handful of draws and no error bar is trustworthy
IS_MIN_ESS = 10.0
IS_MIN_ESS_FRACTION = 0.01
#: the weights are raw (not Pareto-smoothed), so their mean has a finite variance, and
#: an error bar a meaning, only for a Pareto tail shape k < 1/2 (Vehtari et al. 2024);
#: measured on tiny HMMs with exact evidences, runs with 0.5 < k-hat < 0.7 missed the
#: exact value by several of their standard errors
IS_MAX_KHAT = 0.5


def importance_log_weights(model, data, g, M, rng, batch=2000, verbose=0, label="is"):
    """``M`` draws from ``g`` and their log-weights (batched likelihood calls); with
    ``verbose`` a progress line (labelled ``label``) after batches once it runs for more
    than a few seconds."""
    progress = Progress(verbose, label, int(M))
    out = []
    left = int(M)
    while left > 0:
        m = min(batch, left)
        th = g.sample(rng, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = model.log_prior(th) + model.log_likelihood(th, data) - g.log_pdf(th)
        out.append(np.where(np.isnan(a), -np.inf, a))
        left -= m
        progress(int(M) - left)
    return np.concatenate(out)


def build_proposal(kind, q, model, estimator=None, dof=3.0, broaden=None, epsilon=0.05,
                   cover=None):
    """The proposal ``kind`` built from ``q``; ``cover`` (a function ``q -> q'``, e.g.
    the alias mixture of :func:`~sklearn_vb.scoring._aliases.cover_aliases`) is applied
    to every posterior the proposal is built from (q, or each restart's q)."""
    cover = (lambda p: p) if cover is None else cover
    if kind == "prior":
        return PriorPosterior(model)
    if q is None:
        raise NotImplementedError("is needs variational_posterior_")
    if kind == "vb":
        return cover(q)
    if kind == "vb_t":
        return cover(q).heavy_tailed(dof, broaden)
    if kind == "vb_mixture":
        restarts = getattr(estimator, "restarts_", None)
        if not restarts:
            raise NotImplementedError("is needs restarts_ (fit with keep_restarts=True)")
        comps = [cover(c) for c in restart_posteriors(estimator, model, restarts)]
        if dof is not None:
            comps = [c.heavy_tailed(dof, broaden) for c in comps]
        return MixturePosterior(comps)
    if kind == "defensive":
        if not 0 < epsilon < 1:
            raise ValueError(f"epsilon must be in (0, 1), got {epsilon}.")
        return MixturePosterior([cover(q).heavy_tailed(dof, broaden), PriorPosterior(model)],
                                [1.0 - epsilon, epsilon])
    raise ValueError(
        "proposal must be 'vb', 'vb_t', 'vb_mixture', 'defensive' or 'prior', "
        f"got {kind!r}."
    )


def _block_shapes(model):
    return [(b.name, tuple(b.shape)) for b in model.param_space.blocks]


def restart_posteriors(estimator, model, restarts):
    """q(theta) of every restart in ``restarts`` (the fitted ``restarts_``), for the
    restart mixture of Beal (2003), section 4.7.

    Entries are :class:`~sklearn_vb.base.Restart` records of a package estimator (the
    restart's q(theta) is read from its scoring model, built from the estimator holding
    that restart) or ``(bound, q)`` pairs.  Restarts whose parameters have other shapes
    than ``model``'s (a birth/death search that ended with another number of
    components, say) cannot be proposals for it and are left out.
    """
    target = _block_shapes(model)
    comps = []
    for r in restarts:
        if not isinstance(r, Restart):
            comps.append(r[1])
            continue
        other = scoring_model_for(estimator.restart_estimator(r))
        if _block_shapes(other) == target:
            comps.append(other.variational_posterior())
    if not comps:
        raise NotImplementedError("no restart in restarts_ has the parameter shapes of the "
                                  "kept fit")
    return comps


class ISScore(Scorer):
    """Importance sampling with proposals built from q(theta).

    What is unbiased: ``mean(exp(a))`` over the draws is unbiased for Z = p(X) whatever
    the proposal (with support covering the posterior's), so ``log_evidence = LME(a)`` is
    a stochastic lower bound on ln Z.

    Options: ``proposal`` ("vb_t" default, "vb", "vb_mixture", "defensive", "prior"),
    ``dof`` (Student-t degrees of freedom), ``broaden`` (Dirichlet/Gamma concentration
    factor in (0, 1]), ``epsilon`` (defensive weight of the prior), ``n_samples`` (M per
    run), ``n_runs`` (R), ``posterior`` (an explicit proposal base q, used as it is),
    ``lower_bound`` ("vb": the estimator's ``lower_bound_``, valid when X is its training
    data; a number; None), ``aliases`` ("auto": every proposal built from the fitted q,
    or from the restarts' q, is first made the equal-weight mixture of q over the
    model's relabellings, its ``alias_posterior`` (the K! state permutations of an HMM,
    the hidden-value relabellings of a DAG), so that it covers every relabelled copy of
    the posterior and the estimate is unbiased for Z itself, with an exact mixture
    density at S evaluations of q per draw; "none": q as it is) and ``max_aliases``
    (24: above it, or for models without ``alias_posterior``, q is used as it is and
    the result is flagged, since its estimate lies near ``ln Z - ln S``).  Runs go
    through joblib; each run has its own seed stream.

    Error bars: ``stderr`` is the spread of the R run estimates, ``sd / sqrt(R)``, never
    less than the pooled delta-method value.  The result is flagged
    (``diagnostics["stderr_reliable"]`` and ``["reliable"]`` False, with
    ``["unreliable_reasons"]``) and an
    :class:`~sklearn_vb.scoring.UnreliableEstimateWarning` is raised, saying why and
    what to increase, exactly when the effective sample size is below
    ``max(10, 0.01 R M)``, one draw carries more than half the weight, the Pareto
    ``k-hat`` of the largest weights exceeds ``min(1 - 1/log10(R M), 0.5)``
    (Vehtari et al. 2024: beyond 1/2 the raw weights have no finite variance, so no
    error bar computed from them means anything; ``diagnostics["pareto_khat"]``), the runs disagree beyond their error bars,
    the estimate lies more than 2 standard errors below ``lower_bound``, or the
    proposal covers one of several relabelled copies of the posterior (above).

    Cost at the defaults: ``R M = 20000`` likelihood evaluations (batched), plus as many
    prior and proposal densities; ``benchmarks/bench_score_cost.py`` measures it in fits of
    the estimator for every family (``benchmarks/results/score_cost.md``).  In high
    dimension a proposal built from q is usually far too narrow and the result is
    flagged.
    ``verbose=1`` prints progress lines per run.
    """

    name = "is"
    options = {"proposal": "vb_t", "dof": 3.0, "broaden": None, "epsilon": 0.05,
               "n_samples": 4000, "n_runs": 5, "posterior": None, "batch": 2000,
               "lower_bound": "vb", **ALIAS_OPTIONS}

    @staticmethod
    def _cover(model, opts):
        """The map applied to each posterior a proposal is built from: the alias mixture
        (``aliases="auto"``) unless the caller gave ``posterior=``."""
        if opts["posterior"] is not None:
            return None
        return lambda p: cover_aliases(model, p, opts)[0]

    def _score(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, "log_prior", "log_likelihood")
        log_alias = self._log_alias(model, opts)
        data = prepare_data(model, X, fit_params)
        q = variational_posterior(estimator, model, data, opts["posterior"])
        covered, alias_reason = q, None
        if opts["proposal"] != "prior":
            covered, alias_reason = cover_aliases(model, q, opts, opts["posterior"] is not None)
        g = build_proposal(opts["proposal"], q, model, estimator, opts["dof"], opts["broaden"],
                           opts["epsilon"], cover=self._cover(model, opts))
        R, M = int(opts["n_runs"]), int(opts["n_samples"])
        if R < 1 or M < 1:
            raise ValueError("n_runs and n_samples must be >= 1.")
        seeds = as_seed_sequence(opts["random_state"]).spawn(R)
        n_jobs = opts["n_jobs"]
        runs = Parallel(n_jobs=n_jobs if R > 1 else None)(
            delayed(importance_log_weights)(
                model, data, g, M, np.random.default_rng(s), opts["batch"], opts["verbose"],
                f"is run {r + 1}/{R}")
            for r, s in enumerate(seeds)
        )
        a = np.concatenate(runs)
        est = log_mean_exp(a)
        se_delta, _ = delta_method_stderr(a)
        per_run = [log_mean_exp(r) for r in runs]
        # each run's own error bar from the relative weight variance of all draws, scaled
        # to the run's size (steadier than each run's own estimate)
        per_run_se = [se_delta * np.sqrt(a.size / r.size) for r in runs]
        se_between = between_run_stderr(per_run)
        # the error bar is the spread of independent runs; with few runs that spread is
        # itself uncertain, so it never reports less than the pooled delta-method value
        # (which alone would collapse with the ESS)
        stderr = se_delta if se_between is None else max(se_between, se_delta)
        ess = importance_effective_sample_size(a)
        w = normalised_weights(a)
        finite = a[np.isfinite(a)]
        param_bound = float(np.mean(a)) if np.all(np.isfinite(a)) else -np.inf
        lower = known_lower_bound(estimator, opts["lower_bound"])
        reasons = reliability_reasons(ess, max(IS_MIN_ESS, IS_MIN_ESS_FRACTION * a.size), per_run,
                                      per_run_se, est, stderr, lower)
        max_w = float(np.nanmax(w))
        if max_w > 0.5:
            reasons.append(f"one draw carries {max_w:.2f} of the total weight")
        khat = pareto_khat(a)
        khat_max = pareto_khat_threshold(a.size, IS_MAX_KHAT)
        if not khat <= khat_max:
            reasons.append(f"the largest weights have Pareto k-hat {khat:.2f} > {khat_max:.2f}: "
                           "their tail is too heavy for the mean of the weights and its error "
                           "bar at this sample size")
        if alias_reason:
            reasons.append(alias_reason)
        diag = {
            "log_weights": a,
            "ess_fraction": ess / a.size,
            "max_normalised_weight": max_w,
            "kl_theta": est - param_bound,
            "param_bound": param_bound,
            "per_run_estimates": per_run,
            "per_run_stderr": per_run_se,
            "stderr_delta": se_delta,
            "stderr_between_runs": se_between,
            "stderr_reliable": not reasons,
            "reliable": not reasons,
            "unreliable_reasons": reasons,
            "n_finite": int(finite.size),
            "pareto_khat": khat,
            # relabelled copies of q in the proposal (1: q alone)
            "alias_copies": 1 if covered is q else len(covered.components),
        }
        if hasattr(estimator, "lower_bound_"):
            diag["vb_gap"] = est - float(estimator.lower_bound_)
        warn_unreliable(self.name, reasons,
                        "Increase n_samples (and n_runs), broaden the proposal (smaller dof, "
                        "broaden < 1, proposal='defensive'), or use method='ais'.")
        return ScoreResult(self.name, float(est), "stochastic_lower",
                           log_alias_correction=log_alias, stderr=float(stderr), n_eff=ess,
                           diagnostics=diag)
