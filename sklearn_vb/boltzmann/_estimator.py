"""Boltzmann machines with hidden units (binary pairwise MRFs, part of the nodes unobserved).

``p(x, h | lambda) = exp(lambda^T f(x, h)) / Z(lambda)`` over ``p`` visible and ``H``
hidden 0/1 units, with the biases and couplings of :class:`~sklearn_vb.PairwiseMRF` and
independent ``N(0, prior_variance)`` priors.  The fit maximises the penalised *visible*
likelihood ``sum_n ln p(x_n | lambda) + ln p(lambda)``
(:mod:`sklearn_vb.boltzmann._inference`): the hidden posterior ``p(h | x_n)`` exactly, by
enumerating the ``2^H`` hidden states for every distinct visible row; the free
partition function exactly by enumeration of the ``2^(p+H)`` joint states, or by loopy
belief propagation (Bethe ``ln Z_B``) on larger models.
"""

from __future__ import annotations

import re
from math import lgamma
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from .._core.validation import validate_float_data
from ..mrf import prior_precision_vector
from ..mrf.inference import BPEngine, ExactEngine, sample_states
from ..mrf.layout import MRFLayout, parse_structure
from ._inference import VisibleLikelihood, fit_visible_map, hidden_states

__all__ = ["BoltzmannMachine", "boltzmann_edges"]


def boltzmann_edges(n_visible, n_hidden, connectivity):
    """The edge array of a Boltzmann machine (visible nodes ``0..p-1``, hidden ``p..``):
    ``"restricted"`` every visible-hidden pair (RBM); ``"full"`` every pair; or an edge
    list / symmetric adjacency over all ``p + H`` nodes.

    Examples
    --------
    >>> from sklearn_vb.boltzmann import boltzmann_edges
    >>> boltzmann_edges(2, 1, "restricted").tolist()
    [[0, 2], [1, 2]]
    >>> len(boltzmann_edges(2, 1, "full"))
    3
    """
    p, H = int(n_visible), int(n_hidden)
    if isinstance(connectivity, str):
        if connectivity == "restricted":
            return np.array([(i, p + j) for i in range(p) for j in range(H)],
                            dtype=np.int64).reshape(-1, 2)
        if connectivity == "full":
            return parse_structure("complete", p + H)
        raise ValueError(f"connectivity must be 'restricted', 'full' or an edge list, got "
                         f"{connectivity!r}.")
    try:
        return parse_structure(connectivity, p + H)
    except ValueError as exc:
        raise ValueError(f"connectivity: {exc}") from exc


