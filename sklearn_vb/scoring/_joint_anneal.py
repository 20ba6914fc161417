"""Joint (theta, z) annealing for AIS, reverse AIS and BDMC (``anneal="joint"``).

The state is the parameters together with every case's latents, and the geometric path
tempers only the observation factor (Grosse, Ghahramani & Adams 2015, eq. 8):
``f_beta(theta, z) = p(theta) p(z | theta) p(X | z, theta)^beta``, normalised at beta = 0,
so one chain's weight ``sum_k (beta_k - beta_{k-1}) ln p(X | z, theta)`` is unbiased for
p(X) exactly as in theta-only mode.  The move at ``beta`` is tempered Gibbs: latents from
``p(z | theta) p(X | z, theta)^beta``, then parameters from
``p(theta) p(z | theta) p(X | z, theta)^beta`` (both exact draws, from the model's
``sample_latents`` / ``sample_params``).  The sweep is not reversible; reverse AIS runs
its adjoint (parameters first, then latents).  Reverse chains start from an exact joint
posterior draw: an exact parameter draw with latents drawn from ``p(z | theta, X)``.
A model whose parameter draw is itself a sweep over several blocks (the weights given the
hyperparameters, then the hyperparameters, :mod:`sklearn_vb.bdmc_models.hyper_scoring_model`)
says so with ``sample_params_needs_current = True`` and receives the chains' current
parameters as ``current=``.

Compared with theta-only annealing, which sums the latents out exactly inside the
likelihood, the joint path walks a much larger space but every move is an exact
conditional draw with no step size to tune; which is better is model dependent.
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.protocols import require
from .._core.numerics import as_seed_sequence
from .._core.progress import progress_for

__all__ = ["JOINT_NEEDS", "check_joint", "run_joint_ais", "run_joint_reverse_ais"]

JOINT_NEEDS = ("sample_latents_prior", "sample_latents", "sample_params",
               "log_complete_likelihood_per_case")


def check_joint(model, opts, name):
    """Validate ``anneal=`` and return the kernel marker of joint annealing (or None)."""
    anneal = opts.get("anneal", "theta")
    if anneal == "theta":
        return None
    if anneal != "joint":
        raise ValueError(f"anneal must be 'theta' or 'joint', got {anneal!r}.")
    require(model, f"{name} with anneal='joint'", *JOINT_NEEDS)
    if opts.get("start") == "q":
        raise ValueError("anneal='joint' anneals from the prior; use start='prior'.")
    if opts.get("hysteresis"):
        raise ValueError("hysteresis=True is not available with anneal='joint'.")
    return "joint"


def _complete_loglik(model, params, Z, X):
    return np.asarray(model.log_complete_likelihood_per_case(params, Z, X), dtype=float).sum(axis=1)


def _draw_params(model, Z, X, rng, beta, current):
    if getattr(model, "sample_params_needs_current", False):
        return model.sample_params(Z, X, rng, beta, current=current)
    return model.sample_params(Z, X, rng, beta)


def run_joint_ais(model, X, betas, n_chains, random_state=None, verbose=0):
    """Forward joint AIS over ``n_chains`` chains (vectorised); same return keys as
    :func:`~sklearn_vb.scoring._ais.run_ais`."""
    rng = np.random.default_rng(as_seed_sequence(random_state))
    betas = np.asarray(betas, dtype=float)
    K = betas.size - 1
    params = model.sample_prior(rng, int(n_chains))
    Z = model.sample_latents_prior(params, model.n_cases(X), rng)
    lc = _complete_loglik(model, params, Z, X)
    log_w = np.zeros(int(n_chains))
    log_ratios = np.zeros((K, int(n_chains)))
    progress = progress_for(verbose, "ais", K)
    for k in range(1, K + 1):
        inc = (betas[k] - betas[k - 1]) * lc
        log_ratios[k - 1] = inc
        log_w += inc
        if k < K:
            Z = model.sample_latents(params, X, rng, betas[k])
            params = _draw_params(model, Z, X, rng, betas[k], params)
            lc = _complete_loglik(model, params, Z, X)
        progress(k)
    return {"log_weights": log_w, "acceptance": np.ones(max(K - 1, 0)), "final_params": params,
            "log_ratios": log_ratios}


def run_joint_reverse_ais(model, X, betas, exact_samples, n_chains, random_state=None,
                          verbose=0):
    """Reverse joint AIS from exact parameter draws (chain c uses draw c mod M, with its
    latents drawn exactly given it); same return keys as
    :func:`~sklearn_vb.scoring._ais.run_reverse_ais`."""
    rng = np.random.default_rng(as_seed_sequence(random_state))
    betas = np.asarray(betas, dtype=float)
    K = betas.size - 1
    M = next(iter(exact_samples.values())).shape[0]
    idx = np.arange(int(n_chains)) % M
    params = {k: np.asarray(v)[idx] for k, v in exact_samples.items()}
    Z = model.sample_latents(params, X, rng, 1.0)
    lc = _complete_loglik(model, params, Z, X)
    log_u = np.zeros(int(n_chains))
    incs = np.zeros((K, int(n_chains)))
    progress = progress_for(verbose, "rais", K)
    for k in range(K, 0, -1):
        inc = -(betas[k] - betas[k - 1]) * lc
        incs[k - 1] = inc
        log_u += inc
        if k > 1:  # the adjoint sweep: parameters, then latents
            params = _draw_params(model, Z, X, rng, betas[k - 1], params)
            Z = model.sample_latents(params, X, rng, betas[k - 1])
            lc = _complete_loglik(model, params, Z, X)
        progress(K - k + 1)
    return {"log_u": log_u, "acceptance": np.ones(max(K - 1, 0)), "log_increments": incs}
