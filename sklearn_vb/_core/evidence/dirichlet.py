"""ScoringModels whose parameters are all Dirichlet rows: the conjugate machinery
shared by the discrete models (the categorical HMM and the discrete DAG)."""

from __future__ import annotations

import numpy as np

from ..distributions import (as_generator, dirichlet_kl, dirichlet_log_pdf, dirichlet_sample,
                               log_multivariate_beta)
from .params import ParamBlock, ParamSpace
from .point_em import best_point_em, posterior_then_draws
from .posteriors import DirichletQ, FactorizedPosterior
from .protocols import ScoringModelMixin, has

__all__ = ["DirichletBlocksModel", "dirichlet_evidence"]


def dirichlet_evidence(alpha, counts):
    """``sum over rows of ln B(alpha + N) - ln B(alpha)``: the log marginal likelihood of
    counts ``N`` under Dirichlet(alpha) rows (counts may be fractional and carry leading
    batch axes, which are kept)."""
    return np.sum(
        np.asarray(log_multivariate_beta(alpha + counts) - log_multivariate_beta(alpha))
        .reshape(np.shape(counts)[: np.ndim(counts) - np.ndim(alpha)] + (-1,)),
        axis=-1,
    )


class DirichletBlocksModel(ScoringModelMixin):
    """ScoringModel methods for models whose parameters are all Dirichlet rows.

    A subclass sets ``self.prior_alpha`` (block name -> Dirichlet hyperparameters, the
    rows along the last axis), calls :meth:`_init_space`, and provides the likelihood,
    ``prepare_data``, ``n_cases`` and ``e_step``; this class supplies the prior (density,
    sampler, parameter count), the conjugate updates from expected counts (MAP/ML point,
    q(theta), complete-data evidence, KL) and EM from prior draws.  Statistics are dicts
    ``name -> counts`` with the block's shape.
    """

    #: seeded draws screened per restart of the point EM (each with a budget that much
    #: shorter; see best_point_em).  One for these models in general; the HMM, whose MAP
    #: under sparse priors often lies in another basin than VB's, overrides it.
    point_draws_per_init = 1
    #: ``min_screen_iter`` of best_point_em: None keeps its fixed screening floors
    point_min_screen_iter = None

    def _init_space(self):
        self.param_space = ParamSpace(
            [ParamBlock(k, a.shape, "simplex") for k, a in self.prior_alpha.items()]
        )

    def log_prior(self, params):
        return self.log_dirichlet_blocks(params, self.prior_alpha)

    @staticmethod
    def log_dirichlet_blocks(params, alphas):
        """``sum over blocks and rows of ln Dir(theta_row | alpha_row)`` for a batch of
        parameter sets, (C,); ``alphas`` (block name -> concentrations) has each block's
        shape, or a leading batch axis of size C (e.g. a conjugate posterior per set)."""
        out = 0.0
        for k, a in alphas.items():
            lp = dirichlet_log_pdf(params[k], a)
            out = out + lp.reshape(lp.shape[0], -1).sum(axis=1)
        return np.asarray(out, dtype=float)

    def sample_prior(self, rng, size):
        rng = as_generator(rng)
        return {k: dirichlet_sample(a, rng, size=int(size)) for k, a in self.prior_alpha.items()}

    def log_complete_evidence(self, stats):
        """ln of the product of Dirichlet integrals at (fractional) expected counts."""
        return float(sum(dirichlet_evidence(a, stats[k]) for k, a in self.prior_alpha.items()))

    def n_parameters(self):
        return int(sum(a[..., 0].size * (a.shape[-1] - 1) for a in self.prior_alpha.values()))

    def point_from_stats(self, stats, kind="map", basis="softmax"):
        """M step: softmax basis ``lambda + N``; natural ``lambda + N - 1``; ML ``N``."""
        out = {}
        for k, a in self.prior_alpha.items():
            if kind == "ml":
                w = stats[k] + 1e-300
            elif basis == "natural":
                w = np.maximum(a + stats[k] - 1.0, 1e-300)
            else:
                w = a + stats[k]
            out[k] = (w / w.sum(axis=-1, keepdims=True))[None]
        return out

    def q_from_stats(self, stats):
        return FactorizedPosterior(
            [DirichletQ(k, a + stats[k]) for k, a in self.prior_alpha.items()]
        )

    def point_objective(self, theta, loglik, kind="map", basis="softmax"):
        """The objective EM climbs: ``l(theta)`` (ML), plus ``ln p(theta)`` (MAP), plus
        ``sum ln theta`` over every row (MAP in the softmax basis, where the M step is
        ``lambda + N``)."""
        obj = float(loglik)
        if kind != "ml":
            obj += float(self.log_prior(theta)[0])
            if basis == "softmax":
                obj += float(self.param_space.log_det_jacobian(theta)[0])
        return obj

    def point_of_posterior(self, q, kind="map", basis="softmax"):
        """The point of ``q(theta)`` (Dirichlet rows ``alpha_q``) in the EM's basis: the
        M step applied to its counts ``alpha_q - alpha_prior`` (the posterior mean for the
        softmax basis, the mode for the natural one)."""
        stats = {k: np.maximum(q[k].alpha - a, 0.0) for k, a in self.prior_alpha.items()}
        return self.point_from_stats(stats, kind, basis)

    def _fitted_posterior(self, X):
        if not has(self, "variational_posterior"):
            return None
        try:
            return self.variational_posterior(X)
        except NotImplementedError:  # e.g. a DAG fitted by EM: no q(theta)
            return None

    def fit_point(self, X, kind="map", basis="softmax", rng=None, n_init=3, max_iter=1000,
                  tol_per_case=1e-8):
        """EM for the MAP (softmax basis by default) or ML point, best of ``n_init`` runs.

        With a fitted q(theta) (``variational_posterior``) the first run starts at its
        point in the EM's basis (:meth:`point_of_posterior`); every other run, and every
        run without q, starts at a seeded prior draw.  Runs after the
        first are screened (:func:`~sklearn_vb._core.evidence.point_em.best_point_em`).
        A run stops when the objective changes by less than ``tol_per_case * n``; a best
        run that reaches ``max_iter`` raises a ``ConvergenceWarning``.
        """
        rng = as_generator(rng)
        n = max(1, self.n_cases(X))
        q = self._fitted_posterior(X)

        def prior_draw():
            return self.sample_prior(rng, 1)

        if q is None:
            start = lambda i: prior_draw()  # noqa: E731
        else:
            start = posterior_then_draws(lambda: self.point_of_posterior(q, kind, basis),
                                         prior_draw)

        def evaluate(theta):
            if has(self, "loglik_and_stats"):  # no entropy or expected log-likelihood
                loglik, stats = self.loglik_and_stats(theta, X)
            else:
                e = self.e_step(theta, X)
                loglik, stats = e.loglik, e.stats
            return self.point_objective(theta, loglik, kind, basis), stats

        run = best_point_em(start, evaluate, lambda stats, _: self.point_from_stats(stats, kind, basis),
                            n_init=n_init, max_iter=max_iter, tol=tol_per_case * n,
                            owner=type(self).__name__, space=self.param_space,
                            draws_per_init=self.point_draws_per_init,
                            min_screen_iter=self.point_min_screen_iter)
        self.last_point_run_ = run
        return run.theta

    def log_joint_gradient(self, params_single, X):
        """``(ln p(theta) + ln p(X | theta), gradient)`` at one parameter set, the gradient
        (block name -> array of the block's batch shape) in the constrained row entries:
        ``(alpha - 1 + N) / theta`` with ``N`` the expected counts of the exact E step
        (Fisher's identity: the gradient of ``ln p(X | theta)`` is the posterior expectation
        of the complete-data gradient ``N / theta``).  Costs one E step."""
        e = self.e_step(params_single, X)
        value = float(self.log_prior(params_single)[0]) + e.loglik
        with np.errstate(divide="ignore", invalid="ignore"):
            grads = {k: (a - 1.0 + np.asarray(e.stats[k], dtype=float))[None]
                     / np.asarray(params_single[k], dtype=float)
                     for k, a in self.prior_alpha.items()}
        return value, grads

    def variational_posterior_from(self, alphas):
        return FactorizedPosterior([DirichletQ(k, np.asarray(alphas[k], dtype=float))
                                    for k in self.prior_alpha])

    def kl_q_prior(self, stats):
        return float(sum(np.sum(dirichlet_kl(a + stats[k], a)) for k, a in self.prior_alpha.items()))
