"""Annealed importance sampling, reverse AIS and BDMC.

theta-only mode: latents are summed or integrated out exactly inside ``log_likelihood``.
Geometric path ``ln f_b = ln p(theta) + b l(theta)`` (``start="prior"``, Z_0 = 1) or
``(1 - b) ln q + b [ln p + l]`` (``start="q"``, the default when the estimator has a
variational posterior; q normalised, so again Z_0 = 1).  One weight factor per temperature per
chain (Beal's C_k = 1); several kernel steps per temperature form one composite kernel.

Forward AIS is unbiased for Z, hence a stochastic lower bound on ln Z
(P(ln Z^ > ln Z + b) < e^-b, E ln Z^ <= ln Z); reverse AIS from exact posterior draws is
the mirror image (stochastic upper bound).  Failure modes: short schedules badly
under-estimate with large variance (Beal's DAG at n = 480 needed ~5000 steps to reach
the VB bound); acceptance falls with n and along the schedule unless proposals shrink
with n beta (the default kernels do); phase transitions along the path can be missed.
Never start a chain at a fitted or true parameter value (exact draws of q are fine: q is
the start distribution of the path).
"""

from __future__ import annotations

import os

import numpy as np
from joblib import Parallel, delayed
from scipy.special import logsumexp

from .._core.evidence.mcmc_moves import DirichletMH, Target, make_kernel
from .._core.evidence.params import concat_params, take
from .._core.evidence.protocols import has, require
from .._core.numerics import (
    as_seed_sequence,
    between_run_stderr,
    delta_method_stderr,
    importance_effective_sample_size,
    log_mean_exp,
    split_runs,
)
from .._core.progress import progress_for
from ._aliases import ALIAS_OPTIONS, cover_aliases
from ._base import Scorer, prepare_data, resolve_model, variational_posterior
from ._joint_anneal import check_joint, run_joint_ais, run_joint_reverse_ais
from ._reliability import LOWER_BOUND_Z, known_lower_bound, reliability_reasons, warn_unreliable
from ._result import ScoreResult
from .schedules import make_schedule

__all__ = ["AISScore", "ReverseAISScore", "BDMCScore", "run_ais", "run_reverse_ais",
           "run_ais_compiled", "run_reverse_ais_compiled", "hysteresis_check"]


def _chain_groups(C, n_jobs):
    n_jobs = 1 if n_jobs is None else int(n_jobs)
    if n_jobs < 0:
        n_jobs = max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    n_groups = max(1, min(C, n_jobs))
    return [g for g in np.array_split(np.arange(C), n_groups) if g.size]


def _running_estimate(log_w):
    """Extra text of an annealing progress line: the log-mean-exp of the partial
    log-weights (an estimate of the partial normaliser, not of the evidence)."""
    return lambda: f"running estimate {log_mean_exp(log_w):.4f}" if np.size(log_w) else ""


def _forward_group(model, X, betas, kernel, n_steps, seeds, start, q, verbose, label):
    rngs = [np.random.default_rng(s) for s in seeds]
    target = Target(model, X, start, q)
    state = target.sample_start(rngs)
    K = len(betas) - 1
    log_w = np.zeros(state.C)
    accept = np.full(K - 1, np.nan) if K > 1 else np.zeros(0)
    log_ratio = np.zeros((K, state.C))
    progress = progress_for(verbose, label, K)
    f_prev = target.log_f(state, betas[0])
    for k in range(1, K + 1):
        f_cur = target.log_f(state, betas[k])
        inc = f_cur - f_prev
        log_ratio[k - 1] = inc
        log_w += inc
        if k < K:
            accs = []
            for _ in range(n_steps):
                state, a = kernel.transition(state, target, betas[k], rngs)
                accs.append(a)
            accept[k - 1] = np.mean(accs)
            f_prev = target.log_f(state, betas[k])
        progress(k, _running_estimate(log_w))
    return log_w, accept, state.params, log_ratio


def _reverse_group(model, X, betas, kernel, n_steps, seeds, start, q, exact, verbose, label):
    rngs = [np.random.default_rng(s) for s in seeds]
    target = Target(model, X, start, q)
    state = target.state(exact)
    K = len(betas) - 1
    adj = kernel.adjoint()
    log_u = np.zeros(state.C)
    incs = np.zeros((K, state.C))
    accept = np.full(K - 1, np.nan) if K > 1 else np.zeros(0)
    progress = progress_for(verbose, label, K)
    for k in range(K, 0, -1):
        inc = target.log_f(state, betas[k - 1]) - target.log_f(state, betas[k])
        incs[k - 1] = inc
        log_u += inc
        if k > 1:
            accs = []
            for _ in range(n_steps):
                state, a = adj.transition(state, target, betas[k - 1], rngs)
                accs.append(a)
            accept[k - 2] = np.mean(accs)
        progress(K - k + 1, _running_estimate(-log_u))
    return log_u, accept, incs


def _seeds(random_state, C):
    return as_seed_sequence(random_state).spawn(int(C))


def run_ais(model, X, betas, kernel, n_chains, n_steps=1, random_state=None, n_jobs=None,
            start="prior", q=None, verbose=0):
    """Forward AIS over ``n_chains`` independent chains.

    Returns dict with ``log_weights`` (C,), ``acceptance`` (K-1,) (mean over chains),
    ``final_params`` and ``log_ratios`` (K, C) (per-temperature increments).
    """
    seeds = _seeds(random_state, n_chains)
    # a kernel with a compiled runner (the MRF's preconditioned walk on an enumerable
    # model) runs the same chains in compiled code; it returns None where it cannot
    runner = getattr(kernel, "run_forward_compiled", None)
    if callable(runner) and int(n_steps) == 1:
        r = runner(X, betas, seeds, start, q, verbose)
        if r is not None:
            return r
    groups = _chain_groups(n_chains, n_jobs)
    jobs = [delayed(_forward_group)(model, X, betas, kernel, int(n_steps), [seeds[i] for i in g],
                                    start, q, verbose if gi == 0 else 0, "ais") for gi, g in enumerate(groups)]
    res = Parallel(n_jobs=len(groups) if len(groups) > 1 else None)(jobs)
    sizes = np.array([g.size for g in groups], dtype=float)
    acc = np.average(np.stack([r[1] for r in res]), axis=0, weights=sizes) if len(betas) > 2 else np.zeros(0)
    return {
        "log_weights": np.concatenate([r[0] for r in res]),
        "acceptance": acc,
        "final_params": concat_params([r[2] for r in res]),
        "log_ratios": np.concatenate([r[3] for r in res], axis=1),
    }


