"""Sequential Monte Carlo over the data ("particle learning"), and the pieces it shares
with the other sequential estimators.

The targets are the posteriors given the first t cases (in a fixed random order),
``f_t(theta) = p(theta) prod_{i <= t} p(y_i | theta)``, with the latents of each case
summed or integrated out exactly (the posterior particle filter of Grosse, Ghahramani &
Adams 2015, §3.4, eqs. 18-20).  Particles start from the prior; adding case t multiplies
each weight by ``p(y_t | theta)``; when the effective sample size falls below
``ess_threshold`` of the particles they are resampled (systematic resampling) and the
mean weight is banked; then every particle makes ``n_steps`` moves that leave
``f_t`` invariant.  The product of the banked mean weights is unbiased for p(X), so
``log_evidence`` is a stochastic lower bound; with one particle this is AIS along the
data path (§3.4.1).

Each step needs the likelihood of the entering case only: models that can evaluate a
subset of cases offer ``log_likelihood_of_cases(params, X, cases)`` ((C, len(cases)),
used by :func:`case_log_likelihood`), so adding a case costs one case, not n; the others
fall back to the columns of ``log_likelihood_per_case``.

Moves (``move=``): ``"gibbs"`` (data augmentation, for models with exact conditionals
``sample_latents`` / ``sample_params``: draw the latents of the included cases given
theta, then theta given them; the latents of the other cases are irrelevant), or
``"kernel"`` (the model's annealing kernel, as used by AIS, at inverse temperature 1 on
the included cases); ``"auto"`` takes the first available.

With ``collapse=True`` the parameters are integrated out as well (the Rao-Blackwellised
particle filter of Grosse et al. §3.4, eqs. 21-22, the variant of their experiments,
with one particle): a particle is the latents of the cases entered so far; adding case t
multiplies its weight by ``p(y_t | z_{1:t-1}, y_{1:t-1})`` and draws ``z_t`` from its
posterior given them, and the moves are the model's collapsed Gibbs sweeps over those
latents (``move="auto"``) or data augmentation (``"gibbs"``: parameters given the
latents, then the latents given the parameters).  Models offer it through
``collapsed_add_case`` and ``collapsed_sweep`` (the clustering and binary-attribute
models of :mod:`sklearn_vb.bdmc_models`); ``collapse="auto"`` collapses when the model
does.
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.mcmc_moves import ChainState, Target, make_kernel
from .._core.evidence.params import take
from .._core.evidence.protocols import has, require
from .._core.kernels.sampling import systematic_resample
from .._core.numerics import as_seed_sequence, importance_effective_sample_size, interval_stderr, log_mean_exp, \
    spawn_generators
from ._base import Scorer, prepare_data, resolve_model
from ._reliability import warn_unreliable
from ._result import ScoreResult

__all__ = ["SMCScore", "PosteriorMove", "CaseWeightedTarget", "case_order", "pool_runs",
           "case_log_likelihood"]


def case_log_likelihood(model, params, X, cases):
    """``ln p(y_i | theta)`` of the cases ``cases`` only: (C, len(cases)).  The model's
    ``log_likelihood_of_cases`` when it has one (the cost of those cases alone), else
    the columns of ``log_likelihood_per_case`` (every case evaluated)."""
    cases = np.atleast_1d(np.asarray(cases, dtype=np.int64))
    if has(model, "log_likelihood_of_cases"):
        return np.asarray(model.log_likelihood_of_cases(params, X, cases), dtype=float)
    return np.asarray(model.log_likelihood_per_case(params, X), dtype=float)[:, cases]


class CaseWeightedTarget(Target):
    """``p(theta) prod_i p(y_i | theta)^{w_i}`` for case weights ``w`` (0 or 1 per case),
    in the form the annealing kernels read at inverse temperature 1."""

    def __init__(self, model, X, case_weights):
        super().__init__(model, X, "prior", None)
        self.case_weights = np.asarray(case_weights, dtype=float)
        self.n = max(1, int(round(self.case_weights.sum())))

    def state(self, params):
        lp = np.asarray(self.model.log_prior(params), dtype=float)
        included = np.flatnonzero(self.case_weights > 0)
        per = case_log_likelihood(self.model, params, self.X, included)
        ll = per @ self.case_weights[included]
        return ChainState(params, lp, ll, None)


class PosteriorMove:
    """Moves of a particle batch that leave ``p(theta | cases with weight 1)`` invariant."""

    def __init__(self, model, X, kind="auto", n_steps=1, rw_scale=1.0):
        gibbs_ok = has(model, "sample_latents") and has(model, "sample_params")
        if kind == "auto":
            kind = "gibbs" if gibbs_ok else "kernel"
        if kind == "gibbs" and not gibbs_ok:
            raise NotImplementedError("move='gibbs' needs sample_latents and sample_params")
        if kind not in ("gibbs", "kernel"):
            raise ValueError(f"move must be 'auto', 'gibbs' or 'kernel', got {kind!r}.")
        self.model, self.X, self.kind, self.n_steps = model, X, kind, int(n_steps)
        if self.n_steps < 0:
            raise ValueError(f"n_steps must be >= 0, got {n_steps}.")
        self.kernel = make_kernel("auto", model, rw_scale, X=X) if kind == "kernel" else None

    def __call__(self, params, case_weights, rng, rngs):
        """``n_steps`` moves; returns (params, mean acceptance)."""
        w = np.asarray(case_weights, dtype=float)
        if self.kind == "gibbs":
            for _ in range(self.n_steps):
                Z = self.model.sample_latents(params, self.X, rng, w)
                params = self.model.sample_params(Z, self.X, rng, w)
            return params, 1.0
        target = CaseWeightedTarget(self.model, self.X, w)
        state = target.state(params)
        acc = []
        for _ in range(self.n_steps):
            state, a = self.kernel.transition(state, target, 1.0, rngs)
            acc.append(a)
        return state.params, float(np.mean(acc)) if acc else 1.0


def case_order(n, order, rng):
    """The order in which cases enter: "random" (a permutation), "given" or an array."""
    if isinstance(order, str):
        if order == "random":
            return rng.permutation(n)
        if order == "given":
            return np.arange(n)
        raise ValueError(f"order must be 'random', 'given' or a permutation, got {order!r}.")
    o = np.asarray(order, dtype=int)
    if sorted(o.tolist()) != list(range(n)):
        raise ValueError("order must be a permutation of the cases.")
    return o


def _resample(params, log_w, rng):
    idx = systematic_resample(np.ascontiguousarray(log_w, dtype=float), float(rng.random()))
    return take(params, idx)


def run_smc(model, X, mover, n_particles, order, seed, ess_threshold=0.5):
    """One SMC run; returns (log Z estimate, number of resampling steps, mean acceptance)."""
    rng = np.random.default_rng(seed)
    rngs = spawn_generators(rng, n_particles)
    n = model.n_cases(X)
    params = model.sample_prior(rng, n_particles)
    w = np.zeros(n)
    log_w = np.zeros(n_particles)
    log_z, n_resampled, accs = 0.0, 0, []
    for step, t in enumerate(order):
        log_w = log_w + case_log_likelihood(model, params, X, t)[:, 0]
        w[t] = 1.0
        if step == len(order) - 1:
            break
        if importance_effective_sample_size(log_w) < ess_threshold * n_particles:
            log_z += log_mean_exp(log_w)
            params = _resample(params, log_w, rng)
            log_w = np.zeros(n_particles)
            n_resampled += 1
        params, a = mover(params, w, rng, rngs)
        accs.append(a)
    return log_z + log_mean_exp(log_w), n_resampled, float(np.mean(accs)) if accs else 1.0


COLLAPSED_NEEDS = ("collapsed_add_case", "collapsed_sweep", "sample_latents_prior")


def run_smc_collapsed(model, X, move, n_steps, n_particles, order, seed, ess_threshold=0.5):
    """One SMC run over the latents with the parameters integrated out; returns (log Z
    estimate, number of resampling steps).  ``move``: "auto" (collapsed Gibbs sweeps) or
    "gibbs" (data augmentation through the parameters)."""
    rng = np.random.default_rng(seed)
    n = model.n_cases(X)
    # the latents of cases not yet entered are never read: any start will do
    Z = model.sample_latents_prior(model.sample_prior(rng, n_particles), n, rng)
    included = np.zeros(n)
    log_w = np.zeros(n_particles)
    log_z, n_resampled = 0.0, 0
    for step, t in enumerate(order):
        Z, inc = model.collapsed_add_case(Z, X, included, t, rng)
        log_w = log_w + inc
        included[t] = 1.0
        if step == len(order) - 1:
            break
        if importance_effective_sample_size(log_w) < ess_threshold * n_particles:
            log_z += log_mean_exp(log_w)
            Z = np.asarray(Z)[systematic_resample(np.ascontiguousarray(log_w, dtype=float),
                                                  float(rng.random()))]
            log_w = np.zeros(n_particles)
            n_resampled += 1
        for _ in range(n_steps):
            if move == "gibbs":
                params = model.sample_params(Z, X, rng, included)
                Z = model.sample_latents(params, X, rng, included)
            else:
                Z = model.collapsed_sweep(Z, X, included, rng)
    return log_z + log_mean_exp(log_w), n_resampled


def _collapses(model, collapse):
    if collapse is False or collapse is None:
        return False
    if collapse == "auto":
        return all(has(model, m) for m in COLLAPSED_NEEDS)
    if collapse is True:
        require(model, "smc with collapse=True", *COLLAPSED_NEEDS)
        return True
    raise ValueError(f"collapse must be True, False or 'auto', got {collapse!r}.")


def pool_runs(estimates, inverse=False):
    """Pooled estimate of independent runs of an estimator unbiased for Z (mean of the
    Z estimates) or for 1/Z (``inverse``: harmonic mean), with the between-run standard
    error of the pooled log (None for one run), widened for the few degrees of freedom
    of a spread of a handful of runs (:func:`~._numerics.interval_stderr`)."""
    e = np.asarray(estimates, dtype=float)
    est = -log_mean_exp(-e) if inverse else log_mean_exp(e)
    return float(est), interval_stderr(e)


class SequentialScorer(Scorer):
    """Shared option handling of the sequential estimators."""

    options = {"n_particles": 16, "n_steps": 1, "ess_threshold": 0.5, "order": "random",
               "move": "auto", "rw_scale": 1.0, "n_runs": 4}

    def _setup(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, "log_prior", "sample_prior", "log_likelihood_per_case",
                "n_cases")
        data = prepare_data(model, X, fit_params)
        if int(opts["n_particles"]) < 1 or int(opts["n_runs"]) < 1:
            raise ValueError("n_particles and n_runs must be >= 1.")
        if not 0 <= float(opts["ess_threshold"]) <= 1:
            raise ValueError("ess_threshold must lie in [0, 1].")
        mover = PosteriorMove(model, data, opts["move"], opts["n_steps"], opts["rw_scale"])
        seeds = as_seed_sequence(opts["random_state"]).spawn(int(opts["n_runs"]) + 1)
        return model, data, mover, seeds


class SMCScore(SequentialScorer):
    """Sequential Monte Carlo over the cases (particle learning); a stochastic lower bound.

    What is unbiased: each run's product of mean weights is unbiased for p(X) (del Moral,
    Doucet & Jasra 2006) for any move that leaves the current partial posterior
    invariant, so the mean over ``n_runs`` runs is too and ``log_evidence`` is a
    stochastic lower bound.  Options: ``n_particles`` (16; Grosse et al. 2015 used one
    particle and varied ``n_steps``), ``n_steps`` moves per case, ``collapse`` (False;
    True: the parameters integrated out, the particles are the latents of the cases
    entered, as in Grosse et al.'s experiments; "auto": when the model offers it),
    ``ess_threshold``
    (resample when the effective sample size drops below this fraction of the
    particles), ``order`` of the cases ("random", "given" or a permutation), ``move``
    ("auto", "gibbs", "kernel"), ``rw_scale`` (kernel moves), ``n_runs``.  Needs
    ``log_likelihood_per_case``: models with independent cases (the three models of
    :mod:`sklearn_vb.bdmc_models`, VBDiscreteDAG, VBMixtureFactorAnalysers).  Error bars:
    the spread of the ``n_runs`` run estimates widened for its ``n_runs - 1`` degrees of
    freedom (``+- 2 stderr`` then covers like a normal ``+- 2 sigma``); a single run has
    none and is flagged (``diagnostics["stderr_reliable"]`` False).  Cost:
    ``n_runs n`` per-case likelihood evaluations of every particle plus
    ``n_runs n n_steps`` moves.
    """

    name = "smc"
    options = dict(SequentialScorer.options, collapse=False)

    def _score(self, estimator, X, fit_params, opts):
        model, data, mover, seeds = self._setup(estimator, X, fit_params, opts)
        collapsed = _collapses(model, opts["collapse"])
        if collapsed and mover.kind == "kernel":
            raise ValueError("collapse=True moves the latents: move must be 'auto' "
                             "(collapsed Gibbs) or 'gibbs' (data augmentation).")
        move = opts["move"] if collapsed else mover.kind
        n = model.n_cases(data)
        runs, resampled, acc = [], [], []
        for r in range(int(opts["n_runs"])):
            order = case_order(n, opts["order"], np.random.default_rng(seeds[r]))
            if collapsed:
                est, nr = run_smc_collapsed(model, data, move, int(opts["n_steps"]),
                                            int(opts["n_particles"]), order,
                                            seeds[r].spawn(1)[0], float(opts["ess_threshold"]))
                a = 1.0
            else:
                est, nr, a = run_smc(model, data, mover, int(opts["n_particles"]), order,
                                     seeds[r].spawn(1)[0], float(opts["ess_threshold"]))
            runs.append(est)
            resampled.append(nr)
            acc.append(a)
            if opts["verbose"]:
                print(f"[smc] run {r + 1}/{opts['n_runs']}: {est:.4f}", flush=True)
        est, se = pool_runs(runs)
        reasons = [] if se is not None else ["a single run: no between-run spread to "
                                             "measure the error"]
        diag = {"run_estimates": runs, "n_resampled": resampled, "acceptance": acc,
                "move": ("collapsed_gibbs" if move == "auto" else move) if collapsed
                else mover.kind, "collapsed": collapsed,
                "stderr_reliable": not reasons, "reliable": not reasons,
                "unreliable_reasons": reasons}
        warn_unreliable(self.name, reasons, "Increase n_runs.")
        if hasattr(estimator, "lower_bound_"):
            diag["vb_gap"] = est - float(estimator.lower_bound_)
        return ScoreResult(self.name, est, "stochastic_lower",
                           log_alias_correction=self._log_alias(model, opts), stderr=se,
                           diagnostics=diag)
