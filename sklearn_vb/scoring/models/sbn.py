"""ScoringModel for a fitted :class:`~sklearn_vb.sbn.VBSigmoidBeliefNetwork`.

theta = one real block per node, ``w[<node>]`` = ``[bias, parent weights...]``, each
entry with the estimator's ``N(0, prior_variance)`` prior; exact ``ln p(X | theta)`` by
enumerating the unobserved nodes of every distinct pattern (the estimator's compiled
kernel).  q(theta) is the fitted Gaussian per node.
"""

from __future__ import annotations

import numpy as np

from ...sbn import map_weights, sample_states
from ..params import ParamBlock, ParamSpace
from ..posteriors import FactorizedPosterior, GaussianQ
from ..protocols import ScoringModelMixin

__all__ = ["SBNScoringModel"]


class SBNScoringModel(ScoringModelMixin):
    """The scoring view of a fitted VBSigmoidBeliefNetwork."""

    def __init__(self, estimator):
        self.estimator = estimator
        s = estimator.structure_
        self.layout = estimator.weight_layout_
        self.block_names = [f"w[{name}]" for name in s.names]
        self.param_space = ParamSpace([ParamBlock(b, (int(d),), "real")
                                       for b, d in zip(self.block_names, self.layout.dims)])
        self.prior_variance = float(estimator.prior_variance)

    def prepare_data(self, X, **fit_params):
        if fit_params:
            raise ValueError("VBSigmoidBeliefNetwork scoring accepts no fit parameters, got "
                             f"{sorted(fit_params)}.")
        return self.estimator.check_data(X)

    def n_cases(self, X):
        return int(round(float(np.sum(X.weights))))

    def _flat(self, params):
        C = np.asarray(params[self.block_names[0]]).shape[0]
        return np.ascontiguousarray(np.concatenate(
            [np.asarray(params[b], dtype=float).reshape(C, -1) for b in self.block_names], axis=1))

    def _unflat(self, W):
        W = np.atleast_2d(W)
        return {b: W[:, a:c].copy() for b, a, c in
                zip(self.block_names, self.layout.w_ptr[:-1], self.layout.w_ptr[1:])}

    def log_prior(self, params):
        W = self._flat(params)
        v = self.prior_variance
        return -0.5 * np.sum(W * W, axis=1) / v - 0.5 * W.shape[1] * np.log(2 * np.pi * v)

    def sample_prior(self, rng, size):
        rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
        return self._unflat(rng.standard_normal((int(size), self.layout.size))
                            * np.sqrt(self.prior_variance))

    def log_likelihood_per_case(self, params, X):
        return self.estimator.pattern_log_likelihoods(self._flat(params), X)[:, X.inverse]

    def log_likelihood(self, params, X):
        return self.estimator.pattern_log_likelihoods(self._flat(params), X) @ X.weights

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        W = self._flat(params_single)[0]
        coefs = self.layout.split(W)
        s = self.estimator.structure_
        rs = np.random.RandomState(np.random.default_rng(rng).integers(2**31))
        states = sample_states(s, coefs, int(n_cases or 1), rs)
        return states[:, list(s.observed)].astype(float), states[:, list(s.hidden_nodes)]

    def n_parameters(self):
        return int(self.layout.size)

    def n_aliases(self):
        return int(round(np.exp(self.estimator.log_alias_count())))

    def kernel_prior_precision(self):
        return {b: 1.0 / self.prior_variance for b in self.block_names}

    def fit_point(self, X, kind="map", basis=None, rng=None, n_init=3, max_iter=5000,
                  tol_per_case=1e-10, **kwargs):
        """MAP weights (``kind="map"``) by the Jaakkola–Jordan MM algorithm with exact E
        steps, started from the posterior mean and ``n_init - 1`` prior-scaled draws;
        the restart with the highest ``ln p(X | w) + ln p(w)`` is kept."""
        if kind != "map":
            raise NotImplementedError(f"fit_point supports kind='map' only, got {kind!r}.")
        rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
        starts = [np.concatenate(self.estimator.coef_)]
        starts += [rng.standard_normal(self.layout.size) for _ in range(max(int(n_init), 1) - 1)]
        best = None
        for w0 in starts:
            w, trace = map_weights(X, self.layout, self.prior_variance, w0, max_iter, tol_per_case)
            if best is None or trace[-1] > best[1]:
                best = (w, trace[-1])
        return self._unflat(best[0])

    def variational_posterior(self, X=None):
        est = self.estimator
        return FactorizedPosterior([GaussianQ(b, m, S) for b, m, S in
                                    zip(self.block_names, est.coef_, est.covariances_)])