def run_ais_compiled(model, X, betas, n_chains, random_state=None, n_jobs=None, strength=None,
                     floor="prior", verbose=0, start_alpha=None, start_mixture=None):
    """Forward AIS through the model's compiled kernel (``model.run_ais_compiled``),
    chains split over ``n_jobs`` threads (the kernels release the GIL).  Same return
    keys as :func:`run_ais` (``log_ratios`` is the (K, 1) mean increment).
    ``start_mixture`` (a mixture start, see the model's ``run_ais_compiled``) runs in
    one group so that its stratification over components covers all chains."""
    seeds = _seeds(random_state, n_chains)
    groups = _chain_groups(n_chains, 1 if start_mixture is not None else n_jobs)
    K = len(betas) - 1
    progress = progress_for(verbose, "ais", K)
    extra = {} if start_mixture is None else {"start_mixture": start_mixture}

    def one(gi, g):
        cb = (lambda k, K_, lw: progress(k, _running_estimate(lw))) if gi == 0 else None
        return model.run_ais_compiled(X, betas, [seeds[i] for i in g], strength=strength,
                                      floor=floor, progress=cb, start_alpha=start_alpha, **extra)

    if len(groups) > 1:
        res = Parallel(n_jobs=len(groups), prefer="threads")(
            delayed(one)(gi, g) for gi, g in enumerate(groups))
    else:
        res = [one(0, groups[0])]
    sizes = np.array([g.size for g in groups], dtype=float)
    acc = np.average(np.stack([r["acceptance"] for r in res]), axis=0, weights=sizes)
    lr = np.average(np.stack([r["log_ratios"] for r in res]), axis=0, weights=sizes)
    return {
        "log_weights": np.concatenate([r["log_weights"] for r in res]),
        # acceptance[k-1] belongs to the move targeting betas[k-1]; drop the move at
        # beta = 0 so that entries align with run_ais (moves at betas[1..K-1])
        "acceptance": acc[1:],
        "acceptance_full": acc,
        "final_params": concat_params([r["final_params"] for r in res]),
        "log_ratios": lr[:, None],
    }


def run_reverse_ais(model, X, betas, kernel, exact_samples, n_chains, n_steps=1,
                    random_state=None, n_jobs=None, start="prior", q=None, verbose=0):
    """Reverse AIS from exact posterior draws (chain c uses draw c mod M).

    Returns dict with ``log_u`` (C,) (each an unbiased estimate of 1/Z in log form) and
    ``log_increments`` (K, C): entry k-1 is ``ln f_{k-1} - ln f_k`` at the state used for it.
    """
    M = next(iter(exact_samples.values())).shape[0]
    idx = np.arange(n_chains) % M
    seeds = _seeds(random_state, n_chains)
    groups = _chain_groups(n_chains, n_jobs)
    jobs = [delayed(_reverse_group)(model, X, betas, kernel, int(n_steps), [seeds[i] for i in g],
                                    start, q, take(exact_samples, idx[g]), verbose if gi == 0 else 0,
                                    "rais") for gi, g in enumerate(groups)]
    res = Parallel(n_jobs=len(groups) if len(groups) > 1 else None)(jobs)
    sizes = np.array([g.size for g in groups], dtype=float)
    acc = np.average(np.stack([r[1] for r in res]), axis=0, weights=sizes) if len(betas) > 2 else np.zeros(0)
    return {"log_u": np.concatenate([r[0] for r in res]), "acceptance": acc,
            "log_increments": np.concatenate([r[2] for r in res], axis=1)}


def run_reverse_ais_compiled(model, X, betas, exact_samples, n_chains, random_state=None,
                             n_jobs=None, strength=None, floor="prior", verbose=0,
                             start_alpha=None, start_mixture=None):
    """Reverse AIS through the model's compiled kernel (``model.run_ais_compiled``).

    The compiled kernel is one Metropolis–Hastings move of all parameters at once (for
    the DAG: every CPT row from its Dirichlet proposal, one accept/reject), so it
    satisfies detailed balance for each ``f_beta`` and is its own adjoint.  Running it
    over the reversed schedule from exact posterior draws performs, per step, the move at
    ``betas[k]`` followed by ``log_w += (betas[k-1] - betas[k]) l(theta)``: exactly the
    reverse chain of :func:`run_reverse_ais` (plus one move at beta = 1 before the first
    increment, which leaves an exact posterior draw exact), so ``log_u = log_w``.
    Chain c starts at draw c mod M.  Same return keys as :func:`run_reverse_ais`
    (``log_increments`` is the (K, 1) mean increment, forward order).
    """
    M = next(iter(exact_samples.values())).shape[0]
    idx = np.arange(n_chains) % M
    seeds = _seeds(random_state, n_chains)
    groups = _chain_groups(n_chains, n_jobs)
    rev = np.ascontiguousarray(np.asarray(betas, dtype=float)[::-1])
    K = rev.size - 1
    progress = progress_for(verbose, "rais", K)
    extra = {} if start_mixture is None else {"start_mixture": start_mixture}

    def one(gi, g):
        cb = (lambda k, K_, lw: progress(k, _running_estimate(-lw))) if gi == 0 else None
        return model.run_ais_compiled(X, rev, [seeds[i] for i in g], strength=strength,
                                      floor=floor, start_params=take(exact_samples, idx[g]),
                                      progress=cb, start_alpha=start_alpha, **extra)

    if len(groups) > 1:
        res = Parallel(n_jobs=len(groups), prefer="threads")(
            delayed(one)(gi, g) for gi, g in enumerate(groups))
    else:
        res = [one(0, groups[0])]
    sizes = np.array([g.size for g in groups], dtype=float)
    acc = np.average(np.stack([r["acceptance"] for r in res]), axis=0, weights=sizes)
    lr = np.average(np.stack([r["log_ratios"] for r in res]), axis=0, weights=sizes)
    # acc[j] belongs to the move at rev[j] = betas[K - j]; keep the moves at
    # betas[K-1] .. betas[1] (as run_reverse_ais) and store them in forward order
    return {"log_u": np.concatenate([r["log_weights"] for r in res]),
            "acceptance": acc[1:K][::-1] if K > 1 else np.zeros(0),
            "log_increments": lr[::-1][:, None]}


