"""Decomposable scores of fully observed discrete DAGs, one family at a time.

With every node observed in every case, the BIC (at the ML or MAP tables) and the VB
score (then the exact log marginal likelihood) are sums over families ``(node, parent
set)`` of terms that depend only on that family's counts ``N_jlk``.  A structure search
then re-scores only the families a move changes, from counts, without fitting an
estimator per neighbour.  The terms are the ones the scorers of
:mod:`sklearn_vb.scoring` compute for a fitted :class:`~sklearn_vb.VBDiscreteDAG`:

* ``"bic"``: ``sum_{l,k} N_lk ln(N_lk / N_l) - (r - 1) q ln(n) / 2``;
* ``"bic_map"``: the same at the MAP tables in the softmax basis,
  ``theta_lk = (lambda + N_lk) / (r lambda + N_l)``;
* ``"vb"``: ``sum_l ln B(lambda + N_l) - ln B(lambda)`` (VBEM is exact without hidden
  nodes, so the bound is the evidence).

``lambda`` is the estimator's prior for that family (one value for the whole table:
a number, ``"uniform"`` or ``"bdeu"``).
"""

from __future__ import annotations

import math

import numpy as np

from .._core.evidence.dirichlet import dirichlet_evidence
from ..dag import VBDiscreteDAG
from ..dag.structure import family_prior_value
from ..scoring import ScoreResult
from ._common import _NamedMethod
from ._dag_kernels import family_bics, family_table, table_loglik

__all__ = ["FamilyScores", "decomposable_family_scores", "prepared_family_scores"]

DECOMPOSABLE_METHODS = ("bic", "bic_map", "vb")
_BOUND = {"bic": "approx", "bic_map": "approx", "vb": "lower"}
# families with at least this many cells (configurations x states) are counted by rows
# of the parent columns instead of one int64 code per configuration
_KEY_LIMIT = 2**62


class FamilyScores:
    """Local scores of the families of a fully observed DAG, cached per (node, parents).

    ``codes`` holds the distinct data patterns (one column per node, integer states) and
    ``weights`` their counts; ``methods`` the score names.  :meth:`local` returns one
    value per method.
    """

    def __init__(self, codes, weights, cardinalities, methods, prior=1.0, ess=1.0):
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        # one row per node: the kernels read a node's states contiguously
        self._codes_t = np.ascontiguousarray(self.codes.T)
        self.weights = np.asarray(weights, dtype=float)
        self.r = [int(c) for c in cardinalities]
        self.methods = tuple(methods)
        self.prior, self.ess = prior, ess
        self.log_n = math.log(float(np.sum(self.weights)))
        self._radices = np.asarray(self.r, dtype=np.int64)
        self._cache = {}

    def counts(self, j, parents):
        """The (observed parent configurations, r_j) count table of node ``j`` given
        ``parents`` (configurations never seen are left out: their terms are zero), rows
        in increasing order of the configuration (first parent most significant)."""
        parents = list(parents)
        r = self.r[j]
        if math.prod(self.r[p] for p in parents) * r < _KEY_LIMIT:
            return family_table(self._codes_t, self.weights, j, np.asarray(parents, dtype=np.int64),
                                self._radices)
        # too many configurations for one int64 code: the rows of the parent columns
        _, rows = np.unique(self.codes[:, parents], axis=0, return_inverse=True)
        rows = rows.reshape(-1)
        n_rows = int(rows.max()) + 1
        return np.bincount(rows * r + self.codes[:, j], self.weights,
                           minlength=n_rows * r).reshape(n_rows, r)

    def local(self, j, parents):
        """The family's term of every method (an array in the order of ``methods``)."""
        key = (j, parents)
        out = self._cache.get(key)
        if out is None:
            out = self._cache[key] = self._compute(j, parents)
        return out

    def select_values(self, j, parent_sets, s):
        """Method ``s``'s term of the families ``(j, ps)`` for every ``ps`` of
        ``parent_sets`` (sorted tuples), as an array; the ones not cached yet are computed
        together."""
        cache = self._cache
        missing = [ps for ps in parent_sets if (j, ps) not in cache]
        if missing:
            self._compute_many(j, missing)
        return np.array([cache[(j, ps)][s] for ps in parent_sets], dtype=float)

    def _compute_many(self, j, parent_sets):
        if self.methods != ("bic",):
            for ps in parent_sets:
                self._cache[(j, ps)] = self._compute(j, ps)
            return
        offsets = np.zeros(len(parent_sets) + 1, dtype=np.int64)
        np.cumsum([len(ps) for ps in parent_sets], out=offsets[1:])
        flat = np.fromiter((p for ps in parent_sets for p in ps), dtype=np.int64,
                           count=offsets[-1])
        values = family_bics(self._codes_t, self.weights, j, flat, offsets, self._radices,
                             self.log_n, _KEY_LIMIT)
        for ps, v in zip(parent_sets, values.tolist()):
            # NaN: too many cells for the kernel's int64 configuration code
            self._cache[(j, ps)] = np.array([v]) if v == v else self._compute(j, ps)

    def _penalty(self, j, parents):
        return 0.5 * (self.r[j] - 1) * math.prod(self.r[p] for p in parents) * self.log_n

    def _compute(self, j, parents):
        N = self.counts(j, parents)
        r = self.r[j]
        q = math.prod(self.r[p] for p in parents)
        penalty = self._penalty(j, parents)
        rows = N.sum(axis=1, keepdims=True)
        out = np.empty(len(self.methods))
        for i, m in enumerate(self.methods):
            if m == "bic":
                out[i] = table_loglik(N) - penalty
            else:
                lam = family_prior_value(self.prior, self.ess, q, r)
                if m == "bic_map":
                    out[i] = float(np.sum(N * np.log((lam + N) / (r * lam + rows)))) - penalty
                else:  # "vb"
                    out[i] = float(np.sum(dirichlet_evidence(np.full(r, lam), N)))
        return out

    def total(self, parents):
        """Every method's score of the graph with parent sets ``parents``."""
        return np.sum([self.local(j, tuple(p)) for j, p in enumerate(parents)], axis=0)

    def score_results(self, values):
        """``{method: ScoreResult}`` for a graph's totals (no hidden node: ln S = 0)."""
        return {m: ScoreResult(method=m, log_evidence=float(v), bound=_BOUND[m],
                               log_alias_correction=0.0, diagnostics={"source": "families"})
                for m, v in zip(self.methods, values)}