class BoltzmannMachine(DensityMixin, TransformerMixin, BaseEstimator):
    """Boltzmann machine with hidden units, fitted at the MAP of the visible likelihood.

    Parameters
    ----------
    n_hidden : int, default 1
        Number of hidden units (0: a fully observed model).
    connectivity : {"restricted", "full"} or edge list, default "restricted"
        ``"restricted"``: the bipartite RBM (every visible-hidden pair, no other edges);
        ``"full"``: every pair of units; or the edges as node pairs over the ``p + H``
        units (visible ``0..p-1``, then hidden).
    prior_variance : float, dict or array, default 1.0
        As :class:`~sklearn_vb.PairwiseMRF` (``{"node": v, "edge": v}`` or one value per
        feature).
    inference : {"auto", "exact", "bp"}, default "auto"
        The free partition function: enumeration when ``2^(p+H) <= max_exact_states``,
        else loopy BP (Bethe).  The hidden posterior is always exact (enumeration of
        ``2^H`` states per distinct visible row; ``H <= max_hidden``).
    max_exact_states : int, default 2**16
    max_hidden : int, default 12
    n_init : int, default 4
        Starts of the L-BFGS fit (the first at small weights from ``random_state``, all
        random: the hidden units are exchangeable and need their symmetry broken).
    init_scale : float, default 0.5
        Standard deviation of the random starting weights.
    threshold : float or None, default None
        ``None``: ``X`` must be 0/1; a number: ``X > threshold`` is read as 1.
    max_iter : int, default 500
    tol : float, default 1e-10
        Newton decrement (nats) of the final polish.
    bp_damping, bp_tol, bp_max_iter : BP settings (as PairwiseMRF).
    random_state : int, RandomState or None
    verbose : int, default 0

    Attributes
    ----------
    coef_ : (F,) canonical parameters (node features of the visible then the hidden
        units, then edge features); ``edges_`` (E, 2); ``n_visible_`` (=
        ``n_features_in_``), ``n_hidden_``, ``feature_names_``, ``n_parameters_``,
        ``inference_``, ``log_partition_`` (exact or Bethe), ``objective_`` (``l + ln p``
        at ``coef_``), ``loglik_``, ``n_iter_``, ``converged_``, ``start_objectives_`` (the
        best ``t`` of each start), ``n_samples_``, ``train_patterns_`` (U, p) and
        ``train_counts_`` (U,) (the distinct training rows and their weights).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import BoltzmannMachine
    >>> from sklearn_vb.scoring import score
    >>> rng = np.random.default_rng(0)
    >>> x0 = rng.integers(0, 2, 100)
    >>> X = np.column_stack([x0, x0, rng.integers(0, 2, 100)]).astype(float)
    >>> bm = BoltzmannMachine(n_hidden=1, random_state=0).fit(X)
    >>> bm.coef_.shape  # 4 biases and 3 visible-hidden couplings
    (7,)
    >>> bool(np.isclose(np.exp(bm.score_samples(np.indices((2, 2, 2)).reshape(3, -1).T)).sum(), 1))
    True
    >>> lap = score(bm, X, "hidden_laplace").log_evidence
    >>> bool(score(bm, X, "hidden_vb").log_evidence < lap)
    True
    """

    _parameter_constraints: dict = {
        "n_hidden": [Interval(Integral, 0, None, closed="left")],
        "connectivity": "no_validation",
        "prior_variance": "no_validation",
        "inference": [StrOptions({"auto", "exact", "bp"})],
        "max_exact_states": [Interval(Integral, 1, None, closed="left")],
        "max_hidden": [Interval(Integral, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "init_scale": [Interval(Real, 0, None, closed="left")],
        "threshold": [Real, None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "bp_damping": [Interval(Real, 0, 1, closed="left")],
        "bp_tol": [Interval(Real, 0, None, closed="neither")],
        "bp_max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, n_hidden=1, *, connectivity="restricted", prior_variance=1.0,
                 inference="auto", max_exact_states=2**16, max_hidden=12, n_init=4,
                 init_scale=0.5, threshold=None, max_iter=500, tol=1e-10, bp_damping=0.5, bp_tol=1e-10,
                 bp_max_iter=2000, random_state=None, verbose=0):
        self.n_hidden = n_hidden
        self.connectivity = connectivity
        self.prior_variance = prior_variance
        self.inference = inference
        self.max_exact_states = max_exact_states
        self.max_hidden = max_hidden
        self.n_init = n_init
        self.init_scale = init_scale
        self.threshold = threshold
        self.max_iter = max_iter
        self.tol = tol
        self.bp_damping = bp_damping
        self.bp_tol = bp_tol
        self.bp_max_iter = bp_max_iter
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ input
    def _codes(self, X):
        if self.threshold is not None:
            return (X > self.threshold).astype(np.int64)
        bad = (X != 0) & (X != 1)
        if np.any(bad):
            raise ValueError(f"X: a Boltzmann machine needs binary 0/1 data, found "
                             f"{X[bad][0]!r}.")
        return X.astype(np.int64)

    def engine(self, layout=None, warn=True):
        """The free-model engine of the fitted (or given) joint layout."""
        layout = self._layout if layout is None else layout
        kind = self.inference
        M = layout.n_states_total
        if kind == "auto":
            kind = "exact" if M <= self.max_exact_states else "bp"
        if kind == "exact":
            if M > self.max_exact_states:
                raise ValueError(f"inference='exact': {M} joint states exceed max_exact_states="
                                 f"{self.max_exact_states}; use inference='bp'.")
            return ExactEngine(layout)
        return BPEngine(layout, damping=self.bp_damping, tol=self.bp_tol,
                        max_iter=self.bp_max_iter, warn=warn)

    def visible_likelihood(self, codes, weights=None, layout=None):
        """The ``VisibleLikelihood`` of int rows."""
        layout = self._layout if layout is None else layout
        w = np.ones(codes.shape[0]) if weights is None else np.asarray(weights, dtype=float)
        patterns, inverse = np.unique(codes, axis=0, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=w, minlength=patterns.shape[0])
        keep = counts > 0
        return VisibleLikelihood(layout, codes.shape[1], patterns[keep], counts[keep],
                                 self.engine(layout))

    def precision(self, layout=None):
        """The prior precision of every canonical parameter, from ``prior_variance``, for
        the fitted layout unless ``layout`` is given."""
        return prior_precision_vector(self.prior_variance, self._layout if layout is None else layout)

    def fit(self, X, y=None, sample_weight=None):
        """MAP fit of the visible likelihood (one case per row of binary ``X``)."""
        self._validate_params()
        X = validate_float_data(self, X, reset=True, max_abs=None, ensure_min_samples=1)
        sw = _check_sample_weight(sample_weight, X)
        if np.any(sw < 0):
            raise ValueError("sample_weight must be non-negative.")
        if self.n_hidden > self.max_hidden:
            raise ValueError(f"n_hidden={self.n_hidden} exceeds max_hidden={self.max_hidden} "
                             "(the hidden posterior enumerates 2^n_hidden states per row).")
        codes = self._codes(X)
        p, H = X.shape[1], int(self.n_hidden)
        edges = boltzmann_edges(p, H, self.connectivity)
        layout = MRFLayout(np.full(p + H, 2, dtype=np.int64), edges)
        P = prior_precision_vector(self.prior_variance, layout)
        vlik = self.visible_likelihood(codes, sw, layout)
        rng = check_random_state(self.random_state)
        starts = self.init_scale * rng.standard_normal((self.n_init, layout.n_features))
        res = fit_visible_map(vlik, P, starts, self.max_iter, self.tol, verbose=self.verbose)
        self._layout = layout
        self.train_patterns_, self.train_counts_ = vlik.patterns, vlik.counts
        self.edges_ = layout.edges
        self.n_visible_, self.n_hidden_ = p, H
        self.coef_ = res.coef
        self.feature_names_ = np.array(self._hidden_names(layout.feature_names(), p), dtype=object)
        self.n_parameters_ = layout.n_features
        self.inference_ = "exact" if isinstance(vlik.engine, ExactEngine) else "bp"
        ev = vlik.evaluate(res.coef)
        self.log_partition_ = ev.log_partition
        self.loglik_ = ev.loglik
        self.objective_ = res.objective
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.start_objectives_ = np.asarray(res.objectives)
        self.n_samples_ = float(np.sum(sw))
        return self

    @staticmethod
    def _hidden_names(names, p):
        def rename(m):
            k = int(m.group(1))
            return f"h{k - p}" if k >= p else f"x{k}"
        return [re.sub(r"x(\d+)", rename, n) for n in names]

    def check_data(self, X):
        """The ``(N, p)`` int codes of binary ``X`` (validated against the fit)."""
        check_is_fitted(self, "coef_")
        X = validate_float_data(self, X, reset=False, max_abs=None)
        return self._codes(X)

    # ------------------------------------------------------------------ densities
    def score_samples(self, X):
        """``ln p(x | coef_)`` per row: the hidden units summed out exactly, the free
        ``ln Z`` exact or Bethe (``inference_``)."""
        codes = self.check_data(X)
        vlik = VisibleLikelihood(self._layout, self.n_visible_, codes, np.ones(codes.shape[0]),
                                 _FixedLogPartition(self.log_partition_))
        return vlik.clamped_log_partition(self.coef_)[0] - self.log_partition_

    def score(self, X, y=None):
        """Mean visible log-likelihood per row (not an evidence)."""
        return float(np.mean(self.score_samples(X)))

    def transform(self, X):
        """``p(h_j = 1 | x)`` per row and hidden unit (exact)."""
        codes = self.check_data(X)
        vlik = VisibleLikelihood(self._layout, self.n_visible_, codes, np.ones(codes.shape[0]),
                                 _FixedLogPartition(self.log_partition_))
        w, _ = vlik.hidden_posterior(self.coef_)
        return w @ hidden_states(self.n_hidden_).astype(float)

    def sample(self, n_samples=1, random_state=None, method="auto", n_burnin=1000, thin=10,
               return_hidden=False):
        """Draw visible rows (with the hidden ones when ``return_hidden``): exactly by
        enumeration of the joint states when there are at most ``max_exact_states``,
        else by single-site Gibbs sampling (approximate)."""
        check_is_fitted(self, "coef_")
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        rng = check_random_state(random_state if random_state is not None else self.random_state)
        full = np.asarray(sample_states(self._layout, self.coef_, n_samples, rng, method,
                                        self.max_exact_states, n_burnin, thin), dtype=float)
        v = full[:, :self.n_visible_]
        return (v, full[:, self.n_visible_:]) if return_hidden else v

    def log_n_aliases(self):
        """``ln H!`` for the exchangeable hidden units of ``"restricted"`` and ``"full"``
        connectivity (permuting them leaves ``p(x | lambda)`` and the prior unchanged);
        0 for an explicit edge list."""
        check_is_fitted(self, "coef_")
        if isinstance(self.connectivity, str):
            return lgamma(self.n_hidden_ + 1)
        return 0.0

    @property
    def layout_(self):
        check_is_fitted(self, "coef_")
        return self._layout

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


class _FixedLogPartition:
    """An engine stand-in returning a stored ``ln Z`` (scoring rows at the fitted point)."""

    def __init__(self, log_partition):
        self.value = float(log_partition)

    def log_partition(self, coefs):
        return np.full(np.atleast_2d(coefs).shape[0], self.value)