def _ratio_profile(diff, n_bins=16):
    """Sums of per-temperature differences over ``n_bins`` equal stretches of the schedule."""
    diff = np.asarray(diff, dtype=float)
    parts = np.array_split(np.arange(diff.size), min(n_bins, diff.size))
    return [float(diff[p].sum()) for p in parts]


def hysteresis_check(model, X, betas, kernel, forward, random_state=None, n_jobs=None,
                     start="prior", q=None, strength=None, floor="prior", verbose=0,
                     start_alpha=None):
    """Beal's hysteresis diagnostic (thesis §6.4): run the schedule backwards
    from the final states of a forward run and accumulate the *same* forward ratios
    ``f_k / f_{k-1}`` (not inverted), each evaluated at a state the kernel has just moved
    at beta_k (forward: at beta_{k-1}).  Both totals agree for an adequate schedule; a
    large gap means the schedule is too short, and the per-ratio differences show where
    temperatures are missing.  Not a bound of any kind (the backward pass does not start
    from exact posterior draws; compare reverse AIS, which needs them).

    Returns dict: ``backward_log_weights`` (C,), ``forward_estimate``, ``backward_estimate``
    (log-mean-exp of each), ``gap = backward - forward`` and ``ratio_difference_profile``
    (16 stretches of the schedule: sum of backward minus forward mean per-temperature
    log-ratios).
    """
    fw = np.asarray(forward["log_weights"], dtype=float)
    C = fw.size
    if isinstance(kernel, str) and kernel == "compiled":
        seeds = _seeds(random_state, C)
        r = model.run_ais_compiled(X, np.ascontiguousarray(betas[::-1]), seeds, strength=strength,
                                   floor=floor, start_params=forward["final_params"],
                                   start_alpha=start_alpha)
        back = -r["log_weights"]
        back_ratio = -np.asarray(r["log_ratios"])[::-1]  # mean over chains, forward order
        fwd_ratio = np.asarray(forward["log_ratios"]).mean(axis=1)
    else:
        r = run_reverse_ais(model, X, betas, kernel, forward["final_params"], C, 1, random_state,
                            n_jobs, start, q, verbose)
        back = -r["log_u"]
        back_ratio = -r["log_increments"].mean(axis=1)
        fwd_ratio = np.asarray(forward["log_ratios"]).mean(axis=1)
    f_est, b_est = log_mean_exp(fw), log_mean_exp(back)
    return {"backward_log_weights": back, "forward_estimate": f_est, "backward_estimate": b_est,
            "gap": float(b_est - f_est),
            "ratio_difference_profile": _ratio_profile(back_ratio - fwd_ratio)}


def _by_quarter(acc):
    if acc.size == 0:
        return []
    return [float(np.nanmean(p)) if p.size else float("nan") for p in np.array_split(acc, 4)]


def _profile(acc, betas, n_bins=16):
    """Mean acceptance in ``n_bins`` equal stretches of the schedule, with the inverse
    temperatures at which each stretch starts and ends (the view of Beal's Fig. 6.12)."""
    acc = np.asarray(acc, dtype=float)
    if acc.size == 0:
        return {"acceptance": [], "beta_start": [], "beta_end": []}
    parts = np.array_split(np.arange(acc.size), min(n_bins, acc.size))
    return {"acceptance": [float(np.nanmean(acc[p])) for p in parts],
            "beta_start": [float(betas[p[0]]) for p in parts],
            "beta_end": [float(betas[p[-1]]) for p in parts]}


def _summarise(log_w, n_runs, what):
    """Pooled estimate LME(log_w), its standard error from between-run spreads, and the
    diagnostics behind it.

    The chains are split into ``n_runs`` independent runs (contiguous groups); the
    standard error of the pooled LME is the larger of ``sd(run estimates) / sqrt(R)`` and
    ``sd(ln w_c) / sqrt(C)`` (the spread of single-chain estimates).  Both are spreads of
    independent runs; the second has ``C - 1`` degrees of freedom where the first has only
    ``R - 1``, and unlike the delta-method value it does not collapse when one chain
    carries the weight.  With a single chain only the delta-method value exists (and the
    result is flagged unreliable).
    """
    est = log_mean_exp(log_w)
    runs = split_runs(log_w, n_runs)
    run_est = [log_mean_exp(x) for x in runs]
    se_delta = delta_method_stderr(log_w)[0]
    # each run's own error bar from the relative weight variance estimated on all chains
    # (a run of a few chains estimates its own far too noisily for a consistency test)
    run_se = [se_delta * np.sqrt(log_w.size / x.size) for x in runs]
    se_runs = between_run_stderr(run_est)
    se_chains = between_run_stderr(log_w)
    spreads = [v for v in (se_runs, se_chains) if v is not None]
    se = max(spreads) if spreads else se_delta
    diag = {
        "log_weights": log_w,
        "ess": importance_effective_sample_size(log_w),
        "run_estimates": run_est,
        "run_stderr": run_se,
        "run_sizes": [int(x.size) for x in runs],
        "stderr_between_runs": se_runs,
        f"stderr_between_{what}": se_chains,
        "stderr_delta": se_delta,
    }
    return est, se, diag


