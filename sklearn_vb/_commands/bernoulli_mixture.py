"""A variational Bayesian mixture of multivariate Bernoullis.

The smallest complete conjugate latent-variable model on the VBEM template: a
Dirichlet prior on the mixing proportions and Beta priors on every Bernoulli mean.
It exercises :class:`~sklearn_vb.base.VBEMEstimator` in the tests and the demo, and it
has an exact log evidence by enumerating the component assignments of a tiny data set,
which makes it the reference for the template loop itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.special import betaln, gammaln, logsumexp
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from .._core.base import ACCELERATION_CONSTRAINT, Step, VBEMEstimator
from .._core.distributions import dirichlet_expected_log, dirichlet_kl

__all__ = ["VBBernoulliMixture", "bernoulli_mixture_log_evidence"]


@dataclass
class _FitData:
    """The validated binary training data."""

    X: np.ndarray


def _beta_pairs(a, b):
    """Beta(a, b) parameters as two-category Dirichlet parameters (last axis)."""
    return np.stack(np.broadcast_arrays(a, b), axis=-1)


class VBBernoulliMixture(VBEMEstimator):
    """Variational Bayesian mixture of Bernoulli distributions.

    Parameters
    ----------
    n_components : int, default=2
    weight_prior : float, default=1.0
        Dirichlet concentration per component of the mixing proportions.
    beta_prior : float, default=1.0
        Both Beta parameters of every Bernoulli mean.
    max_iter, tol, n_init, init_params, random_state, warm_start, verbose,
    verbose_interval, bound_check
        See :class:`~sklearn_vb.base.VBEMEstimator`.  ``init_params`` is "random"
        (Dirichlet-distributed responsibilities).
    acceleration : {"squarem"} or None, default=None
        SQUAREM extrapolation of the VBEM fixed point in log Dirichlet and Beta
        parameters (see :mod:`sklearn_vb.base`).  Off by default: this model is the
        reference of the plain template loop.

    Attributes
    ----------
    weight_concentration_ : ndarray (n_components,)
        Posterior Dirichlet parameters of the mixing proportions.
    beta_a_, beta_b_ : ndarray (n_components, n_features)
        Posterior Beta parameters of the Bernoulli means.
    resp_ : ndarray (n_samples, n_components)
        Responsibilities q(z) on the training data.
    lower_bound_ : float
        The complete variational lower bound on ln p(X), in nats.
    """

    _parameter_constraints = {
        **VBEMEstimator._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "weight_prior": [Interval(Real, 0, None, closed="neither")],
        "beta_prior": [Interval(Real, 0, None, closed="neither")],
        "acceleration": ACCELERATION_CONSTRAINT,
    }

    def __init__(
        self,
        n_components=2,
        *,
        weight_prior=1.0,
        beta_prior=1.0,
        max_iter=200,
        tol=1e-6,
        n_init=1,
        init_params="random",
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        bound_check="raise",
        acceleration=None,
    ):
        super().__init__(
            max_iter=max_iter,
            tol=tol,
            n_init=n_init,
            init_params=init_params,
            random_state=random_state,
            warm_start=warm_start,
            verbose=verbose,
            verbose_interval=verbose_interval,
            bound_check=bound_check,
        )
        self.n_components = n_components
        self.weight_prior = weight_prior
        self.beta_prior = beta_prior
        self.acceleration = acceleration

    # ------------------------------------------------------------------ data
    def _check_binary(self, X, reset):
        X = validate_data(self, X, reset=reset, dtype=np.float64)
        if not np.all((X == 0) | (X == 1)):
            raise ValueError("X must be binary (0/1) for VBBernoulliMixture.")
        return X

    def _check_fit_data(self, X, **fit_params):
        if fit_params:
            raise TypeError(f"Unexpected fit parameters: {sorted(fit_params)}")
        return _FitData(self._check_binary(X, reset=True))

    # ------------------------------------------------------------------ steps
    def _initialize(self, data, random_state):
        if self.init_params != "random":
            raise ValueError(f"init_params must be 'random'; got {self.init_params!r}.")
        n_samples = data.X.shape[0]
        self.resp_ = random_state.dirichlet(np.ones(self.n_components), size=n_samples)

    def _iteration_steps(self):
        # The bound is recorded after the VBE step, for the stored pair (q(z), q(θ)).
        return (Step("vbm", self._step_vbm), Step("vbe", self._step_vbe))

    def _step_vbm(self, data, iteration):
        counts = self.resp_.sum(axis=0)
        ones = self.resp_.T @ data.X
        self.weight_concentration_ = self.weight_prior + counts
        self.beta_a_ = self.beta_prior + ones
        self.beta_b_ = self.beta_prior + (counts[:, None] - ones)

    def _step_vbe(self, data, iteration):
        log_joint = self._expected_log_joint(data.X)
        self.resp_ = np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))

    def _pack_hyperparameters(self):
        """q(theta) as the logarithms of its Dirichlet and Beta parameters."""
        return np.log(np.concatenate([self.weight_concentration_, self.beta_a_.ravel(),
                                      self.beta_b_.ravel()]))

    def _unpack_hyperparameters(self, vector, data):
        values = np.exp(vector)
        if not np.all(np.isfinite(values) & (values > 0)):
            return False
        K = self.n_components
        shape = self.beta_a_.shape
        size = self.beta_a_.size
        self.weight_concentration_ = values[:K]
        self.beta_a_ = values[K:K + size].reshape(shape)
        self.beta_b_ = values[K + size:].reshape(shape)
        return True

    def _expected_log_joint(self, X):
        """E_q(θ)[ln p(x_n, z_n = k | θ)], shape (n_samples, n_components)."""
        e_log_pi = dirichlet_expected_log(self.weight_concentration_)
        e_log = dirichlet_expected_log(_beta_pairs(self.beta_a_, self.beta_b_))
        e_log_t, e_log_1mt = e_log[..., 0], e_log[..., 1]
        return e_log_pi + X @ e_log_t.T + (1.0 - X) @ e_log_1mt.T

    def _parameter_kl(self):
        prior_w = np.full(self.n_components, float(self.weight_prior))
        kl_pi = float(dirichlet_kl(self.weight_concentration_, prior_w))
        kl_theta = float(
            dirichlet_kl(
                _beta_pairs(self.beta_a_, self.beta_b_),
                _beta_pairs(float(self.beta_prior), float(self.beta_prior)),
            ).sum()
        )
        return kl_pi + kl_theta

    def _lower_bound(self, data):
        # The general form E_q[ln p(x, z | θ)] + H[q(z)] - KL(q(θ) || p(θ)) holds after any
        # step; right after the VBE step it equals Σ_n ln Σ_k exp(expected log joint) - KL.
        resp = self.resp_
        log_joint = self._expected_log_joint(data.X)
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -np.sum(np.where(resp > 0, resp * np.log(resp), 0.0))
        return float(np.sum(resp * log_joint) + entropy - self._parameter_kl())

    # ------------------------------------------------------------------ API
    @property
    def weights_(self):
        return self.weight_concentration_ / self.weight_concentration_.sum()

    @property
    def means_(self):
        return self.beta_a_ / (self.beta_a_ + self.beta_b_)

    def _estimate_log_prob(self, X):
        means = np.clip(self.means_, 1e-300, 1 - 1e-16)
        return np.log(self.weights_) + X @ np.log(means).T + (1 - X) @ np.log1p(-means).T

    def score_samples(self, X):
        """Log-likelihood of each row under the posterior-mean parameters."""
        self._check_is_fitted()
        X = self._check_binary(X, reset=False)
        return logsumexp(self._estimate_log_prob(X), axis=1)

    def score(self, X, y=None):
        """Mean log-likelihood per row under the posterior-mean parameters."""
        return float(self.score_samples(X).mean())

    def predict_proba(self, X):
        self._check_is_fitted()
        X = self._check_binary(X, reset=False)
        log_joint = self._expected_log_joint(X)
        return np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)

    # ------------------------------------------------------------------ bic / aic
    def _check_new_data(self, X):
        return self._check_binary(X, reset=False)

    def _log_likelihood(self, X):
        # n times the mean per row, as sklearn's GaussianMixture.bic
        return X.shape[0] * float(self.score_samples(X).mean())

    def _n_observations(self, X):
        return X.shape[0]

    def _n_parameters(self):
        return (self.n_components - 1) + self.n_components * self.n_features_in_

def bernoulli_mixture_log_evidence(X, n_components, weight_prior=1.0, beta_prior=1.0):
    """Exact ln p(X) for the Bernoulli mixture by enumerating every assignment.

    Cost grows as ``n_components ** n_samples``; meant for tests on tiny data.
    """
    X = np.asarray(X, dtype=np.float64)
    n, _ = X.shape
    K = n_components
    if K**n > 2_000_000:
        raise ValueError(f"{K}**{n} assignments is too many to enumerate.")
    # All assignments at once: an (K**n, n) array of labels.
    labels = np.indices((K,) * n).reshape(n, -1).T
    onehot = labels[:, :, None] == np.arange(K)  # (A, n, K)
    counts = onehot.sum(axis=1)  # (A, K)
    ones = np.einsum("ank,nd->akd", onehot, X)
    zeros = counts[:, :, None] - ones
    a = float(weight_prior)
    log_weights = (
        gammaln(K * a)
        - gammaln(K * a + n)
        + np.sum(gammaln(a + counts) - gammaln(a), axis=1)
    )
    b = float(beta_prior)
    log_bern = np.sum(betaln(b + ones, b + zeros) - betaln(b, b), axis=(1, 2))
    return float(logsumexp(log_weights + log_bern))
