"""Structure search over the features of linear-chain CRFs: which input columns enter
the state features and which the transition features.

* :func:`crf_feature_sequence` - the nested model sequence of Parise and Welling (2006,
  Fig. 5): the state features added one at a time in a seeded random order, then the
  transition features;
* :class:`CRFFeatureSearch` - scores a given list of structures (``search="list"``, by
  default that sequence) or climbs greedily over single-feature additions and removals
  (``search="greedy"``), with the edge-set climber shared with the graph searches.

The labels travel with the fit parameters (``fit(X, y, lengths=...)``), since the CRF's
evidence is the conditional one, ``p(y | X)``.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, column_or_1d

from . import _common as C
from ._edge_search import EdgeSetSearchBase

__all__ = ["CRFFeatureSearch", "crf_feature_sequence"]


def crf_feature_sequence(n_inputs, random_state=None):
    """``2 * n_inputs`` nested structures ``{"state_features": ..., "transition_features":
    ...}``: model ``k < n_inputs`` has the first ``k + 1`` state features of a random
    order, model ``n_inputs + j`` all state features and the first ``j + 1`` transition
    features of a second random order.

    Examples
    --------
    >>> from sklearn_vb.model_selection import crf_feature_sequence
    >>> seq = crf_feature_sequence(3, random_state=0)
    >>> len(seq), seq[2]
    (6, {'state_features': [0, 1, 2], 'transition_features': []})
    >>> len(seq[-1]["transition_features"])
    3
    """
    rng = check_random_state(random_state)
    G = int(n_inputs)
    s_order = rng.permutation(G)
    t_order = rng.permutation(G)
    out = [{"state_features": sorted(int(a) for a in s_order[:k + 1]), "transition_features": []}
           for k in range(G)]
    out += [{"state_features": list(range(G)),
             "transition_features": sorted(int(a) for a in t_order[:j + 1])} for j in range(G)]
    return out


class _FeatureSet:
    """A CRF structure as an edge set: edge ``(0, 2 + a)`` is the state feature of column
    ``a``, ``(1, 2 + a)`` its transition feature (the shared climber's graph protocol)."""

    arrow = ":"

    def __init__(self, n_inputs, items):
        self.n_inputs = int(n_inputs)
        self.names = ("state", "transition") + tuple(f"x{a}" for a in range(self.n_inputs))
        self._items = frozenset((int(k), int(a)) for k, a in items)

    @classmethod
    def from_params(cls, n_inputs, state, transition):
        return cls(n_inputs, [(0, 2 + a) for a in state] + [(1, 2 + a) for a in transition])

    @property
    def key(self):
        return tuple(sorted(self._items))

    def edges(self):
        return set(self._items)

    def columns(self, kind):
        return sorted(a - 2 for k, a in self._items if k == kind)

    def as_structure(self):
        return (tuple(self.columns(0)), tuple(self.columns(1)))

    def as_params(self):
        return {"state_features": self.columns(0), "transition_features": self.columns(1)}


class _FeatureMoves:
    """Add or remove one state or transition feature."""

    def neighbours(self, fs):
        out = []
        for kind in (0, 1):
            for a in range(fs.n_inputs):
                item = (kind, 2 + a)
                if item in fs.edges():
                    out.append((("remove", kind, 2 + a), _FeatureSet(fs.n_inputs, fs.edges() - {item})))
                else:
                    out.append((("add", kind, 2 + a), _FeatureSet(fs.n_inputs, fs.edges() | {item})))
        return out

    def random_graph(self, fs, rng, n_moves):
        for _ in range(n_moves):
            nb = self.neighbours(fs)
            fs = nb[rng.randint(len(nb))][1]
        return fs


def _resolve_columns(spec, n_inputs):
    if isinstance(spec, str):
        return list(range(n_inputs)) if spec == "all" else []
    return sorted(int(a) for a in np.asarray(spec).reshape(-1))


class CRFFeatureSearch(EdgeSetSearchBase):
    """Search over the state and transition features of a
    :class:`~sklearn_vb.LinearChainCRF` by a marginal-likelihood score.

    Parameters
    ----------
    estimator : LinearChainCRF
    search : {"list", "greedy"}, default "list"
        ``"list"`` scores every structure of ``structures`` (default: the sequence of
        :func:`crf_feature_sequence`); ``"greedy"`` climbs from ``initial_structure`` (default
        the estimator's own features) over single additions and removals.
    structures : list of dicts with "state_features" and "transition_features", or None
    initial_structure : dict or None
    scoring : str, dict or list, default "bethe_laplace"
        Scores (the first, or ``refit``'s, selects); on a chain ``"bethe_laplace"`` is the
        exact Laplace approximation of the conditional evidence.
    n_restarts, max_steps, tol, refit, n_jobs, random_state, verbose, error_score, memory,
    alias_correction : as :class:`~sklearn_vb.model_selection.MRFStructureSearch`.

    Attributes
    ----------
    results_ (with ``structure`` = (state columns, transition columns) and ``n_edges`` = the
    number of included feature columns), ``path_`` (greedy), ``best_structure_``,
    ``best_params_``, ``best_score_``, ``best_estimator_``.

    Examples
    --------
    Greedy search over two input columns (an answer feature and a continuation feature):

    >>> from sklearn_vb import LinearChainCRF
    >>> from sklearn_vb.datasets import make_faq_like_sequences
    >>> from sklearn_vb.model_selection import CRFFeatureSearch
    >>> X, y, lengths = make_faq_like_sequences(n_documents=3, n_lines=40, random_state=1)
    >>> search = CRFFeatureSearch(LinearChainCRF("none", "none"), search="greedy")
    >>> search = search.fit(X[:, [4, 8]], y, lengths=lengths)
    >>> search.best_structure_                     # (state columns, transition columns)
    ((0, 1), (1,))
    """

    _parameter_constraints: dict = {
        **EdgeSetSearchBase._parameter_constraints,
        "initial_structure": [dict, None],
        "search": [StrOptions({"list", "greedy"})],
        "n_restarts": [Interval(Integral, 0, None, closed="left")],
        "max_steps": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, estimator, *, search="list", structures=None, initial_structure=None,
                 scoring="bethe_laplace", n_restarts=0, max_steps=100, tol=1e-6, refit=True,
                 n_jobs=None, random_state=None, verbose=0, error_score=np.nan, memory=None,
                 alias_correction="auto"):
        self.estimator = estimator
        self.search = search
        self.structures = structures
        self.initial_structure = initial_structure
        self.scoring = scoring
        self.n_restarts = n_restarts
        self.max_steps = max_steps
        self.tol = tol
        self.refit = refit
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.error_score = error_score
        self.memory = memory
        self.alias_correction = alias_correction

    def fit(self, X, y, lengths=None, sequence_ids=None):
        """Search the structures for labelled sequences ``(X, y)``."""
        self._validate_params()
        # the shapes of X and y are checked before any candidate is built from X's
        # width; their values are left to the CRF that every candidate fits (its
        # messages name what it supports)
        X = check_array(X, dtype=np.float64, ensure_all_finite=False, ensure_min_samples=1,
                        accept_sparse="csr", input_name="X")
        y = column_or_1d(y, warn=True)
        G = int(X.shape[1])
        # the labels go with the fit parameters: the scorers need them too
        fit_params = {"y": y}
        if lengths is not None:
            fit_params["lengths"] = lengths
        if sequence_ids is not None:
            fit_params["sequence_ids"] = sequence_ids
        specs = C.resolve_scoring(self.scoring)
        names = list(specs)
        selection = self.refit if isinstance(self.refit, str) else names[0]
        if selection not in names:
            raise ValueError(f"refit={self.refit!r} is not one of the scores {names}.")
        flags = {n: C.ranking_uses_correction(s, self.alias_correction, n) for n, s in specs.items()}
        if self.search == "greedy":
            init = self.initial_structure
            if init is None:
                p = self.estimator.get_params()
                init = {"state_features": p["state_features"],
                        "transition_features": p["transition_features"]}
            start = _FeatureSet.from_params(G, _resolve_columns(init["state_features"], G),
                                            _resolve_columns(init["transition_features"], G))
            self._climb(X, None, fit_params, specs, names, selection, flags, start,
                        _FeatureMoves(), None)
            return self
        structures = (crf_feature_sequence(G, self.random_state) if self.structures is None
                      else list(self.structures))
        if not structures:
            raise ValueError("search='list' needs a non-empty list of structures.")
        sets = [_FeatureSet.from_params(G, _resolve_columns(s["state_features"], G),
                                        _resolve_columns(s["transition_features"], G))
                for s in structures]
        self._climb(X, None, fit_params, specs, names, selection, flags, sets[0],
                    _ListMoves(sets), None)
        return self


class _ListMoves:
    """Every structure of a fixed list as the neighbourhood of the first: one climbing
    step scores the whole list (the climb then stops - nothing new is left)."""

    def __init__(self, sets):
        self.sets = sets

    def neighbours(self, fs):
        return [(("list", 0, 0), s) for s in self.sets if s.key != fs.key]

    def random_graph(self, fs, rng, n_moves):
        return fs
