"""The three latent-factor models with their hyperparameters integrated out.

Grosse, Ghahramani & Adams (2015) fix the hyperparameters everywhere except in their
Table 1 (every model fitted to the data of every model), where "we included the
hyperparameters in the model, and these were integrated out along with the parameters
and latent variables", under "inverse gamma distributions for variances, Dirichlet
distributions for mixture probabilities, and beta distributions for Bernoulli
probability parameters" (footnote 6; the paper does not give their parameters, so they
are settings of :class:`Hyperprior`).

The ScoringModels here add the hyperparameters to the parameter blocks:

* every model: ``weight_var`` (the prior variance of W: cluster means, low-rank
  components, binary features) and ``noise_var``, each ``IG(shape, scale)``;
* clustering: the mixing proportions ``mixing`` (K,), ``Dirichlet(concentration)``;
* low rank: ``latent_var``, the prior variance of the rows of U, ``IG(shape, scale)``;
* binary attributes: the attribute probabilities ``attribute_probs`` (K, 2) (each row
  ``(pi_k, 1 - pi_k)``, a simplex of two), ``Beta(attribute_a, attribute_b)``.

The parameters of each chain carry their own hyperparameters; the moves of joint
(theta, z) annealing (``score(model, X, "ais", anneal="joint")``, tempered Gibbs) draw
the latents given the chain's parameters, then W given the latents and the
hyperparameters, then every hyperparameter from its exact tempered conditional (all
conjugate; only ``noise_var`` sees the tempered observation factor):

* ``weight_var | W ~ IG(shape + K D / 2, scale + |W|^2 / 2)``;
* ``noise_var | W, Z ~ IG(shape + D sum_i beta_i / 2, scale + sum_i beta_i |y_i - z_i W|^2 / 2)``;
* ``latent_var | U ~ IG(shape + n K / 2, scale + |U|^2 / 2)``;
* ``mixing | z ~ Dirichlet(concentration + counts)``;
* ``pi_k | Z ~ Beta(a + sum_i z_ik, b + n - sum_i z_ik)``.

The models' ``hyper_conditionals`` return these distributions' parameters (what the
sampler draws from), so that tests check them against the joint density.  The models' data are
simulated with fixed hyperparameters, so the simulating state is not an exact posterior
draw of these models: reverse AIS does not apply, only forward AIS (a stochastic lower
bound), as in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import lgamma

import numpy as np
from scipy.special import gammaln

from ._binary import binary_log_likelihood_per_case, sample_attributes
from ._clustering import clustering_log_likelihood_per_case, sample_labels
from ._common import LOG_2PI, sample_weights_given_latents
from ._low_rank import low_rank_log_likelihood_per_case, sample_latent_rows
from .kernels import complete_log_likelihood
from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.protocols import ScoringModelMixin

__all__ = ["Hyperprior", "HyperClusteringScoringModel", "HyperLowRankScoringModel",
           "HyperBinaryAttributesScoringModel", "integrate_hyperparameters"]


@dataclass(frozen=True)
class Hyperprior:
    """Priors of the hyperparameters: ``IG(variance_shape, variance_scale)`` for every
    variance, ``Dirichlet(concentration)`` for mixing proportions, ``Beta(attribute_a,
    attribute_b)`` for attribute probabilities.  The defaults (``IG(1, 1)``, uniform
    Dirichlet and Beta) are weak priors whose mode, 1/2 for the variances, lies near the
    scale of unit-variance simulated data.

    Examples
    --------
    >>> from sklearn_vb.bdmc_models import Hyperprior
    >>> Hyperprior(variance_shape=2.0).variance_scale
    1.0
    """

    variance_shape: float = 1.0
    variance_scale: float = 1.0
    concentration: float = 1.0
    attribute_a: float = 1.0
    attribute_b: float = 1.0

    def __post_init__(self):
        for name in ("variance_shape", "variance_scale", "concentration", "attribute_a",
                     "attribute_b"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}.")


def _log_inv_gamma(x, shape, scale):
    x = np.asarray(x, dtype=float)
    return shape * np.log(scale) - lgamma(shape) - (shape + 1.0) * np.log(x) - scale / x


def _inv_gamma(rng, shape, scale):
    """Draws of ``IG(shape, scale)`` (arrays broadcast)."""
    shape, scale = np.broadcast_arrays(np.asarray(shape, dtype=float), np.asarray(scale, dtype=float))
    return scale / rng.standard_gamma(shape)


def _log_dirichlet(p, alpha):
    """ln Dirichlet(p; alpha) over the last axis (alpha broadcast)."""
    p = np.asarray(p, dtype=float)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), p.shape)
    return (gammaln(alpha.sum(axis=-1)) - gammaln(alpha).sum(axis=-1)
            + np.sum((alpha - 1.0) * np.log(p), axis=-1))


@dataclass(frozen=True)
class HyperConditionals:
    """The parameters of the hyperparameters' exact tempered conditionals of one chain
    (see the module docstring); ``None`` where the model has no such hyperparameter."""

    weight_var: tuple
    noise_var: tuple
    latent_var: tuple | None = None
    mixing: np.ndarray | None = None
    attribute: tuple | None = None


class _HyperFactorModel(ScoringModelMixin):
    """Shared pieces: W with prior variance ``weight_var``, spherical noise ``noise_var``."""

    weight_name = None

    def __init__(self, n_components, n_features, hyperprior=None):
        self.K = int(n_components)
        self.D = int(n_features)
        self.hyperprior = Hyperprior() if hyperprior is None else hyperprior
        if not isinstance(self.hyperprior, Hyperprior):
            raise TypeError(f"hyperprior must be a Hyperprior, got {hyperprior!r}.")
        self.name = self.weight_name
        self.param_space = ParamSpace([ParamBlock(self.name, (self.K, self.D), "real"),
                                       ParamBlock("weight_var", (1,), "positive"),
                                       ParamBlock("noise_var", (1,), "positive")]
                                      + self._extra_blocks())

    # ------------------------------------------------------------------ per-model hooks
    def _extra_blocks(self):
        return []

    def _log_extra_prior(self, params):
        return 0.0

    def _sample_extra_prior(self, rng, size):
        return {}

    def _sample_extra_conditional(self, params, Z, rng):
        return {}

    # ------------------------------------------------------------------ core
    def prepare_data(self, X):
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.D:
            raise ValueError(f"X must be 2-D with {self.D} columns, got shape {X.shape}.")
        return np.ascontiguousarray(X)

    def n_cases(self, X):
        return int(X.shape[0])

    def n_parameters(self):
        return sum(b.dim for b in self.param_space.blocks)

    def _hyper(self, params, c, name):
        return float(np.asarray(params[name])[c, 0])

    def log_prior(self, params):
        hp = self.hyperprior
        W = np.asarray(params[self.name], dtype=float)
        wv = np.asarray(params["weight_var"], dtype=float)[:, 0]
        nv = np.asarray(params["noise_var"], dtype=float)[:, 0]
        log_w = (-0.5 * np.sum(W * W, axis=(1, 2)) / wv
                 - 0.5 * self.K * self.D * (LOG_2PI + np.log(wv)))
        return (log_w + _log_inv_gamma(wv, hp.variance_shape, hp.variance_scale)
                + _log_inv_gamma(nv, hp.variance_shape, hp.variance_scale)
                + self._log_extra_prior(params))

    def sample_prior(self, rng, size):
        rng = np.random.default_rng(rng)
        hp = self.hyperprior
        C = int(size)
        wv = _inv_gamma(rng, hp.variance_shape, np.full((C, 1), hp.variance_scale))
        nv = _inv_gamma(rng, hp.variance_shape, np.full((C, 1), hp.variance_scale))
        W = np.sqrt(wv)[:, :, None] * rng.standard_normal((C, self.K, self.D))
        return {self.name: W, "weight_var": wv, "noise_var": nv,
                **self._sample_extra_prior(rng, C)}

    def log_likelihood(self, params, X):
        return self.log_likelihood_per_case(params, X).sum(axis=1)

    def log_likelihood_per_case(self, params, X):
        C = np.asarray(params[self.name]).shape[0]
        return np.concatenate([self._chain_log_likelihood(params, c, X) for c in range(C)])

    # ------------------------------------------------------------------ latent level
    def _design_batch(self, Z):
        return np.asarray(Z, dtype=float)

    def log_complete_likelihood_per_case(self, params, Z, X):
        """``ln p(y_i | z_i, W, noise_var)``: (C, n)."""
        W = np.ascontiguousarray(params[self.name], dtype=float)
        design = np.ascontiguousarray(self._design_batch(Z))
        return np.concatenate([
            complete_log_likelihood(design[c:c + 1], W[c:c + 1], X,
                                    self._hyper(params, c, "noise_var"))
            for c in range(W.shape[0])])

    def sample_latents(self, params, X, rng, beta=1.0):
        C = np.asarray(params[self.name]).shape[0]
        return np.concatenate([self._chain_sample_latents(params, c, X, rng, beta)
                               for c in range(C)])

    def hyper_conditionals(self, params, Z, X, beta=1.0):
        """The :class:`HyperConditionals` of every chain given W (in ``params``) and the
        latents ``Z``: a list of C."""
        hp = self.hyperprior
        W = np.asarray(params[self.name], dtype=float)
        b = np.broadcast_to(np.asarray(beta, dtype=float), (X.shape[0],))
        out = []
        for c in range(W.shape[0]):
            design = self._design_batch(Z[c:c + 1])[0]
            resid = X - design @ W[c]
            out.append(HyperConditionals(
                weight_var=(hp.variance_shape + 0.5 * self.K * self.D,
                            hp.variance_scale + 0.5 * float(np.sum(W[c] * W[c]))),
                noise_var=(hp.variance_shape + 0.5 * self.D * float(b.sum()),
                           hp.variance_scale + 0.5 * float(b @ np.sum(resid * resid, axis=1))),
                **self._extra_conditionals(Z[c])))
        return out

    def _extra_conditionals(self, Zc):
        return {}

    #: joint annealing passes the current parameters to ``sample_params`` (``current=``):
    #: W given the latents depends on the chain's hyperparameters
    sample_params_needs_current = True

    def sample_params(self, Z, X, rng, beta=1.0, current=None):
        """W from its tempered conditional given the latents and each chain's current
        hyperparameters (``current``, required), then every hyperparameter from its
        conditional given W and the latents: one Gibbs sweep over the parameter blocks."""
        if current is None:
            raise TypeError("the parameters of a model with hyperparameters depend on the "
                            "current hyperparameters: pass current=.")
        b = np.ascontiguousarray(np.broadcast_to(np.asarray(beta, dtype=float), (X.shape[0],)))
        design = self._design_batch(Z)
        C = design.shape[0]
        W = np.concatenate([
            sample_weights_given_latents(design[c:c + 1], X, rng, b,
                                         self._hyper(current, c, "weight_var"),
                                         self._hyper(current, c, "noise_var"))
            for c in range(C)])
        new = {self.name: W}
        conds = self.hyper_conditionals(new, Z, X, b)
        new["weight_var"] = _inv_gamma(rng, [[q.weight_var[0]] for q in conds],
                                       [[q.weight_var[1]] for q in conds])
        new["noise_var"] = _inv_gamma(rng, [[q.noise_var[0]] for q in conds],
                                      [[q.noise_var[1]] for q in conds])
        new.update(self._sample_extra_conditional(conds, rng))
        return new


class HyperClusteringScoringModel(_HyperFactorModel):
    """:class:`~sklearn_vb.bdmc_models.BayesianClustering` with the mixing proportions,
    the prior variance of the means and the noise variance integrated out; latents are
    the labels (C, n).

    Examples
    --------
    >>> from sklearn_vb.bdmc_models.hyper_scoring_model import HyperClusteringScoringModel
    >>> model = HyperClusteringScoringModel(n_components=3, n_features=2)
    >>> params = model.sample_prior(0, 4)
    >>> params["mixing"].shape, params["noise_var"].shape, model.log_prior(params).shape
    ((4, 3), (4, 1), (4,))
    """

    weight_name = "means"

    def _extra_blocks(self):
        return [ParamBlock("mixing", (self.K,), "simplex")]

    def _log_extra_prior(self, params):
        return _log_dirichlet(params["mixing"], self.hyperprior.concentration)

    def _sample_extra_prior(self, rng, size):
        return {"mixing": rng.dirichlet(np.full(self.K, self.hyperprior.concentration), size)}

    def _log_weights(self, params, c):
        return np.log(np.asarray(params["mixing"], dtype=float)[c])

    def _chain_log_likelihood(self, params, c, X):
        return clustering_log_likelihood_per_case(
            np.asarray(params[self.name], dtype=float)[c:c + 1], X,
            np.ascontiguousarray(self._log_weights(params, c)), self._hyper(params, c, "noise_var"))

    def _design_batch(self, Z):
        return (np.asarray(Z)[..., None] == np.arange(self.K)).astype(float)

    def sample_latents_prior(self, params, n, rng):
        mix = np.asarray(params["mixing"], dtype=float)
        return np.stack([rng.choice(self.K, size=int(n), p=m / m.sum()) for m in mix])

    def log_latent_prior(self, params, Z, X=None):
        logw = np.log(np.asarray(params["mixing"], dtype=float))
        return np.take_along_axis(logw, np.asarray(Z), axis=1).sum(axis=1)

    def _chain_sample_latents(self, params, c, X, rng, beta):
        return sample_labels(np.asarray(params[self.name], dtype=float)[c:c + 1], X, rng,
                             np.ascontiguousarray(self._log_weights(params, c)),
                             self._hyper(params, c, "noise_var"), beta)[0]

    def _extra_conditionals(self, Zc):
        counts = np.bincount(np.asarray(Zc), minlength=self.K)
        return {"mixing": self.hyperprior.concentration + counts}

    def _sample_extra_conditional(self, conds, rng):
        return {"mixing": np.stack([rng.dirichlet(q.mixing) for q in conds])}


class HyperBinaryAttributesScoringModel(_HyperFactorModel):
    """:class:`~sklearn_vb.bdmc_models.BayesianBinaryAttributes` with the attribute
    probabilities, the prior variance of the features and the noise variance integrated
    out; latents are binary (C, n, K).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.bdmc_models.hyper_scoring_model import (
    ...     HyperBinaryAttributesScoringModel)
    >>> model = HyperBinaryAttributesScoringModel(n_components=2, n_features=3)
    >>> params = model.sample_prior(0, 2)
    >>> params["attribute_probs"].shape          # each row (pi_k, 1 - pi_k)
    (2, 2, 2)
    >>> Z = model.sample_latents_prior(params, 5, np.random.default_rng(0))
    >>> Z.shape
    (2, 5, 2)
    """

    weight_name = "features"

    def _extra_blocks(self):
        return [ParamBlock("attribute_probs", (self.K, 2), "simplex")]

    def _probs(self, params):
        return np.asarray(params["attribute_probs"], dtype=float)[..., 0]

    def _log_extra_prior(self, params):
        hp = self.hyperprior
        return _log_dirichlet(params["attribute_probs"],
                              np.array([hp.attribute_a, hp.attribute_b])).sum(axis=1)

    def _sample_extra_prior(self, rng, size):
        p = rng.beta(self.hyperprior.attribute_a, self.hyperprior.attribute_b, (size, self.K))
        return {"attribute_probs": np.stack([p, 1.0 - p], axis=-1)}

    def _log_probs(self, params, c):
        pr = np.asarray(params["attribute_probs"], dtype=float)[c]
        return np.ascontiguousarray(np.log(pr[:, 0])), np.ascontiguousarray(np.log(pr[:, 1]))

    def _chain_log_likelihood(self, params, c, X):
        return binary_log_likelihood_per_case(
            np.asarray(params[self.name], dtype=float)[c:c + 1], X, *self._log_probs(params, c),
            self._hyper(params, c, "noise_var"))

    def sample_latents_prior(self, params, n, rng):
        p = self._probs(params)
        return (rng.random((p.shape[0], int(n), self.K)) < p[:, None, :]).astype(float)

    def log_latent_prior(self, params, Z, X=None):
        pr = np.asarray(params["attribute_probs"], dtype=float)
        Z = np.asarray(Z, dtype=float)
        return np.sum(Z * np.log(pr[:, None, :, 0]) + (1.0 - Z) * np.log(pr[:, None, :, 1]),
                      axis=(1, 2))

    def _chain_sample_latents(self, params, c, X, rng, beta):
        return sample_attributes(np.asarray(params[self.name], dtype=float)[c:c + 1], X, rng,
                                 *self._log_probs(params, c), self._hyper(params, c, "noise_var"),
                                 beta)[0]

    def _extra_conditionals(self, Zc):
        on = np.asarray(Zc, dtype=float).sum(axis=0)
        hp = self.hyperprior
        return {"attribute": (hp.attribute_a + on, hp.attribute_b + Zc.shape[0] - on)}

    def _sample_extra_conditional(self, conds, rng):
        p = np.stack([rng.beta(*q.attribute) for q in conds])
        return {"attribute_probs": np.stack([p, 1.0 - p], axis=-1)}


class HyperLowRankScoringModel(_HyperFactorModel):
    """:class:`~sklearn_vb.bdmc_models.BayesianLowRank` with the prior variances of U and
    V and the noise variance integrated out; latents are the rows of U (C, n, K).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.bdmc_models.hyper_scoring_model import HyperLowRankScoringModel
    >>> model = HyperLowRankScoringModel(n_components=2, n_features=4)
    >>> params = model.sample_prior(0, 3)
    >>> Y = np.random.default_rng(1).standard_normal((6, 4))
    >>> model.log_likelihood(params, Y).shape    # U integrated out, per chain
    (3,)
    """

    weight_name = "components"

    def _extra_blocks(self):
        return [ParamBlock("latent_var", (1,), "positive")]

    def _log_extra_prior(self, params):
        hp = self.hyperprior
        return _log_inv_gamma(np.asarray(params["latent_var"], dtype=float)[:, 0],
                              hp.variance_shape, hp.variance_scale)

    def _sample_extra_prior(self, rng, size):
        hp = self.hyperprior
        return {"latent_var": _inv_gamma(rng, hp.variance_shape,
                                         np.full((size, 1), hp.variance_scale))}

    def _chain_log_likelihood(self, params, c, X):
        return low_rank_log_likelihood_per_case(
            np.asarray(params[self.name], dtype=float)[c:c + 1], X,
            self._hyper(params, c, "latent_var"), self._hyper(params, c, "noise_var"))

    def sample_latents_prior(self, params, n, rng):
        lv = np.asarray(params["latent_var"], dtype=float)[:, 0]
        return np.sqrt(lv)[:, None, None] * rng.standard_normal((lv.size, int(n), self.K))

    def log_latent_prior(self, params, Z, X=None):
        lv = np.asarray(params["latent_var"], dtype=float)[:, 0]
        Z = np.asarray(Z, dtype=float)
        return (-0.5 * np.sum(Z * Z, axis=(1, 2)) / lv
                - 0.5 * Z.shape[1] * self.K * (LOG_2PI + np.log(lv)))

    def _chain_sample_latents(self, params, c, X, rng, beta):
        return sample_latent_rows(np.asarray(params[self.name], dtype=float)[c:c + 1], X, rng,
                                  self._hyper(params, c, "latent_var"),
                                  self._hyper(params, c, "noise_var"), beta)[0]

    def _extra_conditionals(self, Zc):
        hp = self.hyperprior
        Zc = np.asarray(Zc, dtype=float)
        return {"latent_var": (hp.variance_shape + 0.5 * Zc.size,
                               hp.variance_scale + 0.5 * float(np.sum(Zc * Zc)))}

    def _sample_extra_conditional(self, conds, rng):
        return {"latent_var": _inv_gamma(rng, [[q.latent_var[0]] for q in conds],
                                         [[q.latent_var[1]] for q in conds])}


_HYPER_MODELS = {"BayesianClustering": HyperClusteringScoringModel,
                 "BayesianLowRank": HyperLowRankScoringModel,
                 "BayesianBinaryAttributes": HyperBinaryAttributesScoringModel}


def integrate_hyperparameters(estimator, hyperprior=None):
    """The ScoringModel of ``estimator``'s model class (its number of components and of
    features, from the fit) with the hyperparameters integrated out under
    ``hyperprior`` (a :class:`Hyperprior`; None: the defaults).  Score it with joint
    annealing: ``score(model, X, "ais", anneal="joint", ...)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.bdmc_models import BayesianClustering, integrate_hyperparameters
    >>> from sklearn_vb.scoring import score
    >>> Y, _, _ = BayesianClustering(2).simulate(10, 2, random_state=0)
    >>> model = integrate_hyperparameters(BayesianClustering(2, random_state=0).fit(Y))
    >>> sorted(model.sample_prior(0, 3))
    ['means', 'mixing', 'noise_var', 'weight_var']
    >>> r = score(model, Y, "ais", anneal="joint", n_temperatures=200, n_chains=4,
    ...           random_state=0, lower_bound=None)
    >>> bool(np.isfinite(r.log_evidence))
    True
    """
    cls = _HYPER_MODELS.get(type(estimator).__name__)
    if cls is None:
        raise TypeError(f"estimator must be one of {sorted(_HYPER_MODELS)}, got "
                        f"{type(estimator).__name__}.")
    if not hasattr(estimator, "n_features_in_"):
        raise ValueError("estimator must be fitted (the number of features comes from the fit).")
    return cls(estimator.n_components, estimator.n_features_in_, hyperprior)