def frozen_proposal_reason(model, kernel, floor):
    """Why the chains of a Dirichlet proposal with a zero floor cannot mix, or None.

    Beal's ``Dir(alpha theta)`` proposal (``dirichlet_floor=0``) moves an entry near 0 to
    values smaller still, so under a prior with concentrations below 1 (whose draws have
    entries of 1e-30 and less) each chain stays on the face of the simplex it started
    on.  The chains' log-weights then scatter little within a run while the estimate
    depends on which faces the few chains started on: the spread of the chains, the only
    error bar there is, understates the error many times over (and no number of
    temperatures fixes it).  Decided from the options and the prior alone, so it flags
    the run on every machine alike."""
    if kernel == "joint" or floor is None or isinstance(floor, str):
        return None
    if not (kernel == "compiled" or _has_dirichlet_moves(kernel)):
        return None
    priors = getattr(model, "prior_alpha", None)
    if not isinstance(priors, dict):
        return None
    for name, prior in priors.items():
        g = floor.get(name, 1.0) if isinstance(floor, dict) else floor
        g = np.asarray(g, dtype=float)
        prior = np.asarray(prior, dtype=float)
        if np.any((np.broadcast_to(g, prior.shape) <= 0) & (prior < 1)):
            return ("dirichlet_floor=0 under a prior with concentrations below 1: entries near "
                    "0 stay near 0, the chains do not mix and their spread understates the "
                    "error (use dirichlet_floor='prior')")
    return None


def _has_dirichlet_moves(kernel):
    if isinstance(kernel, DirichletMH):
        return True
    return any(_has_dirichlet_moves(k) for k in getattr(kernel, "kernels", ()))


def _min_ess(C):
    """Pooled ESS below which AIS weights are carried by one or two chains."""
    return max(2.0, AIS_MIN_ESS_FRACTION * C)


#: AIS results whose effective sample size is below this fraction of the chains (at least
#: 2) are flagged: log-normal weights with variance above ln 4 ~ 1.4 give ESS/C < 1/4
AIS_MIN_ESS_FRACTION = 0.25

_AIS_ADVICE = ("Increase n_temperatures (the schedule is too short for the data size) or "
               "n_steps, start from q (start='q'), or increase n_chains.")

#: log-weight variance the automatic schedule length aims at (ESS/C ~ e^-1 for
#: log-normal weights)
PILOT_TARGET_VARIANCE = 1.0
#: the automatic schedule never has fewer temperatures than this
MIN_AUTO_TEMPERATURES = 1000


_AIS_OPTIONS = {
    "n_temperatures": "auto",
    "pilot_temperatures": 256,
    "max_temperatures": 4000,
    "n_chains": 16,
    "schedule": "sigmoid",
    "delta": 4.0,
    "e_tau": 0.2,
    "beta_min": 1e-4,
    "n_steps": 1,
    "kernel": "auto",
    "rw_scale": 1.0,
    "dirichlet_strength": None,
    "dirichlet_floor": "prior",
    "start": "auto",
    "posterior": None,
    "hysteresis": False,
    "n_runs": 4,
    "lower_bound": "vb",
    "anneal": "theta",
    "start_components": None,
    **ALIAS_OPTIONS,
}


def _anneals_well_from_q(model, opts):
    """Whether ``start="auto"`` starts from q: for models whose parameters are all
    probability vectors (DAG, categorical HMM, latent-class models), whose Dirichlet
    kernels size their proposals for the path from q (``Target.tuning_beta``).  Measured
    on the DAG at n = 2560 and the categorical HMM at T = 3000: from the prior, 1000
    temperatures land 30 and 610 nats below the VB bound; from q, 23 and 25 nats above it.
    The random-walk kernels of the Gaussian, LDS and MFA models are tuned along the prior
    path, and annealing from q with them lands lower, so those start from the prior."""
    if opts.get("anneal", "theta") == "joint":  # the joint path starts at the prior
        return False
    if not (isinstance(opts["kernel"], str) and opts["kernel"] in ("auto", "compiled",
                                                                     "dirichlet", "blocks")):
        return False
    return all(b.constraint == "simplex" for b in model.param_space.blocks)


