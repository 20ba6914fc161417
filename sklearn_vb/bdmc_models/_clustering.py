"""Bayesian clustering with unknown means and fixed spherical variance.

``z_i ~ Categorical(pi)``, ``mu_kj ~ N(0, mean_sd^2)``, ``y_ij ~ N(mu_{z_i j}, noise_sd^2)``
with ``pi``, ``mean_sd`` and ``noise_sd`` fixed (the clustering model of Grosse,
Ghahramani & Adams 2015, §6; a Bayesian analogue of K-means).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval

from .kernels import (
    clustering_log_conditional,
    clustering_log_likelihood,
    clustering_sample_labels,
)
from .._core.base import Step
from ._common import (
    LOG_2PI,
    FactorModelBase,
    as_case_weights,
    collapsed_log_likelihood,
    gaussian_columns_kl,
)

__all__ = ["BayesianClustering", "clustering_log_evidence", "clustering_log_likelihood_per_case",
           "sample_labels", "log_label_conditional"]


def _log_weights(weights, K):
    w = np.full(K, 1.0 / K) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (K,) or np.any(w <= 0):
        raise ValueError(f"weights must be {K} positive numbers, got {weights!r}.")
    return np.log(w / w.sum())


def _component_loglik(means, Y, noise_var):
    """``ln N(y_i; mu_k, noise_var I)`` for every chain, case and component: (C, n, K)."""
    D = Y.shape[1]
    sq = (np.sum(Y * Y, axis=1)[None, :, None] - 2.0 * Y[None] @ means.transpose(0, 2, 1)
          + np.sum(means * means, axis=2)[:, None, :])
    return -0.5 * np.maximum(sq, 0.0) / noise_var - 0.5 * D * (LOG_2PI + np.log(noise_var))


def clustering_log_likelihood_per_case(means, Y, log_weights, noise_var):
    """Exact ``ln p(y_i | mu)`` (labels summed out): (C, n)."""
    return clustering_log_likelihood(np.ascontiguousarray(means, dtype=float),
                                     np.ascontiguousarray(Y, dtype=float), log_weights,
                                     float(noise_var))


def clustering_log_evidence(Y, n_components, mean_sd=1.0, noise_sd=1.0, weights=None,
                            max_assignments=2_000_000):
    """Exact ``ln p(Y)`` by enumerating every labelling (means integrated out in closed
    form).  Cost ``n_components ** n_samples``; for tests on tiny data.

    The evidence of the clustering model of Grosse, Ghahramani & Adams (2015), §6,
    with the same defaults as :class:`BayesianClustering`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.bdmc_models import clustering_log_evidence
    >>> Y = np.array([[0.1, -0.2], [1.9, 2.2], [2.1, 1.8]])
    >>> round(clustering_log_evidence(Y, n_components=2), 3)
    -10.943
    >>> # one cluster: each column is jointly Gaussian with covariance I + 11^T
    >>> from scipy.stats import multivariate_normal
    >>> cov = np.eye(3) + np.ones((3, 3))
    >>> exact = sum(multivariate_normal(np.zeros(3), cov).logpdf(Y[:, d]) for d in range(2))
    >>> bool(np.isclose(clustering_log_evidence(Y, n_components=1), exact))
    True
    """
    Y = np.asarray(Y, dtype=float)
    n = Y.shape[0]
    K = int(n_components)
    if K**n > max_assignments:
        raise ValueError(f"{K}**{n} labellings are too many to enumerate.")
    lw = _log_weights(weights, K)
    labels = np.indices((K,) * n).reshape(n, -1).T
    out = []
    for chunk in np.array_split(labels, max(1, labels.shape[0] // 4096)):
        Z = (chunk[:, :, None] == np.arange(K)).astype(float)
        out.append(lw[chunk].sum(axis=1)
                   + collapsed_log_likelihood(Y, Z, mean_sd**2, noise_sd**2))
    return float(logsumexp(np.concatenate(out)))


class BayesianClustering(FactorModelBase):
    """Variational Bayesian clustering: spherical Gaussian mixture with unknown means.

    Parameters
    ----------
    n_components : int, default=10
    mean_sd : float, default=1.0
        Prior standard deviation of every coordinate of every cluster mean.
    noise_sd : float, default=1.0
        Fixed within-cluster standard deviation.
    weights : array-like (n_components,) or None, default=None
        Fixed mixing proportions (None: uniform).
    max_iter, tol, n_init, init_params, random_state, warm_start, verbose,
    verbose_interval, bound_check
        See :class:`~sklearn_vb.base.VBEMEstimator`.  ``init_params="random"``: means at
        distinct random rows of ``X``.

    Attributes
    ----------
    resp_ : ndarray (n_samples, n_components)
        q(z).
    means_ : ndarray (n_components, n_features)
        Posterior means of the cluster centres.
    mean_variances_ : ndarray (n_components,)
        Posterior variance of every coordinate of each centre.
    lower_bound_ : float
        The variational lower bound on ln p(X) in nats.

    Notes
    -----
    Exact ``ln p(X)`` of tiny data sets: :func:`clustering_log_evidence`.  The scoring
    layer (``sklearn_vb.scoring.score``) sees the means as the parameters and sums the
    labels out exactly.

    The clustering model of Grosse, Ghahramani & Adams (2015), §6 (fixed mixing
    proportions, between-cluster and within-cluster variances); variational Bayes is
    their §5.1.

    Examples
    --------
    Data simulated from the prior; the bound lies below the exact evidence:

    >>> from sklearn_vb.bdmc_models import BayesianClustering, clustering_log_evidence
    >>> model = BayesianClustering(n_components=2, random_state=0)
    >>> Y, params, labels = model.simulate(8, 3, random_state=0)
    >>> Y.shape, params["means"].shape, labels.tolist()
    ((8, 3), (2, 3), [0, 0, 0, 1, 1, 0, 1, 1])
    >>> model.fit(Y).means_.shape
    (2, 3)
    >>> bool(model.lower_bound_ <= clustering_log_evidence(Y, n_components=2))
    True
    """

    _parameter_constraints = {
        **FactorModelBase._parameter_constraints,
        "mean_sd": [Interval(Real, 0, None, closed="neither")],
        "weights": ["array-like", None],
    }

    weight_name = "means"

    def __init__(self, n_components=10, *, mean_sd=1.0, noise_sd=1.0, weights=None,
                 max_iter=500, tol=1e-8, n_init=5, init_params="random", random_state=None,
                 warm_start=False, verbose=0, verbose_interval=10, bound_check="raise"):
        super().__init__(max_iter=max_iter, tol=tol, n_init=n_init, init_params=init_params,
                         random_state=random_state, warm_start=warm_start, verbose=verbose,
                         verbose_interval=verbose_interval, bound_check=bound_check)
        self.n_components = n_components
        self.mean_sd = mean_sd
        self.noise_sd = noise_sd
        self.weights = weights

    # ------------------------------------------------------------------ model pieces
    @property
    def log_weights_(self):
        return _log_weights(self.weights, self.n_components)

    def _weight_sd(self):
        return float(self.mean_sd)

    def _sample_latents_prior(self, rng, n):
        return rng.choice(self.n_components, size=n, p=np.exp(self.log_weights_))

    def _design(self, Z):
        return (np.asarray(Z)[:, None] == np.arange(self.n_components)).astype(float)

    def _weight_mean(self):
        return self.means_

    def _log_likelihood_per_case(self, W, Y):
        return clustering_log_likelihood_per_case(W, Y, self.log_weights_, self._noise_var)

    # ------------------------------------------------------------------ VBEM
    def _initialize(self, data, random_state):
        if self.init_params != "random":
            raise ValueError(f"init_params must be 'random'; got {self.init_params!r}.")
        n = data.shape[0]
        rows = random_state.choice(n, size=self.n_components, replace=n < self.n_components)
        self.means_ = data[rows].copy()
        self.mean_variances_ = np.full(self.n_components, float(self.mean_sd) ** 2)
        self._step_vbe(data, 0)

    def _set_latent_point(self, latents, n):
        self._check_latents(latents, n, (n,))
        if not np.issubdtype(latents.dtype, np.integer) or latents.min() < 0 \
                or latents.max() >= self.n_components:
            raise ValueError(f"latents must be labels in [0, {self.n_components}).")
        self.resp_ = self._design(latents)

    def _iteration_steps(self):
        return (Step("vbm", self._step_vbm), Step("vbe", self._step_vbe))

    def _step_vbm(self, data, iteration):
        counts = self.resp_.sum(axis=0)
        prec = 1.0 / float(self.mean_sd) ** 2 + counts / self._noise_var
        self.mean_variances_ = 1.0 / prec
        self.means_ = self.mean_variances_[:, None] * (self.resp_.T @ data) / self._noise_var

    def _expected_log_joint(self, Y):
        D = Y.shape[1]
        ll = _component_loglik(self.means_[None], Y, self._noise_var)[0]
        return self.log_weights_ + ll - 0.5 * D * self.mean_variances_ / self._noise_var

    def _step_vbe(self, data, iteration):
        lj = self._expected_log_joint(data)
        self.resp_ = np.exp(lj - logsumexp(lj, axis=1, keepdims=True))

    def _lower_bound(self, data):
        r = self.resp_
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -np.sum(np.where(r > 0, r * np.log(r), 0.0))
        kl = sum(gaussian_columns_kl(self.means_[k][None], np.array([[self.mean_variances_[k]]]),
                                     float(self.mean_sd) ** 2) for k in range(self.n_components))
        return float(np.sum(r * self._expected_log_joint(data)) + entropy - kl)

    def predict(self, X):
        """The most probable cluster of each row under q."""
        self._check_is_fitted()
        Y = self._check_Y(X, reset=False)
        return np.argmax(self._expected_log_joint(Y), axis=1)


def sample_labels(means, Y, rng, log_weights, noise_var, beta=1.0):
    """Exact draw of the labels (C, n) from ``p(z | mu) p(Y | z, mu)^beta`` and the log
    of its probability (C,); one uniform per case, drawn chain by chain."""
    means = np.ascontiguousarray(means, dtype=float)
    b = as_case_weights(beta, Y.shape[0])
    u = rng.random(means.shape[0] * Y.shape[0]).reshape(means.shape[0], Y.shape[0])
    z, logp = clustering_sample_labels(means, np.ascontiguousarray(Y, dtype=float),
                                       log_weights, float(noise_var), b, u)
    return z, logp.sum(axis=1)


def log_label_conditional(means, labels, Y, log_weights, noise_var, beta=1.0):
    """``ln p_beta(z | mu, Y)`` of labels (C, n): (C,)."""
    return clustering_log_conditional(np.ascontiguousarray(means, dtype=float),
                                      np.ascontiguousarray(labels, dtype=np.int64),
                                      np.ascontiguousarray(Y, dtype=float), log_weights,
                                      float(noise_var), as_case_weights(beta, Y.shape[0]))
