"""ScoringModels of the three latent-factor models of :mod:`sklearn_vb.bdmc_models`.

theta = the weight matrix W (K, D) (cluster means, low-rank components or binary
features), one real block with i.i.d. ``N(0, s^2)`` prior; ``ln p(X | W)`` is exact (labels
summed, Gaussian rows integrated, binary rows enumerated).  Beyond the core they provide
the latent-level group used by joint (theta, z) annealing, Chib-style estimators and
data-augmentation moves: exact tempered conditionals of the latents given W and of W
given the latents (``beta`` a number or one exponent per case), with their
log-densities (checked against the joint by the conditional-joint identity).  The
clustering and binary-attribute views also integrate W out given the latents of a set of
cases (``collapsed_add_case``, ``collapsed_sweep``: the state of the sequential Monte
Carlo with the weights collapsed, :mod:`._collapsed`).
``log_latent_prior(params, Z, X=None)`` takes the data as the discrete DAG's does (there a
hidden node may have observed parents); here the latents' prior does not involve it.
"""

from __future__ import annotations

import itertools
from math import lgamma

import numpy as np

from ._collapsed import (
    binary_collapsed_add,
    binary_collapsed_sweep,
    clustering_collapsed_add,
    clustering_collapsed_sweep,
)
from .kernels import complete_log_likelihood
from ._binary import (
    binary_log_likelihood_per_case,
    log_attribute_conditional,
    sample_attributes,
)
from ._clustering import (
    clustering_log_likelihood_per_case,
    log_label_conditional,
    sample_labels,
)
from ._common import (
    LOG_2PI,
    as_case_weights,
    log_weights_conditional,
    sample_weights_given_latents,
)
from ._low_rank import (
    log_latent_rows_conditional,
    low_rank_log_likelihood_per_case,
    sample_latent_rows,
)
from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.posteriors import FactorizedPosterior, GaussianQ, relabelled_mixture
from .._core.evidence.protocols import ScoringModelMixin

__all__ = ["ClusteringScoringModel", "LowRankScoringModel", "BinaryAttributesScoringModel"]


def _mask(included):
    return np.ascontiguousarray(np.asarray(included) != 0, dtype=np.bool_)


class _FactorScoringModel(ScoringModelMixin):
    #: the estimator's hyperparameter holding the prior standard deviation of W
    weight_sd_name = None

    def __init__(self, estimator):
        self.estimator = estimator
        self.name = estimator.weight_name
        self.K = int(estimator.n_components)
        self.D = int(estimator.n_features_in_)
        self.weight_var = float(getattr(estimator, self.weight_sd_name)) ** 2
        self.noise_var = float(estimator.noise_sd) ** 2
        self.param_space = ParamSpace([ParamBlock(self.name, (self.K, self.D), "real")])

    # ------------------------------------------------------------------ core
    def prepare_data(self, X, **fit_params):
        return self.estimator.check_data(X, **fit_params)

    def n_cases(self, X):
        return int(X.shape[0])

    def n_parameters(self):
        return self.K * self.D

    def n_aliases(self):
        """K! relabellings of the components (the symmetry correction of VB)."""
        return int(round(np.exp(lgamma(self.K + 1))))

    def permute_states(self, params, perm):
        """The batch with its components relabelled (rows of W): new ``k`` is old
        ``perm[k]``."""
        return {self.name: np.asarray(params[self.name])[:, np.asarray(perm, dtype=np.int64)]}

    def alias_posterior(self, q=None, max_components=24):
        """Equal-weight mixture of ``q`` (default: the fitted q) over the K! relabellings
        of the components; a ValueError when K! exceeds ``max_components``."""
        if self.n_aliases() > max_components:
            raise ValueError(f"{self.n_aliases()} aliases exceed "
                             f"max_components={max_components}.")
        q = self.variational_posterior() if q is None else q
        return relabelled_mixture(q, list(itertools.permutations(range(self.K))),
                                  self.permute_states)

    def log_prior(self, params):
        W = np.asarray(params[self.name], dtype=float)
        return (-0.5 * np.sum(W * W, axis=(1, 2)) / self.weight_var
                - 0.5 * self.K * self.D * (LOG_2PI + np.log(self.weight_var)))

    def sample_prior(self, rng, size):
        rng = np.random.default_rng(rng)
        return {self.name: np.sqrt(self.weight_var) * rng.standard_normal((int(size), self.K, self.D))}

    def log_likelihood(self, params, X):
        return self.log_likelihood_per_case(params, X).sum(axis=1)

    def log_likelihood_of_cases(self, params, X, cases):
        """``ln p(y_i | W)`` of the rows ``cases`` only, (C, len(cases)): the cases are
        independent given W, so this is the per-case likelihood of those rows."""
        return self.log_likelihood_per_case(params, X[np.asarray(cases, dtype=np.int64)])

    def kernel_prior_precision(self):
        return {self.name: 1.0 / self.weight_var}

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        rng = np.random.default_rng(rng)
        W = np.asarray(params_single[self.name], dtype=float)[0]
        Z = self.sample_latents_prior({self.name: W[None]}, int(n_cases), rng)
        Y = self._design_batch(Z)[0] @ W + np.sqrt(self.noise_var) * rng.standard_normal(
            (int(n_cases), self.D))
        return Y, Z[0]

    def variational_posterior(self, X=None):
        """q(W) of the fit: columns of W independent with a shared K x K covariance."""
        mean, cov = self._q_moments()
        return FactorizedPosterior([GaussianQ(self.name, mean, np.kron(cov, np.eye(self.D)))])

    # ------------------------------------------------------------------ latent level
    def _design_batch(self, Z):
        return np.asarray(Z, dtype=float)

    def log_complete_likelihood_per_case(self, params, Z, X):
        """``ln p(y_i | z_i, W)``: (C, n)."""
        return complete_log_likelihood(np.ascontiguousarray(self._design_batch(Z)),
                                       np.ascontiguousarray(params[self.name], dtype=float),
                                       np.ascontiguousarray(X, dtype=float), self.noise_var)

    def sample_params(self, Z, X, rng, beta=1.0):
        """Exact draw of W from ``p(W) p(X | Z, W)^beta``."""
        b = as_case_weights(beta, X.shape[0])
        return {self.name: sample_weights_given_latents(self._design_batch(Z), X, rng, b,
                                                        self.weight_var, self.noise_var)}

    def log_param_conditional(self, params, Z, X, beta=1.0):
        b = as_case_weights(beta, X.shape[0])
        return log_weights_conditional(np.asarray(params[self.name], dtype=float),
                                       self._design_batch(Z), X, b, self.weight_var, self.noise_var)


