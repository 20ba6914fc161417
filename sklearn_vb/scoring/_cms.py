"""The Chib–Murray–Salakhutdinov estimator.

Chib's identity ``p(X) = p(theta*, z*, X) / p(theta*, z* | X)`` at one point, with the
denominator estimated from a Gibbs chain: ``T(x* | x) = p(z* | theta, X)
p(theta* | z*, X)`` for the sweep "latents given theta, then theta given latents".
Murray & Salakhutdinov (2009) start the chain at a uniformly chosen position s with a
draw from the reverse operator ``T~(. | x*)`` (theta given z*, then latents given theta)
and extend it forwards with T and backwards with T~; then ``(1/S) sum_s T(x* | x_s)``
has expectation such that the estimate of p(X) is unbiased (Grosse, Ghahramani & Adams
2015, §5.2, eqs. 42-44), hence a stochastic lower bound on ln p(X).  Needs a model with
exact conditionals and their densities (the latent-level group: the BDMC latent-factor
models, and the discrete DAG, whose latents are the hidden nodes and missing values and whose
``log_latent_prior`` takes the data because a hidden node may have observed parents); with symmetric
posteriors (relabellings) the chain must visit x*'s mode, which a chain started next to
it does.
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.params import take
from .._core.evidence.protocols import require
from .._core.numerics import as_seed_sequence, log_mean_exp
from ._base import Scorer, prepare_data, resolve_model, variational_posterior
from ._result import ScoreResult
from ._smc import pool_runs

__all__ = ["CMSScore"]

_NEEDS = ("log_prior", "log_latent_prior", "log_complete_likelihood_per_case", "sample_latents",
          "sample_params", "log_latent_conditional", "log_param_conditional")


class CMSScore(Scorer):
    """Chib–Murray–Salakhutdinov estimate of ln p(X) from a Gibbs chain (unbiased for Z).

    The point ``(theta*, z*)``: ``theta*`` = the first of ``exact_posterior_samples`` when
    given (on simulated data the truth is a high-posterior point), else the mean of the
    fitted q(theta); ``z*`` = ``exact_latents`` when given, else one draw from
    ``p(z | theta*, X)``.  Options: ``n_samples`` (S, chain length), ``n_runs``
    (independent chains, pooled by the mean of their Z estimates).  Cost: ``2 (S - 1)``
    Gibbs sweeps per run (vectorised over runs).
    """

    name = "cms"
    options = {"n_samples": 200, "n_runs": 4, "exact_posterior_samples": None,
               "exact_latents": None}

    def _score(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, *_NEEDS)
        data = prepare_data(model, X, fit_params)
        S, R = int(opts["n_samples"]), int(opts["n_runs"])
        if S < 1 or R < 1:
            raise ValueError("n_samples and n_runs must be >= 1.")
        rng = np.random.default_rng(as_seed_sequence(opts["random_state"]))
        if opts["exact_posterior_samples"] is not None:
            ex = model.param_space.check({k: np.asarray(v, dtype=float)
                                          for k, v in opts["exact_posterior_samples"].items()})
            theta = take(ex, [0])
        else:
            q = variational_posterior(estimator, model, data)
            if q is None:
                raise NotImplementedError("cms needs exact_posterior_samples or a variational posterior")
            theta = {k: np.asarray(v, dtype=float) for k, v in q.mean().items()}
        z = (np.asarray(opts["exact_latents"])[None] if opts["exact_latents"] is not None
             else model.sample_latents(theta, data, rng))
        log_num = float(model.log_prior(theta)[0] + model.log_latent_prior(theta, z, data)[0]
                        + model.log_complete_likelihood_per_case(theta, z, data).sum())
        log_theta_cond = float(model.log_param_conditional(theta, z, data)[0])
        zR = np.repeat(z, R, axis=0)
        s = rng.integers(0, S, size=R)  # position (0-based) of the state drawn from T~
        th = model.sample_params(zR, data, rng)          # T~: theta | z*, then z | theta
        zc = model.sample_latents(th, data, rng)
        terms = [model.log_latent_conditional(th, zR, data)]
        # forward with T from x_s: S - 1 - s more states; backward with T~: s states
        f_th, f_z = th, zc
        b_th, b_z = th, zc
        for j in range(1, S):
            f_z = model.sample_latents(f_th, data, rng)
            f_th = model.sample_params(f_z, data, rng)
            b_th = model.sample_params(b_z, data, rng)
            b_z = model.sample_latents(b_th, data, rng)
            lf = model.log_latent_conditional(f_th, zR, data)
            lb = model.log_latent_conditional(b_th, zR, data)
            terms.append(np.where(j <= S - 1 - s, lf, -np.inf))
            terms.append(np.where(j <= s, lb, -np.inf))
        T = np.stack(terms)  # (2S - 1, R); exactly S finite entries per run
        log_denom = np.array([log_theta_cond + log_mean_exp(T[:, r][np.isfinite(T[:, r])])
                              for r in range(R)])
        runs = log_num - log_denom
        est, se = pool_runs(runs)
        return ScoreResult(self.name, est, "stochastic_lower",
                           log_alias_correction=self._log_alias(model, opts), stderr=se,
                           diagnostics={"run_estimates": runs.tolist(),
                                        "log_joint_at_point": log_num,
                                        "start_positions": s.tolist()})
