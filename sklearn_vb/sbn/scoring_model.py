"""ScoringModel for a fitted :class:`~sklearn_vb.sbn.VBSigmoidBeliefNetwork`.

theta = one real block per node with free weights, ``w[<node>]`` = ``[bias, parent
weights...]`` (a fixed bias left out; a node with no free weight has no block), each
entry with the estimator's ``N(prior_mean, prior_variance)`` prior; exact ``ln p(X | theta)`` by
enumerating the unobserved nodes of every distinct pattern (the estimator's compiled
kernel).  q(theta) is the fitted Gaussian per node.
"""

from __future__ import annotations

import numpy as np

from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.posteriors import FactorizedPosterior, GaussianQ
from .._core.evidence.protocols import ScoringModelMixin
from ._estimator import map_weights, sample_states

__all__ = ["SBNScoringModel"]


class SBNScoringModel(ScoringModelMixin):
    """The scoring view of a fitted VBSigmoidBeliefNetwork."""

    def __init__(self, estimator):
        self.estimator = estimator
        s = estimator.structure_
        self.layout = estimator.weight_layout_
        dims = self.layout.dims
        self._nodes = [j for j in range(s.n_nodes) if dims[j] > 0]
        self.block_names = [f"w[{s.names[j]}]" for j in self._nodes]
        self.param_space = ParamSpace([ParamBlock(b, (int(dims[j]),), "real")
                                       for b, j in zip(self.block_names, self._nodes)])
        self.prior_variance = float(estimator.prior_variance)
        self.prior_mean = np.asarray(estimator.prior_mean_, dtype=float)

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
        w_ptr = self.layout.w_ptr
        return {b: W[:, w_ptr[j]:w_ptr[j + 1]].copy() for b, j in zip(self.block_names, self._nodes)}

    def log_prior(self, params):
        Z = self._flat(params) - self.prior_mean
        v = self.prior_variance
        return -0.5 * np.sum(Z * Z, axis=1) / v - 0.5 * Z.shape[1] * np.log(2 * np.pi * v)

    def sample_prior(self, rng, size):
        rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
        return self._unflat(self.prior_mean + rng.standard_normal((int(size), self.layout.size))
                            * np.sqrt(self.prior_variance))

    def log_likelihood_per_case(self, params, X):
        return self.estimator.pattern_log_likelihoods(self._flat(params), X)[:, X.inverse]

    def log_likelihood(self, params, X):
        return self.estimator.pattern_log_likelihoods(self._flat(params), X) @ X.weights

    def compiled_chain_arrays(self, X):
        """The arrays :func:`sklearn_vb.sbn.mcmc_kernels.sbn_vmcmc_chain` needs to run
        variational-MCMC chains on ``X`` (as prepared by :meth:`prepare_data`) without
        leaving compiled code: the enumeration rows, the weight layout, the prior, and
        for every parameter block (in ``param_space`` order) its node and flat slice."""
        from .mcmc_kernels import node_configurations

        lay = self.layout
        nodes = np.asarray(self._nodes, dtype=np.int64)
        rep_ptr, rep_rows, row_rep = node_configurations(X.states, lay.in_idx, lay.w_ptr)
        return {"states": X.states, "rep_ptr": rep_ptr, "rep_rows": rep_rows,
                "row_rep": row_rep, "row_start": X.row_start,
                "pattern_weight": np.ascontiguousarray(X.weights, dtype=float),
                "in_idx": lay.in_idx, "w_ptr": lay.w_ptr, "offset": lay.offset,
                "spin": bool(lay.spin),
                "prior_mean": np.ascontiguousarray(
                    np.broadcast_to(self.prior_mean, (lay.size,)), dtype=float),
                "prior_var": self.prior_variance,
                "block_ptr": np.append(lay.w_ptr[nodes], lay.size).astype(np.int64),
                "block_node": nodes}

    def simulate(self, params_single, rng, n_cases=None, lengths=None):
        W = self._flat(params_single)[0]
        coefs = [self.layout.full(j, w) for j, w in enumerate(self.layout.split(W))]
        s = self.estimator.structure_
        rs = np.random.RandomState(np.random.default_rng(rng).integers(2**31))
        states = sample_states(s, coefs, int(n_cases or 1), rs, spin=self.layout.spin)
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
        lay = self.layout
        starts = [np.concatenate([lay.free(j, c) for j, c in enumerate(self.estimator.coef_)])]
        starts += [self.prior_mean + rng.standard_normal(lay.size)
                   for _ in range(max(int(n_init), 1) - 1)]
        best = None
        for w0 in starts:
            w, trace = map_weights(X, lay, self.prior_variance, w0, max_iter, tol_per_case,
                                   prior_mean=self.prior_mean)
            if best is None or trace[-1] > best[1]:
                best = (w, trace[-1])
        return self._unflat(best[0])

    def variational_posterior(self, X=None):
        est, lay = self.estimator, self.layout
        return FactorizedPosterior([
            GaussianQ(b, est.coef_[j][0 if lay.has_bias[j] else 1:],
                      est.covariances_[j][int(not lay.has_bias[j]):, int(not lay.has_bias[j]):])
            for b, j in zip(self.block_names, self._nodes)])