class ClusteringScoringModel(_FactorScoringModel):
    """Scoring view of :class:`~sklearn_vb.bdmc_models.BayesianClustering`; latents are
    the labels (C, n)."""

    weight_sd_name = "mean_sd"

    def __init__(self, estimator):
        super().__init__(estimator)
        self.log_weights = estimator.log_weights_

    def _q_moments(self):
        e = self.estimator
        return e.means_, np.diag(e.mean_variances_)

    def kernel_curvature(self):
        return {self.name: 1.0 / (self.K * self.noise_var)}

    def log_likelihood_per_case(self, params, X):
        return clustering_log_likelihood_per_case(np.asarray(params[self.name], dtype=float), X,
                                                  self.log_weights, self.noise_var)

    def _design_batch(self, Z):
        return (np.asarray(Z)[..., None] == np.arange(self.K)).astype(float)

    def sample_latents_prior(self, params, n, rng):
        C = np.asarray(params[self.name]).shape[0]
        return rng.choice(self.K, size=(C, int(n)), p=np.exp(self.log_weights))

    def log_latent_prior(self, params, Z, X=None):
        return self.log_weights[np.asarray(Z)].sum(axis=1)

    def sample_latents(self, params, X, rng, beta=1.0):
        return sample_labels(np.asarray(params[self.name], dtype=float), X, rng, self.log_weights,
                             self.noise_var, beta)[0]

    def log_latent_conditional(self, params, Z, X, beta=1.0):
        return log_label_conditional(np.asarray(params[self.name], dtype=float), Z, X,
                                     self.log_weights, self.noise_var, beta)

    def collapsed_add_case(self, Z, X, included, case, rng):
        """Labels (C, n) with ``case`` drawn from ``p(z_case | Z_o, Y_o, y_case)`` (the
        means integrated out, ``o`` the cases marked in ``included``), and
        ``ln p(y_case | Z_o, Y_o)`` (C,)."""
        Z = np.array(Z, dtype=np.int64)
        u = rng.random(Z.shape[0])
        lp = clustering_collapsed_add(Z, np.ascontiguousarray(X, dtype=float),
                                      _mask(included), int(case), self.log_weights,
                                      self.weight_var, self.noise_var, u)
        return Z, lp

    def collapsed_sweep(self, Z, X, included, rng):
        """One collapsed Gibbs sweep over the labels of the included cases."""
        Z = np.array(Z, dtype=np.int64)
        u = rng.random(Z.shape)
        clustering_collapsed_sweep(Z, np.ascontiguousarray(X, dtype=float), _mask(included),
                                   self.log_weights, self.weight_var, self.noise_var, u)
        return Z