class _AISBase(Scorer):
    def _setup(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, "log_prior", "sample_prior", "log_likelihood", "n_cases")
        data = prepare_data(model, X, fit_params)
        q = None
        start = opts["start"]
        if start not in ("auto", "prior", "q", "q_aliases"):
            raise ValueError(f"start must be 'auto', 'prior', 'q' or 'q_aliases', got {start!r}.")
        if start == "q_aliases":
            return self._setup_aliases(estimator, model, data, opts)
        if start in ("auto", "q"):
            q = variational_posterior(estimator, model, data, opts["posterior"])
            if q is None and start == "q":
                raise NotImplementedError(f"{self.name} needs variational_posterior_ for start='q'")
            if start == "auto" and not _anneals_well_from_q(model, opts):
                q = None
            start = "prior" if q is None else "q"
        opts["start"] = start  # the resolved start (opts is this call's own copy)
        opts["alias_reason"] = None
        n_temperatures = opts["n_temperatures"]
        if isinstance(n_temperatures, str):
            if n_temperatures != "auto":
                raise ValueError(f"n_temperatures must be a positive int or 'auto', "
                                 f"got {n_temperatures!r}.")
            if not isinstance(opts["schedule"], str):
                n_temperatures = len(opts["schedule"]) - 1
        betas = (None if isinstance(n_temperatures, str)
                 else make_schedule(opts["schedule"], n_temperatures, opts["delta"],
                                    opts["e_tau"], opts["beta_min"]))
        kernel = self._kernel(model, opts, data)
        if start == "q":
            q = self._cover_aliases(model, q, kernel, opts)
        if kernel == "compiled" and start == "q" and "start_mixture" not in opts:
            opts["start_alpha"] = model.flat_concentrations(q)
        n_chains = int(opts["n_chains"])
        if n_chains < 1:
            raise ValueError(f"n_chains must be >= 1, got {n_chains}.")
        return model, data, betas, kernel, q

    def _cover_aliases(self, model, q, kernel, opts):
        """The start of the path from q: its mixture over the model's aliases
        (:func:`~sklearn_vb.scoring._aliases.cover_aliases`; with the compiled kernel
        the stratified ``start_mixture`` of ``alias_mixture``), or q with the reason in
        ``opts["alias_reason"]``.  A ``posterior=`` given by the caller is used as is."""
        explicit = opts["posterior"] is not None
        if kernel == "compiled" and has(model, "alias_mixture") and not explicit:
            covered, reason = cover_aliases(model, q, opts)
            if reason is None and covered is not q:
                if opts["hysteresis"]:
                    reason = ("the path starts at q, which covers one of the relabelled "
                              "copies of the posterior (hysteresis=True runs without the "
                              "alias mixture)")
                else:
                    opts["start_mixture"] = model.alias_mixture(
                        model.flat_concentrations(q)[None])
            opts["alias_reason"] = reason
            return q
        if kernel == "compiled":
            _, reason = cover_aliases(model, q, opts, explicit)
            opts["alias_reason"] = reason
            return q
        covered, reason = cover_aliases(model, q, opts, explicit)
        opts["alias_reason"] = reason
        return covered

    def _setup_aliases(self, estimator, model, data, opts):
        """``start="q_aliases"``: the path from the alias-symmetrised mixture of q (and of
        ``start_components``) with the compiled kernel (see :class:`AISScore`)."""
        if not has(model, "alias_mixture"):
            raise NotImplementedError(f"start='q_aliases' needs a model with alias_mixture "
                                      f"(e.g. VBDiscreteDAG), not {type(model).__name__}.")
        if not (isinstance(opts["kernel"], str) and opts["kernel"] in ("auto", "compiled")) \
                or int(opts["n_steps"]) != 1:
            raise ValueError("start='q_aliases' runs the compiled kernel: kernel='auto' or "
                             "'compiled' and n_steps=1.")
        if opts["hysteresis"]:
            raise ValueError("hysteresis=True is not available with start='q_aliases'.")
        q = variational_posterior(estimator, model, data, opts["posterior"])
        if q is None:
            raise NotImplementedError(f"{self.name} needs variational_posterior_ for "
                                      "start='q_aliases'")
        rows = [model.flat_concentrations(q)]
        for comp in opts["start_components"] or ():
            rows.append(model.flat_concentrations(comp) if not isinstance(comp, np.ndarray)
                        else np.asarray(comp, dtype=float))
        opts["start_mixture"] = model.alias_mixture(np.array(rows))
        n_temperatures = opts["n_temperatures"]
        if isinstance(n_temperatures, str) and n_temperatures != "auto":
            raise ValueError(f"n_temperatures must be a positive int or 'auto', "
                             f"got {n_temperatures!r}.")
        if isinstance(n_temperatures, str) and not isinstance(opts["schedule"], str):
            n_temperatures = len(opts["schedule"]) - 1
        betas = (None if isinstance(n_temperatures, str)
                 else make_schedule(opts["schedule"], n_temperatures, opts["delta"],
                                    opts["e_tau"], opts["beta_min"]))
        if int(opts["n_chains"]) < 1:
            raise ValueError(f"n_chains must be >= 1, got {opts['n_chains']}.")
        return model, data, betas, "compiled", q

    def _kernel(self, model, opts, data=None):
        if check_joint(model, opts, self.name):  # anneal="joint": tempered Gibbs on (theta, z)
            return "joint"
        kind = opts["kernel"]
        compiled_ok = (has(model, "run_ais_compiled") and int(opts["n_steps"]) == 1
                       and (opts["start"] == "prior" or has(model, "flat_concentrations")))
        if isinstance(kind, str) and kind == "compiled":
            if not compiled_ok:
                raise ValueError("kernel='compiled' needs a model with run_ais_compiled and "
                                 "n_steps=1 (and flat_concentrations for start='q').")
            return "compiled"
        if isinstance(kind, str) and kind == "auto" and compiled_ok:
            return "compiled"
        strength = opts["dirichlet_strength"]
        return make_kernel(kind, model, opts["rw_scale"],
                           (5.0, 2.0) if strength is None else strength, opts["dirichlet_floor"],
                           X=data)

    def _reverse(self, model, data, betas, kernel, exact, q, opts, random_state):
        if isinstance(kernel, str) and kernel == "joint":
            return run_joint_reverse_ais(model, data, betas, exact, int(opts["n_chains"]),
                                         random_state, opts["verbose"])
        if isinstance(kernel, str) and kernel == "compiled":
            return run_reverse_ais_compiled(model, data, betas, exact, int(opts["n_chains"]),
                                            random_state, opts["n_jobs"],
                                            opts["dirichlet_strength"], opts["dirichlet_floor"],
                                            opts["verbose"], opts.get("start_alpha"),
                                            opts.get("start_mixture"))
        return run_reverse_ais(model, data, betas, kernel, exact, int(opts["n_chains"]),
                               opts["n_steps"], random_state, opts["n_jobs"], opts["start"], q,
                               opts["verbose"])

    def _run_forward(self, model, data, betas, kernel, q, opts, random_state, verbose=None):
        verbose = opts["verbose"] if verbose is None else verbose
        if isinstance(kernel, str) and kernel == "joint":
            return run_joint_ais(model, data, betas, int(opts["n_chains"]), random_state, verbose)
        if isinstance(kernel, str) and kernel == "compiled":
            return run_ais_compiled(model, data, betas, int(opts["n_chains"]), random_state,
                                    opts["n_jobs"], opts["dirichlet_strength"],
                                    opts["dirichlet_floor"], verbose, opts.get("start_alpha"),
                                    opts.get("start_mixture"))
        return run_ais(model, data, betas, kernel, int(opts["n_chains"]), opts["n_steps"],
                       random_state, opts["n_jobs"], opts["start"], q, verbose)

    def _pilot(self, model, data, kernel, q, opts, random_state):
        """Number of temperatures from a short pilot run (its own seed stream; the scored
        run then uses a schedule fixed in advance, so it stays unbiased for Z).

        For a well-mixing kernel the variance of the log-weights falls like 1/K along a
        schedule of fixed shape, so ``K = K_pilot * var_pilot / PILOT_TARGET_VARIANCE``
        temperatures bring it to about ``PILOT_TARGET_VARIANCE`` (ESS/C ~ e^-1), clipped to
        ``[1000, max_temperatures]``.  Slow mixing makes the variance fall more slowly,
        which the reliability checks of the scored run then report."""
        K0 = int(opts["pilot_temperatures"])
        betas0 = make_schedule(opts["schedule"], K0, opts["delta"], opts["e_tau"],
                               opts["beta_min"])
        lw = self._run_forward(model, data, betas0, kernel, q, opts, random_state, verbose=0)[
            "log_weights"]
        var = float(np.var(lw, ddof=1)) if lw.size > 1 and np.all(np.isfinite(lw)) else np.inf
        need = K0 * var / PILOT_TARGET_VARIANCE
        K_max = int(opts["max_temperatures"])
        K = int(min(max(MIN_AUTO_TEMPERATURES, np.ceil(need) if np.isfinite(need) else K_max),
                    K_max))
        info = {"n_temperatures": K0, "log_weight_variance": var,
                "predicted_temperatures": float(need), "chosen_temperatures": K}
        if opts["verbose"]:
            print(f"[ais] pilot run ({K0} temperatures): log-weight variance {var:.3g}; "
                  f"scoring with {K} temperatures", flush=True)
        return K, info

    def _forward(self, estimator, model, data, betas, kernel, q, opts, random_state):
        r = self._run_forward(model, data, betas, kernel, q, opts, random_state)
        lw = r["log_weights"]
        est, se, diag = _summarise(lw, int(opts["n_runs"]), "chains")
        lower = known_lower_bound(estimator, opts["lower_bound"])
        reasons = reliability_reasons(diag["ess"], _min_ess(lw.size), diag["run_estimates"],
                                      diag["run_stderr"], est, se, lower)
        frozen = frozen_proposal_reason(model, kernel, opts["dirichlet_floor"])
        if frozen:
            reasons.append(frozen)
        if opts.get("alias_reason"):
            reasons.append(opts["alias_reason"])
        diag.update({
            "reliable": not reasons,
            "stderr_reliable": not reasons,
            "unreliable_reasons": reasons,
            "acceptance_by_quarter": _by_quarter(r["acceptance"]),
            "acceptance_profile": _profile(r["acceptance"], betas[1:-1]),
            "n_temperatures": len(betas) - 1,
            "log_ratio_estimates": _log_mean_exp_rows(r["log_ratios"]),
        })
        if lower is not None:
            diag["vb_violation"] = bool(est < lower - LOWER_BOUND_Z * se)
        return est, se, diag, r


