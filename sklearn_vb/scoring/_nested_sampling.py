"""Nested sampling (Skilling 2006).

``K`` live particles start from the prior; each iteration removes the one of lowest
likelihood ``L*``, credits it with the prior-volume shell ``X_{t-1} - X_t``
(``X_t = exp(-t / K)``, the expected shrinkage, Grosse, Ghahramani & Adams 2015 eq. 47)
and replaces it by a copy of another live particle moved by ``n_steps`` random-walk
Metropolis steps that leave the prior restricted to ``L > L*`` invariant.  A run stops
when the live particles can add at most ``e^-stop_tol`` of the current estimate; the
live particles then fill the remaining volume.  The likelihood is the exact
``p(X | theta)`` (latents summed or integrated out).

Not a stochastic bound of either kind: the volume shrinkage is only right on average and
only for exact constrained draws; Grosse et al. found it under-estimates on average but
over-estimates too often to be a stochastic lower bound.  The random-walk scale of each
run adapts to its acceptance rate (allowed here, as there is no unbiasedness to keep).
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.mcmc_moves import estimate_prior_precision
from .._core.evidence.params import take
from .._core.evidence.protocols import require
from .._core.numerics import as_seed_sequence, interval_stderr
from ._base import Scorer, prepare_data, resolve_model
from ._result import ScoreResult
from ._smc import pool_runs

__all__ = ["NestedSamplingScore"]


class NestedSamplingScore(Scorer):
    """Nested sampling estimate of ln p(X) (``bound="approx"``).

    Options: ``n_live`` (K live particles, at least 2; Grosse et al. found 2 best at
    modest cost), ``n_steps`` (constrained random-walk steps per iteration), ``n_runs``
    (independent runs, advanced together; pooled by the mean of their log estimates, as
    in Grosse et al.), ``stop_tol`` (nats), ``max_iter`` per run.  Cost: ``n_runs
    n_steps`` likelihood evaluations per iteration and about ``K (H + stop_tol)``
    iterations, H the information (KL from prior to posterior) in nats.

    Error bars: ``stderr`` is the larger of the volume-shrinkage error ``sqrt(H / K)`` of
    one run (Skilling 2006) over ``sqrt(R)`` (``diagnostics["stderr_volume"]``, H
    estimated from each run) and the spread of the R run estimates widened for its
    ``R - 1`` degrees of freedom (``["stderr_between_runs"]``), so that ``+- 2 stderr``
    covers like a normal ``+- 2 sigma`` interval even with the default four runs.
    """

    name = "nested_sampling"
    options = {"n_live": 16, "n_steps": 20, "n_runs": 4, "stop_tol": 10.0, "max_iter": 200000}

    def _score(self, estimator, X, fit_params, opts):
        model = resolve_model(estimator, self.name)
        require(model, self.name, "log_prior", "sample_prior", "log_likelihood")
        data = prepare_data(model, X, fit_params)
        K, R, n_steps = int(opts["n_live"]), int(opts["n_runs"]), int(opts["n_steps"])
        if K < 2 or R < 1 or n_steps < 1:
            raise ValueError("n_live must be >= 2, n_runs and n_steps >= 1.")
        rng = np.random.default_rng(as_seed_sequence(opts["random_state"]))
        space = model.param_space
        prec = estimate_prior_precision(model)
        sd = np.concatenate([np.broadcast_to(1.0 / np.sqrt(np.asarray(prec[b.name], dtype=float)),
                                             (b.dim,)) for b in space.blocks if b.dim > 0])

        all_real = all(b.constraint == "real" for b in space.blocks)

        def log_prior_phi(phi):
            if all_real:  # the identity map: no copies, no Jacobian
                params = {b.name: phi[:, space.slices[b.name]].reshape((phi.shape[0],) + b.shape)
                          for b in space.blocks}
                return params, np.asarray(model.log_prior(params), dtype=float)
            params, logdet = space.from_unconstrained(phi)
            return params, np.asarray(model.log_prior(params), dtype=float) + logdet

        params = model.sample_prior(rng, R * K)
        phi = space.to_unconstrained(params).reshape(R, K, -1)
        ll = np.asarray(model.log_likelihood(params, data), dtype=float).reshape(R, K)
        _, lp = log_prior_phi(phi.reshape(R * K, -1))
        lp = lp.reshape(R, K)
        log_z = np.full(R, -np.inf)
        mean_ll = np.zeros(R)  # posterior-weighted mean of ln L so far, for the information H
        log_x = np.zeros(R)
        shell = np.log1p(-np.exp(-1.0 / K))  # ln(1 - e^{-1/K}): shell = X_{t-1} (1 - e^{-1/K})
        active = np.ones(R, dtype=bool)
        scale = np.full(R, 0.5)
        rows = np.arange(R)
        n_iter = np.zeros(R, dtype=int)
        for it in range(int(opts["max_iter"])):
            worst = np.argmin(ll, axis=1)
            l_star = ll[rows, worst]
            term = log_x + shell + l_star
            new_z = np.where(active, np.logaddexp(log_z, term), log_z)
            mean_ll = np.where(active, _running_mean(mean_ll, log_z, new_z, l_star, term), mean_ll)
            log_z = new_z
            log_x = np.where(active, log_x - 1.0 / K, log_x)
            n_iter += active
            # replace the worst by a copy of another live particle, then move it
            other = (worst + rng.integers(1, K, size=R)) % K
            cur = phi[rows, other].copy()
            cur_lp, cur_ll = lp[rows, other].copy(), ll[rows, other].copy()
            n_acc = np.zeros(R)
            for _ in range(n_steps):
                prop = cur + (scale[:, None] * sd) * rng.standard_normal(cur.shape)
                p_params, p_lp = log_prior_phi(prop)
                # the likelihood only where the prior's Metropolis test passes (it draws
                # no random numbers, so the chain is the same as evaluating it everywhere)
                ok = np.log(rng.random(R)) < p_lp - cur_lp
                p_ll = np.full(R, -np.inf)
                if ok.all():
                    p_ll = np.asarray(model.log_likelihood(p_params, data), dtype=float)
                elif ok.any():
                    rows_ok = np.flatnonzero(ok)
                    p_ll[rows_ok] = model.log_likelihood(take(p_params, rows_ok), data)
                ok &= p_ll > l_star
                cur = np.where(ok[:, None], prop, cur)
                cur_lp = np.where(ok, p_lp, cur_lp)
                cur_ll = np.where(ok, p_ll, cur_ll)
                n_acc += ok
            rate = n_acc / n_steps
            scale = np.where(rate < 0.2, scale * 0.7, np.where(rate > 0.5, scale * 1.3, scale))
            upd = active
            phi[rows[upd], worst[upd]] = cur[upd]
            lp[rows[upd], worst[upd]] = cur_lp[upd]
            ll[rows[upd], worst[upd]] = cur_ll[upd]
            remaining = log_x + np.max(ll, axis=1)
            active &= ~(remaining < log_z - float(opts["stop_tol"]))
            if opts["verbose"] and it % 1000 == 0:
                print(f"[nested_sampling] iteration {it}: estimates {np.round(log_z, 3)}", flush=True)
            if not active.any():
                break
        # the live particles share the remaining volume equally
        fill = log_x + np.log(np.mean(np.exp(ll - ll.max(axis=1, keepdims=True)), axis=1)) + ll.max(axis=1)
        runs = np.logaddexp(log_z, fill)
        for j in range(K):  # the live particles, each with an equal share of the volume
            term = log_x - np.log(K) + ll[:, j]
            new_z = np.logaddexp(log_z, term)
            mean_ll = _running_mean(mean_ll, log_z, new_z, ll[:, j], term)
            log_z = new_z
        info = np.maximum(mean_ll - runs, 0.0)  # H = E_post[ln L] - ln Z, in nats
        est = float(np.mean(runs))
        # two error sources: the random shrinkage of the prior volume, whose spread is
        # sqrt(H / K) per run (Skilling 2006, section 7), and everything else (inexact
        # constrained moves), which only the spread of independent runs shows; the
        # larger of the two, the run spread widened for its few degrees of freedom
        se_volume = float(np.sqrt(np.mean(info) / K / R))
        se_runs = interval_stderr(runs)
        se = se_volume if se_runs is None else max(se_runs, se_volume)
        return ScoreResult(self.name, est, "approx",
                           log_alias_correction=self._log_alias(model, opts), stderr=se,
                           diagnostics={"run_estimates": runs.tolist(), "n_iter": n_iter.tolist(),
                                        "converged": bool(not active.any()),
                                        "pooled_mean_of_z": pool_runs(runs)[0],
                                        "information": info.tolist(),
                                        "stderr_volume": se_volume,
                                        "stderr_between_runs": se_runs})


def _running_mean(mean, log_z_old, log_z_new, value, log_weight):
    """The posterior-weighted mean of ``value`` after adding a point of log-weight
    ``log_weight`` (``log_z_old`` and ``log_z_new``: log total weight before and after)."""
    with np.errstate(invalid="ignore"):
        keep = np.where(np.isfinite(log_z_old), np.exp(log_z_old - log_z_new), 0.0)
        add = np.exp(log_weight - log_z_new)
    return mean * keep + np.where(add > 0, value * add, 0.0)