class BinaryAttributesScoringModel(_FactorScoringModel):
    """Scoring view of :class:`~sklearn_vb.bdmc_models.BayesianBinaryAttributes`; latents
    are binary (C, n, K)."""

    weight_sd_name = "feature_sd"

    def __init__(self, estimator):
        super().__init__(estimator)
        self.log_p, self.log_1mp = estimator.log_probs_

    def _q_moments(self):
        e = self.estimator
        return e.features_, e.feature_covariance_

    def kernel_curvature(self):
        return {self.name: float(np.mean(np.exp(self.log_p))) / self.noise_var}

    def log_likelihood_per_case(self, params, X):
        return binary_log_likelihood_per_case(np.asarray(params[self.name], dtype=float), X,
                                              self.log_p, self.log_1mp, self.noise_var)

    def sample_latents_prior(self, params, n, rng):
        C = np.asarray(params[self.name]).shape[0]
        return (rng.random((C, int(n), self.K)) < np.exp(self.log_p)).astype(float)

    def log_latent_prior(self, params, Z, X=None):
        Z = np.asarray(Z, dtype=float)
        return np.sum(Z * self.log_p + (1.0 - Z) * self.log_1mp, axis=(1, 2))

    def sample_latents(self, params, X, rng, beta=1.0):
        return sample_attributes(np.asarray(params[self.name], dtype=float), X, rng, self.log_p,
                                 self.log_1mp, self.noise_var, beta)[0]

    def log_latent_conditional(self, params, Z, X, beta=1.0):
        return log_attribute_conditional(np.asarray(params[self.name], dtype=float), Z, X,
                                         self.log_p, self.log_1mp, self.noise_var, beta)

    def _indices(self, Z):
        return np.ascontiguousarray(np.asarray(Z) @ (2 ** np.arange(self.K)), dtype=np.int64)

    def _bits(self, idx):
        return ((idx[..., None] >> np.arange(self.K)) & 1).astype(float)

    def collapsed_add_case(self, Z, X, included, case, rng):
        """Attributes (C, n, K) with the row of ``case`` drawn from ``p(z_case | Z_o, Y_o,
        y_case)`` (the features integrated out), and ``ln p(y_case | Z_o, Y_o)`` (C,)."""
        idx = self._indices(Z)
        u = rng.random(idx.shape[0])
        lp = binary_collapsed_add(idx, np.ascontiguousarray(X, dtype=float), _mask(included),
                                  int(case), self.log_p, self.log_1mp, self.weight_var,
                                  self.noise_var, u)
        return self._bits(idx), lp

    def collapsed_sweep(self, Z, X, included, rng):
        """One collapsed Gibbs sweep over the attribute rows of the included cases."""
        idx = self._indices(Z)
        u = rng.random(idx.shape)
        binary_collapsed_sweep(idx, np.ascontiguousarray(X, dtype=float), _mask(included),
                               self.log_p, self.log_1mp, self.weight_var, self.noise_var, u)
        return self._bits(idx)


class LowRankScoringModel(_FactorScoringModel):
    """Scoring view of :class:`~sklearn_vb.bdmc_models.BayesianLowRank`; latents are the
    rows of U (C, n, K)."""

    weight_sd_name = "component_sd"

    def __init__(self, estimator):
        super().__init__(estimator)
        self.latent_var = float(estimator.latent_sd) ** 2

    def _q_moments(self):
        e = self.estimator
        return e.components_, e.component_covariance_

    def kernel_curvature(self):
        return {self.name: self.latent_var / self.noise_var}

    def log_likelihood_per_case(self, params, X):
        return low_rank_log_likelihood_per_case(np.asarray(params[self.name], dtype=float), X,
                                                self.latent_var, self.noise_var)

    def sample_latents_prior(self, params, n, rng):
        C = np.asarray(params[self.name]).shape[0]
        return np.sqrt(self.latent_var) * rng.standard_normal((C, int(n), self.K))

    def log_latent_prior(self, params, Z, X=None):
        Z = np.asarray(Z, dtype=float)
        return (-0.5 * np.sum(Z * Z, axis=(1, 2)) / self.latent_var
                - 0.5 * Z.shape[1] * self.K * (LOG_2PI + np.log(self.latent_var)))

    def sample_latents(self, params, X, rng, beta=1.0):
        return sample_latent_rows(np.asarray(params[self.name], dtype=float), X, rng,
                                  self.latent_var, self.noise_var, beta)[0]

    def log_latent_conditional(self, params, Z, X, beta=1.0):
        return log_latent_rows_conditional(np.asarray(params[self.name], dtype=float), Z, X,
                                           self.latent_var, self.noise_var, beta)