def _decomposable_methods(specs, method, prior, ess):
    """The score names of ``specs`` when every one decomposes over families for an
    estimator with this ``method``, ``prior`` and ``ess``, else None."""
    methods = []
    for name, spec in specs.items():
        if (type(spec) is not _NamedMethod or spec.options
                or spec.method not in DECOMPOSABLE_METHODS or name != spec.method):
            return None
        if spec.method == "vb" and method != "vb":
            return None
        methods.append(spec.method)
    if any(m != "bic" for m in methods) and family_prior_value(prior, ess, 1, 2) is None:
        return None  # per-node prior tables: tied to the start graph's parent sets
    return methods


def _from_patterns(patterns, weights, structure, methods, prior, ess):
    if np.any(patterns < 0):
        return None  # missing values: the likelihood no longer factorises over families
    codes = np.empty((patterns.shape[0], structure.n_nodes), dtype=np.int64)
    codes[:, list(structure.observed)] = patterns
    return FamilyScores(codes, weights, structure.cardinalities, methods, prior, ess)


def decomposable_family_scores(estimator, specs, fitted, X, fit_params, hidden):
    """A :class:`FamilyScores` for the search when every requested score decomposes over
    families for this estimator and data, else None.

    ``fitted`` is the estimator fitted to ``X`` on the start graph (it encodes the data
    as every candidate would); ``hidden`` the hidden flags of the nodes.
    """
    if any(hidden) or fit_params or not isinstance(fitted, VBDiscreteDAG):
        return None
    methods = _decomposable_methods(specs, fitted.method, fitted.prior, fitted.ess)
    if methods is None:
        return None
    data = fitted.check_data(X)
    return _from_patterns(data.patterns, data.weights, fitted.structure_, methods,
                          fitted.prior, fitted.ess)


def prepared_family_scores(estimator, specs, X, fit_params, hidden):
    """:func:`decomposable_family_scores` without a fit: ``estimator`` (a clone with the
    start graph as its structure, changed here) validates and encodes ``X`` as its
    ``fit`` would, and the patterns it compresses them to are counted directly (a fit
    of the start graph would only add its VBEM and a second encoding of ``X``).
    Returns ``(FamilyScores or None, the parsed structure or None)``; an error of the
    validation is raised as ``fit`` would raise it.  Data that the estimator keeps in
    chunks where they live (a dask array) is not encoded in memory: there the start
    graph is fitted and :func:`decomposable_family_scores` reads the data back."""
    if any(hidden) or fit_params or not isinstance(estimator, VBDiscreteDAG):
        return None, None
    methods = _decomposable_methods(specs, estimator.method, estimator.prior, estimator.ess)
    if methods is None:
        return None, None
    estimator._validate_params()
    data = estimator._check_fit_data(X)
    pdata = getattr(data, "pdata", None)
    if pdata is None:  # data kept in chunks (dask): the start graph fitted once
        estimator.fit(X)
        return (decomposable_family_scores(estimator, specs, estimator, X, fit_params, hidden),
                estimator.structure_)
    structure = estimator._structure
    return (_from_patterns(pdata.patterns, pdata.weights, structure, methods,
                           estimator.prior, estimator.ess), structure)