def _log_mean_exp_rows(a):
    """``log_mean_exp`` of every row of ``a`` (K, C) in one vectorised call: one call per
    temperature costs more than a compiled AIS move.  Rows it would reject or that are all
    ``-inf`` go through ``log_mean_exp`` itself."""
    a = np.asarray(a, dtype=float)
    if a.size == 0 or not np.all(np.isfinite(a)):
        return np.array([log_mean_exp(x) for x in a])
    return logsumexp(a, axis=1) - np.log(a.shape[1])


class AISScore(_AISBase):
    """Forward annealed importance sampling (theta-only); a stochastic lower bound.

    What is unbiased: each chain's weight ``exp(log_w_c)`` is an unbiased estimate of Z =
    p(X) for any schedule fixed before the run and any kernels that leave each ``f_beta``
    invariant; so is their mean, whose log (``log_evidence``) is therefore a stochastic
    lower bound (``E ln Z^ <= ln Z``, ``P(ln Z^ > ln Z + b) < e^-b``).  The automatic
    schedule length is chosen from a pilot run with its own seed stream and then fixed,
    so the scored run keeps this property.

    Options: ``n_temperatures`` (K; default "auto": a pilot run of
    ``pilot_temperatures`` = 256 temperatures measures the variance of the log-weights,
    and K = 256 x variance / 1 (enough for a log-weight variance of about 1 if it falls
    like 1/K), clipped to [1000, ``max_temperatures`` = 4000]; a K the pilot wants
    beyond the cap is reported as a reason the result is unreliable), ``n_chains`` (C),
    ``schedule`` ("sigmoid" with ``delta``, "beal" with ``e_tau``, "linear",
    "geometric" with ``beta_min``, or an array), ``n_steps`` kernel steps per
    temperature, ``kernel`` ("auto": the model's compiled kernel when it has one
    (``run_ais_compiled``, e.g. VBDiscreteDAG: Beal's joint Dirichlet proposal of every
    CPT row, one move per temperature), else the model's ``annealing_kernel`` (LDS,
    Gaussian HMM: tuned from the prior and q before the run; a kernel with
    ``run_forward_compiled``, such as PairwiseMRF's on an enumerable graph, runs the same
    chains in compiled code when ``n_steps=1``), otherwise "blocks":
    Dirichlet MH on simplex rows + random walk in the unconstrained basis elsewhere with
    steps ``c / sqrt(pi + beta n h)``, ``pi`` the prior precision from the prior;
    "compiled"; "blocks"; "dirichlet"; "rw"; "exact"; or a kernel object), ``rw_scale``,
    ``dirichlet_strength`` = (alpha0, kappa) for the strength alpha0 + kappa n beta
    (None: (5, 2) for the row-wise kernel, the model's default for the compiled one),
    ``dirichlet_floor`` (per-entry floor of the Dirichlet proposal, "prior" = prior
    concentrations capped at 1; 0 = Beal's Dir(alpha theta), which freezes entries near 0
    under sparse priors), ``start`` ("auto" (default): "q" when the estimator has a
    variational posterior, else "prior"; "q": the path
    ``(1 - beta) ln q + beta [ln p + l]`` from the fitted q(theta), along which every
    target is about as concentrated as the posterior, so proposals keep their size at
    beta = 1; "prior": ``ln p + beta l``, the path of Beal 2003 §6.5, which at a few
    thousand cases needs tens of thousands of temperatures).  From q alone the chains
    rarely cross between the S relabelled copies of the posterior that a model with
    hidden states has, so with well separated copies the estimate would land near
    ``ln Z - ln S`` (still unbiased for Z, the missing mass coming from rare huge
    weights).  Hence ``aliases="auto"`` (default): the path starts at the equal-weight
    mixture of q over the model's relabellings (its ``alias_posterior``, e.g. the K!
    state permutations of an HMM; with the compiled DAG kernel the stratified start of
    ``"q_aliases"``), whose density is exact, so the estimate is unbiased for Z itself;
    when the model has no such mixture or more than ``max_aliases`` (24) relabellings,
    or with ``aliases="none"``, the path starts at q and the result is flagged.  A
    ``posterior=`` given by the caller is used as it is.
    "q_aliases" (models with ``alias_mixture``, e.g. VBDiscreteDAG; compiled kernel): the
    path from the equal-weight mixture of q and of its S relabelled copies, plus those of
    every posterior in ``start_components`` (a list of posteriors or flat concentration
    vectors, e.g. other VB optima; default None), duplicates removed.  The mixture
    density is exact (a log-mean-exp of the component densities), so the estimate is
    unbiased for Z itself, with no alias correction needed, and chains are stratified
    over the components (chain c starts from component c mod M), which removes the
    noise of how many chains land in each mode.

    Error bars: chains are combined by log-mean-exp; they are split into ``n_runs`` (4)
    independent runs and ``stderr`` is the larger of the spread of the run estimates,
    ``sd / sqrt(R)``, and of the single-chain log-weights, ``sd / sqrt(C)``
    (``diagnostics["stderr_delta"]`` keeps the delta-method value, which collapses when one
    chain carries the weight).  The result is flagged (``diagnostics["reliable"]`` and
    ``["stderr_reliable"]`` False, ``["unreliable_reasons"]``) and an
    :class:`~sklearn_vb.scoring.UnreliableEstimateWarning` says why and what to
    increase when the effective sample size is below C/4 (at least 2), the runs disagree
    beyond their error bars, or the estimate lies more than 2 standard errors below
    ``lower_bound`` ("vb": the estimator's ``lower_bound_``, valid when X is its
    training data; a number, e.g. a Cheeseman-Stutz score; None: no check).
    ``diagnostics["vb_violation"]`` is that last test alone.

    Cost at the defaults: ``C (256 + K)`` proposals, each one likelihood evaluation for
    the compiled kernel and one per proposed block (a Dirichlet row or a parameter
    block) for the others, K between 1000 and 4000.  Models whose parameters are
    moved block by block (the categorical HMM's Dirichlet rows, each analyser of a mixture
    of factor analysers) pay one likelihood evaluation per block, chain and temperature,
    so large models can take hours; ``benchmarks/bench_score_cost.py`` measures the cost
    in fits of the estimator for every family (``benchmarks/results/score_cost.md``).
    Progress is shown with ``verbose=1``.

    ``anneal`` ("theta", the default: the latents summed out inside the likelihood;
    "joint": anneal parameters and latents together with tempered Gibbs moves, for
    models with exact tempered conditionals, see :mod:`sklearn_vb.scoring._joint_anneal`;
    also for "rais" and "bdmc").

    ``verbose=1`` prints progress lines for runs longer than a few seconds.
    ``hysteresis=True`` adds Beal's backward pass from the final states
    (``diagnostics["hysteresis"]``, see :func:`hysteresis_check`; it uses a different seed
    stream, so the forward estimate differs from a run without it).
    """

    name = "ais"
    options = dict(_AIS_OPTIONS)

    def _score(self, estimator, X, fit_params, opts):
        model, data, betas, kernel, q = self._setup(estimator, X, fit_params, opts)
        ss_fwd, ss_back = as_seed_sequence(opts["random_state"]).spawn(2) if opts["hysteresis"] \
            else (opts["random_state"], None)
        pilot = None
        if betas is None:
            ss_pilot, ss_fwd = as_seed_sequence(ss_fwd).spawn(2)
            K, pilot = self._pilot(model, data, kernel, q, opts, ss_pilot)
            betas = make_schedule(opts["schedule"], K, opts["delta"], opts["e_tau"],
                                  opts["beta_min"])
        est, se, diag, r = self._forward(estimator, model, data, betas, kernel, q, opts, ss_fwd)
        if pilot is not None:
            diag["pilot"] = pilot
            if pilot["predicted_temperatures"] > pilot["chosen_temperatures"]:
                diag["unreliable_reasons"].append(
                    f"the pilot run asks for ~{pilot['predicted_temperatures']:.3g} temperatures, "
                    f"more than max_temperatures={int(opts['max_temperatures'])}")
                diag["reliable"] = diag["stderr_reliable"] = False
        if opts["hysteresis"]:
            diag["hysteresis"] = hysteresis_check(
                model, data, betas, kernel, r, ss_back, opts["n_jobs"], opts["start"], q,
                opts["dirichlet_strength"], opts["dirichlet_floor"], opts["verbose"],
                opts.get("start_alpha"))
        warn_unreliable(self.name, diag["unreliable_reasons"], _AIS_ADVICE)
        return ScoreResult(self.name, float(est), "stochastic_lower",
                           log_alias_correction=self._log_alias(model, opts), stderr=se,
                           n_eff=diag["ess"], diagnostics=diag)


