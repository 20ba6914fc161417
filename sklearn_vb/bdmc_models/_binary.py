"""Binary attributes: ``Y = Z A + noise`` with a binary ``Z``.

``z_ik ~ Bernoulli(pi_k)``, ``a_kj ~ N(0, feature_sd^2)``,
``y_ij ~ N(sum_k z_ik a_kj, noise_sd^2)``, every hyperparameter fixed (the binary
attribute model of Grosse, Ghahramani & Adams 2015, §6: the linear-Gaussian Indian
buffet model with a fixed number of attributes and fixed probabilities).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import expit, logsumexp
from sklearn.utils._param_validation import Interval

from .kernels import (
    binary_log_conditional,
    binary_log_likelihood,
    binary_sample_attributes,
)
from .._core.base import Step
from ._common import (
    LOG_2PI,
    FactorModelBase,
    as_case_weights,
    collapsed_log_likelihood,
    gaussian_columns_kl,
)

__all__ = ["BayesianBinaryAttributes", "binary_attributes_log_evidence", "all_configurations"]

#: exact per-case enumeration of the 2^K attribute vectors is refused beyond this K
MAX_ENUMERATED_ATTRIBUTES = 14


def all_configurations(K):
    """Every binary vector of length K as the rows of a (2^K, K) float array."""
    if K > MAX_ENUMERATED_ATTRIBUTES:
        raise ValueError(f"exact enumeration of 2^{K} attribute vectors is refused "
                         f"(at most {MAX_ENUMERATED_ATTRIBUTES} attributes).")
    return ((np.arange(2**K)[:, None] >> np.arange(K)) & 1).astype(float)


def _log_probs(attribute_prob, K):
    p = np.broadcast_to(np.asarray(attribute_prob, dtype=float), (K,))
    if np.any(p <= 0) or np.any(p >= 1):
        raise ValueError(f"attribute_prob must lie in (0, 1), got {attribute_prob!r}.")
    return np.log(p), np.log1p(-p)


def _attribute_args(features, Y, log_p, log_1mp):
    return (np.ascontiguousarray(features, dtype=float), np.ascontiguousarray(Y, dtype=float),
            np.ascontiguousarray(log_p, dtype=float), np.ascontiguousarray(log_1mp, dtype=float))


def _check_enumerable(K):
    if K > MAX_ENUMERATED_ATTRIBUTES:
        raise ValueError(f"exact enumeration of 2^{K} attribute vectors is refused "
                         f"(at most {MAX_ENUMERATED_ATTRIBUTES} attributes).")


def binary_log_likelihood_per_case(features, Y, log_p, log_1mp, noise_var):
    """Exact ``ln p(y_i | A)`` (the 2^K attribute vectors of each case summed out by
    enumeration): (C, n)."""
    _check_enumerable(np.shape(features)[1])
    return binary_log_likelihood(*_attribute_args(features, Y, log_p, log_1mp), float(noise_var))


def sample_attributes(features, Y, rng, log_p, log_1mp, noise_var, beta=1.0):
    """Exact draw of Z (C, n, K) from ``p(Z) p(Y | Z, A)^beta`` (each case's attribute
    vector drawn jointly, one uniform per case) and its log-probability (C,)."""
    K = np.shape(features)[1]
    _check_enumerable(K)
    args = _attribute_args(features, Y, log_p, log_1mp)
    C, n = args[0].shape[0], args[1].shape[0]
    b = as_case_weights(beta, n)
    u = rng.random(C * n).reshape(C, n)
    idx, logp = binary_sample_attributes(*args, float(noise_var), b, u)
    return ((idx[..., None] >> np.arange(K)) & 1).astype(float), logp.sum(axis=1)


def log_attribute_conditional(features, Z, Y, log_p, log_1mp, noise_var, beta=1.0):
    """``ln p_beta(Z | A, Y)`` of attributes Z (C, n, K): (C,)."""
    K = np.shape(features)[1]
    _check_enumerable(K)
    idx = (np.asarray(Z) @ (2 ** np.arange(K))).astype(np.int64)
    A, Y, log_p, log_1mp = _attribute_args(features, Y, log_p, log_1mp)
    return binary_log_conditional(A, idx, Y, log_p, log_1mp, float(noise_var),
                                  as_case_weights(beta, Y.shape[0]))


def binary_attributes_log_evidence(Y, n_components, feature_sd=1.0, noise_sd=1.0,
                                   attribute_prob=0.5, max_assignments=2_000_000):
    """Exact ``ln p(Y)`` by enumerating every binary Z (features integrated out in closed
    form).  Cost ``2 ** (n_samples n_components)``; for tests on tiny data.

    The evidence of the binary-attribute model of Grosse, Ghahramani & Adams (2015), §6,
    with the same defaults as :class:`BayesianBinaryAttributes`.

    Examples
    --------
    With one attribute that is always off (``attribute_prob`` near 0) the data are pure
    noise, ``N(0, 1)`` per entry:

    >>> import numpy as np
    >>> from scipy.stats import norm
    >>> from sklearn_vb.bdmc_models import binary_attributes_log_evidence
    >>> Y = np.array([[0.5, -1.0], [1.5, 0.2]])
    >>> value = binary_attributes_log_evidence(Y, n_components=1, attribute_prob=1e-12)
    >>> bool(np.isclose(value, norm.logpdf(Y).sum()))
    True
    >>> round(binary_attributes_log_evidence(Y, n_components=2), 3)
    -5.849
    """
    Y = np.asarray(Y, dtype=float)
    n = Y.shape[0]
    K = int(n_components)
    if 2 ** (n * K) > max_assignments:
        raise ValueError(f"2**{n * K} attribute matrices are too many to enumerate.")
    log_p, log_1mp = _log_probs(attribute_prob, K)
    allz = all_configurations(n * K) if n * K <= MAX_ENUMERATED_ATTRIBUTES else \
        ((np.arange(2 ** (n * K))[:, None] >> np.arange(n * K)) & 1).astype(float)
    out = []
    for chunk in np.array_split(allz, max(1, allz.shape[0] // 4096)):
        Z = chunk.reshape(-1, n, K)
        prior = np.sum(Z * log_p + (1.0 - Z) * log_1mp, axis=(1, 2))
        out.append(prior + collapsed_log_likelihood(Y, Z, feature_sd**2, noise_sd**2))
    return float(logsumexp(np.concatenate(out)))


class BayesianBinaryAttributes(FactorModelBase):
    """Variational Bayesian binary-attribute model ``Y = Z A + noise``.

    Parameters
    ----------
    n_components : int, default=10
        Number of binary attributes K.
    attribute_prob : float or array-like (n_components,), default=0.5
        Fixed probability that an attribute is on.
    feature_sd : float, default=1.0
        Prior standard deviation of every entry of A.
    noise_sd : float, default=1.0
    max_iter, tol, n_init, init_params, random_state, warm_start, verbose,
    verbose_interval, bound_check
        See :class:`~sklearn_vb.base.VBEMEstimator`.  ``init_params="random"``: uniform
        random q(z).

    Attributes
    ----------
    attribute_probs_ : ndarray (n_samples, n_components)
        Mean-field q(z_ik = 1).
    features_ : ndarray (n_components, n_features)
        Posterior mean of A.
    feature_covariance_ : ndarray (n_components, n_components)
        Posterior covariance of each column of A.
    lower_bound_ : float

    Notes
    -----
    Exact ``ln p(X)`` of tiny data sets: :func:`binary_attributes_log_evidence`.  The
    scoring layer sums Z out exactly by enumerating the 2^K vectors of each row (K at
    most 14).

    The binary-attribute model of Grosse, Ghahramani & Adams (2015), §6 (fixed attribute
    probabilities, feature and noise variances); variational Bayes is their §5.1, here
    with a mean-field q(Z).

    Examples
    --------
    >>> from sklearn_vb.bdmc_models import (BayesianBinaryAttributes,
    ...                                     binary_attributes_log_evidence)
    >>> model = BayesianBinaryAttributes(n_components=2, random_state=0)
    >>> Y, params, Z = model.simulate(6, 3, random_state=0)
    >>> Y.shape, params["features"].shape, Z.shape
    ((6, 3), (2, 3), (6, 2))
    >>> model.fit(Y).attribute_probs_.shape       # q(z_ik = 1)
    (6, 2)
    >>> bool(model.lower_bound_ <= binary_attributes_log_evidence(Y, n_components=2))
    True
    """

    _parameter_constraints = {
        **FactorModelBase._parameter_constraints,
        "feature_sd": [Interval(Real, 0, None, closed="neither")],
        "attribute_prob": ["array-like", Interval(Real, 0, 1, closed="neither")],
    }

    weight_name = "features"

    def __init__(self, n_components=10, *, attribute_prob=0.5, feature_sd=1.0, noise_sd=1.0,
                 max_iter=500, tol=1e-8, n_init=5, init_params="random", random_state=None,
                 warm_start=False, verbose=0, verbose_interval=10, bound_check="raise"):
        super().__init__(max_iter=max_iter, tol=tol, n_init=n_init, init_params=init_params,
                         random_state=random_state, warm_start=warm_start, verbose=verbose,
                         verbose_interval=verbose_interval, bound_check=bound_check)
        self.n_components = n_components
        self.attribute_prob = attribute_prob
        self.feature_sd = feature_sd
        self.noise_sd = noise_sd

    @property
    def log_probs_(self):
        return _log_probs(self.attribute_prob, self.n_components)

    def _weight_sd(self):
        return float(self.feature_sd)

    def _sample_latents_prior(self, rng, n):
        p = np.exp(self.log_probs_[0])
        return (rng.random((n, self.n_components)) < p).astype(float)

    def _design(self, Z):
        return np.asarray(Z, dtype=float)

    def _weight_mean(self):
        return self.features_

    def _log_likelihood_per_case(self, W, Y):
        lp, l1 = self.log_probs_
        return binary_log_likelihood_per_case(W, Y, lp, l1, self._noise_var)

    # ------------------------------------------------------------------ VBEM
    def _initialize(self, data, random_state):
        if self.init_params != "random":
            raise ValueError(f"init_params must be 'random'; got {self.init_params!r}.")
        self.attribute_probs_ = random_state.uniform(size=(data.shape[0], self.n_components))

    def _set_latent_point(self, latents, n):
        self._check_latents(latents, n, (n, self.n_components))
        if not np.all((latents == 0) | (latents == 1)):
            raise ValueError("latents must be 0 or 1.")
        self.attribute_probs_ = latents.astype(float)

    def _iteration_steps(self):
        return (Step("features", self._step_features),
                Step("attributes", self._step_attributes))

    def _second_moment(self):
        """``sum_j E[a_j a_j^T]`` (K, K)."""
        D = self.features_.shape[1]
        return self.features_ @ self.features_.T + D * self.feature_covariance_

    def _step_features(self, data, iteration):
        r = self.attribute_probs_
        EZZ = r.T @ r + np.diag(np.sum(r * (1.0 - r), axis=0))
        P = np.eye(self.n_components) / float(self.feature_sd) ** 2 + EZZ / self._noise_var
        S = np.linalg.inv(P)
        self.feature_covariance_ = 0.5 * (S + S.T)
        self.features_ = self.feature_covariance_ @ r.T @ data / self._noise_var

    def _step_attributes(self, data, iteration):
        r = self.attribute_probs_.copy()
        S = self._second_moment()
        lp, l1 = self.log_probs_
        proj = data @ self.features_.T  # (n, K): y_i . m_k
        for k in range(self.n_components):
            cross = r @ S[:, k] - r[:, k] * S[k, k]
            logit = lp[k] - l1[k] - (S[k, k] - 2.0 * proj[:, k] + 2.0 * cross) / (2.0 * self._noise_var)
            r[:, k] = expit(logit)
        self.attribute_probs_ = r

    def _lower_bound(self, data):
        r = self.attribute_probs_
        n, D = data.shape
        S = self._second_moment()
        sq = (np.sum(data * data) - 2.0 * np.sum(r * (data @ self.features_.T))
              + np.einsum("ik,kl,il->", r, S, r) + np.sum(r * (1.0 - r) * np.diag(S)))
        ell = -0.5 * n * D * (LOG_2PI + np.log(self._noise_var)) - 0.5 * sq / self._noise_var
        lp, l1 = self.log_probs_
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.sum(np.where(r > 0, r * np.log(r), 0.0)
                          + np.where(r < 1, (1.0 - r) * np.log1p(-r), 0.0))
        prior_z = np.sum(r * lp + (1.0 - r) * l1)
        kl = gaussian_columns_kl(self.features_, self.feature_covariance_, float(self.feature_sd) ** 2)
        return float(ell + prior_z + ent - kl)
