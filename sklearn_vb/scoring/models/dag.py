"""ScoringModel for a fitted :class:`~sklearn_vb.dag.VBDiscreteDAG`.

theta = one simplex block per node (its CPT, shape (q_j, r_j)), Dirichlet rows with the
estimator's prior; exact ln p(X | theta) by enumeration of the unobserved nodes of every
distinct data pattern (the estimator's own compressed patterns and enumeration kernels).
"""

from __future__ import annotations

from math import exp

import numpy as np

from ..._kernels.dag import enumerate_posterior, pattern_log_normalisers
from ..protocols import EStep
from ..reference_models import _DirichletBlocks

__all__ = ["DAGScoringModel", "scoring_model_from_estimator"]


class DAGScoringModel(_DirichletBlocks):
    """The scoring view of a fitted VBDiscreteDAG (any structure, hidden nodes)."""

    def __init__(self, estimator):
        if not hasattr(estimator, "structure_"):
            raise ValueError("the estimator must be fitted.")
        self.estimator = estimator
        self.layout = estimator._layout
        s = estimator.structure_
        self.block_names = [f"cpt[{name}]" for name in s.names]
        self.prior_alpha = {b: np.asarray(p, dtype=float)
                            for b, p in zip(self.block_names, estimator.prior_)}
        self._init_space()
        self.n_components = int(sum(s.cardinalities[h] for h in s.hidden_nodes))

    def prepare_data(self, X, **fit_params):
        if fit_params:
            raise ValueError(f"VBDiscreteDAG scoring accepts no fit parameters, got {sorted(fit_params)}.")
        pdata = self.estimator._prepare(X)
        return pdata

    def n_cases(self, X):
        return int(round(float(np.sum(X.weights))))

    def n_parameters(self):
        return int(self.estimator.n_parameters_)

    def n_aliases(self):
        return int(round(exp(self.estimator.log_alias_count_)))

    def _flat(self, params):
        C = next(iter(params.values())).shape[0]
        return np.concatenate([np.asarray(params[b], dtype=float).reshape(C, -1)
                               for b in self.block_names], axis=1)

    def _pattern_loglik(self, params, pdata):
        flat = self._flat(params)
        out = np.empty((flat.shape[0], pdata.n_patterns))
        with np.errstate(divide="ignore"):
            logs = np.log(flat)
        for c in range(flat.shape[0]):
            pattern_log_normalisers(np.ascontiguousarray(logs[c]), pdata.idx, pdata.row_start, out[c])
        return out

    def log_likelihood(self, params, X):
        return self._pattern_loglik(params, X) @ X.weights

    def log_likelihood_per_case(self, params, X):
        return self._pattern_loglik(params, X)[:, X.inverse]

    def random_completion(self, X, rng):
        """One uniformly random joint configuration of the unobserved nodes per case,
        as a row of the pattern's enumeration index (Algorithm 6.2, complete kind)."""
        u = X.inverse
        H = X.row_start[u + 1] - X.row_start[u]
        return X.row_start[u] + np.floor(rng.random(u.size) * H).astype(np.int64)

    def log_complete_joint_per_case(self, params, Z, X):
        """ln p(s_i, y_i | theta) for the completion rows ``Z``: (C, n)."""
        with np.errstate(divide="ignore"):
            logs = np.log(self._flat(params))
        return logs[:, X.idx[Z]].sum(axis=2)

    def e_step(self, params_single, X):
        with np.errstate(divide="ignore"):
            log_theta = np.ascontiguousarray(np.log(self._flat(params_single)[0]))
        counts = np.empty(self.layout.size)
        post = np.empty(X.idx.shape[0])
        log_z = np.empty(X.n_patterns)
        ent = np.empty(X.n_patterns)
        enumerate_posterior(log_theta, X.idx, X.row_start, X.weights, counts, post, log_z, ent)
        ll = float(log_z @ X.weights)
        entropy = float(ent @ X.weights)
        stats = dict(zip(self.block_names, self.layout.split(counts)))
        return EStep(ll, stats, ll - entropy, entropy)

    def variational_posterior(self, X=None):
        post = getattr(self.estimator, "posterior_", None)
        if post is None:
            raise NotImplementedError("the DAG was not fitted by VB (no posterior_)")
        return self.variational_posterior_from(dict(zip(self.block_names, post)))

    def log_evidence(self, X):
        """Exact ln p(X) by summing over all completions (tiny data only)."""
        from ..._dag_structure import exact_log_evidence

        return exact_log_evidence(np.concatenate([a.ravel() for a in self.prior_alpha.values()]),
                                  self.layout, X)


def scoring_model_from_estimator(estimator):
    return DAGScoringModel(estimator)