def _exact_samples(model, data, opts, n_chains, random_state, name):
    ex = opts["exact_posterior_samples"]
    if ex is not None:
        ex = model.param_space.check({k: np.asarray(v, dtype=float) for k, v in ex.items()})
        return ex, "given"
    if has(model, "sample_tempered_posterior"):
        rng = np.random.default_rng(as_seed_sequence(random_state).spawn(1)[0])
        return model.sample_tempered_posterior(data, 1.0, rng, n_chains), "analytic"
    raise ValueError(
        f"{name} needs exact_posterior_samples= (e.g. the parameters that simulated the data)."
    )


class ReverseAISScore(_AISBase):
    """Reverse AIS from exact posterior draws: a stochastic upper bound on ln Z.

    Only valid when ``exact_posterior_samples`` are exact draws from p(theta | X): the
    parameters that simulated X from the prior (simulated data only), or analytic
    posterior draws for conjugate test models.  Kernels as for :class:`AISScore`; the
    compiled DAG kernel (a single joint Metropolis–Hastings move, its own adjoint) is
    used by "auto" and "compiled" (:func:`run_reverse_ais_compiled`), Python kernels
    run their ``adjoint()``.  ``n_temperatures="auto"`` means 1000 here (no pilot run).
    Cost: ``C K`` proposals (likelihood evaluations as for :class:`AISScore`).  Error
    bars and flags as for :class:`AISScore`.
    """

    name = "rais"
    options = dict(_AIS_OPTIONS, exact_posterior_samples=None)

    def _score(self, estimator, X, fit_params, opts):
        model, data, betas, kernel, q = self._setup(estimator, X, fit_params, opts)
        if betas is None:  # no forward pilot here: the shortest automatic schedule
            betas = make_schedule(opts["schedule"], MIN_AUTO_TEMPERATURES, opts["delta"],
                                  opts["e_tau"], opts["beta_min"])
        ss = as_seed_sequence(opts["random_state"])
        s_exact, s_run = ss.spawn(2)
        ex, source = _exact_samples(model, data, opts, int(opts["n_chains"]), s_exact, self.name)
        r = self._reverse(model, data, betas, kernel, ex, q, opts, s_run)
        lu = r["log_u"]
        neg_est, se, diag = _summarise(lu, int(opts["n_runs"]), "chains")
        est = -neg_est
        diag["log_u"] = diag.pop("log_weights")
        diag["run_estimates"] = [-e for e in diag["run_estimates"]]
        lower = known_lower_bound(estimator, opts["lower_bound"])
        reasons = reliability_reasons(diag["ess"], _min_ess(lu.size), diag["run_estimates"],
                                      diag["run_stderr"], est, se, lower)
        frozen = frozen_proposal_reason(model, kernel, opts["dirichlet_floor"])
        if frozen:
            reasons.append(frozen)
        if opts.get("alias_reason"):
            reasons.append(opts["alias_reason"])
        diag.update({"reliable": not reasons, "stderr_reliable": not reasons,
                     "unreliable_reasons": reasons,
                     "acceptance_by_quarter": _by_quarter(r["acceptance"]),
                     "exact_samples": source})
        warn_unreliable(self.name, reasons, _AIS_ADVICE)
        return ScoreResult(self.name, float(est), "stochastic_upper",
                           log_alias_correction=self._log_alias(model, opts), stderr=se,
                           n_eff=diag["ess"], diagnostics=diag)


class BDMCScore(_AISBase):
    """Bidirectional Monte Carlo: forward and reverse AIS over a growing ``K_grid`` until
    ``upper - lower < gap_tol``; returns the midpoint with ``interval=(lower, upper)``.
    Simulated data only (needs exact posterior samples).  Once both directions are
    accurate, noise can put ``upper`` slightly below ``lower``; the order is not enforced.
    """

    name = "bdmc"
    options = dict(_AIS_OPTIONS, exact_posterior_samples=None,
                   K_grid=(100, 300, 1000, 3000, 10000, 30000), gap_tol=1.0)

    def _score(self, estimator, X, fit_params, opts):
        model, data, _, kernel, q = self._setup(estimator, X, fit_params, opts)
        ss = as_seed_sequence(opts["random_state"])
        s_exact, *s_runs = ss.spawn(1 + 2 * len(opts["K_grid"]))
        ex, source = _exact_samples(model, data, opts, int(opts["n_chains"]), s_exact, self.name)
        history = []
        for i, K in enumerate(opts["K_grid"]):
            betas = make_schedule(opts["schedule"], K, opts["delta"], opts["e_tau"], opts["beta_min"])
            lo, se_lo, _, _ = self._forward(estimator, model, data, betas, kernel, q, opts, s_runs[2 * i])
            r = self._reverse(model, data, betas, kernel, ex, q, opts, s_runs[2 * i + 1])
            neg_hi, se_hi, _ = _summarise(r["log_u"], int(opts["n_runs"]), "chains")
            hi = -neg_hi
            history.append({"K": int(K), "lower": float(lo), "upper": float(hi),
                            "gap": float(hi - lo), "stderr_lower": se_lo, "stderr_upper": se_hi})
            if opts["verbose"]:
                print(f"[bdmc] K={K}: lower {lo:.4f}  upper {hi:.4f}  gap {hi - lo:.4f}", flush=True)
            if hi - lo < opts["gap_tol"]:
                break
        last = history[-1]
        diag = {"history": history, "converged": last["gap"] < opts["gap_tol"],
                "exact_samples": source}
        if hasattr(estimator, "lower_bound_"):
            diag["vb_gap_upper_bound"] = last["upper"] - float(estimator.lower_bound_)
        return ScoreResult(self.name, 0.5 * (last["lower"] + last["upper"]), "interval",
                           log_alias_correction=self._log_alias(model, opts),
                           stderr=float(np.hypot(last["stderr_lower"], last["stderr_upper"])),
                           interval=(last["lower"], last["upper"]), diagnostics=diag)
