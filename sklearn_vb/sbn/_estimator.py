"""Bayesian sigmoid (logistic) belief networks fitted by variational EM with the
Jaakkola–Jordan bound.

Every node is binary (0/1).  Node ``j`` with parents ``pa(j)`` has
``p(x_j = 1 | x_pa) = sigma(w_j . u_j)``, ``u_j = [1, x_pa(j)]`` (a bias and one weight
per parent), and every bias and weight has an independent ``N(0, prior_variance)``
prior (de Freitas et al. used ``N(0, 100 I)``).  Hidden nodes are allowed; a missing
value (NaN) makes an observed node hidden for that case only.

The variational posterior is ``q(h) q(w)`` with ``q(w) = prod_j N(m_j, S_j)`` (a full
covariance per node) and, for every case, ``q(h_i)`` an unrestricted distribution over
the joint configurations of the case's unobserved nodes (enumerated; this is exact
structured inference, not mean field).  The logistic likelihood terms are bounded with
the Jaakkola–Jordan inequality (Jaakkola & Jordan 2000), one ``xi`` per case,
configuration and node.  One iteration is

* VBM: ``S_j^-1 = I / v + sum 2 lambda(xi) u u^T``, ``m_j = S_j sum (x_j - 1/2) u``
  (sums over cases and configurations weighted by q(h));
* xi: ``xi = sqrt(u^T E[w w^T] u)`` (the optimum);
* VBE: ``q(h_i) ∝ exp(expected bound of ln p(x_i, h_i | w))``.

Each step maximises the same objective over one of its arguments, so it never
decreases.  ``lower_bound_`` is that objective,
``E_q[JJ bound of ln p(X, h | w)] + H[q(h)] - KL(q(w) || p(w))``, which is below the
ordinary variational bound ``E_q[ln p(X, h | w)] + H[q(h)] - KL`` and hence below
``ln p(X)``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from sklearn.base import DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.base import Step, VBEMEstimator
from .._core.validation import validate_float_data
from ..dag.structure import parse_structure
from ._kernels import (
    jj_row_terms,
    jj_statistics,
    normalise_rows,
    pattern_log_likelihoods,
    sequential_pass,
)

__all__ = ["VBSigmoidBeliefNetwork", "SBNPatterns", "map_weights"]

#: default refusal threshold on the configurations of the unobserved nodes of one case
MAX_CONFIGURATIONS = 2**12


@dataclass
class SBNPatterns:
    """Cases compressed to distinct observed patterns and expanded into enumeration rows.

    ``states`` (rows, J) holds 0/1 values of all nodes; the rows of pattern ``p`` are
    ``row_start[p]:row_start[p+1]`` (one per configuration of its unobserved nodes);
    ``weights`` counts the cases of each pattern and ``inverse`` maps every case to its
    pattern.  :meth:`sklearn_vb.VBSigmoidBeliefNetwork.check_data` returns one for new data.

    Examples
    --------
    Four cases with two distinct patterns; each pattern is expanded into the two
    configurations of the hidden node:

    >>> import numpy as np
    >>> from sklearn_vb import VBSigmoidBeliefNetwork
    >>> X = np.array([[0., 1.], [0., 1.], [1., 1.], [0., 1.]])
    >>> sbn = VBSigmoidBeliefNetwork(n_init=1, max_iter=5, random_state=0).fit(X)
    >>> patterns = sbn.check_data(X)
    >>> patterns.n_patterns, patterns.states.shape       # rows: (patterns x 2, nodes)
    (2, (4, 3))
    >>> patterns.weights.tolist(), patterns.inverse.tolist()
    ([3.0, 1.0], [0, 0, 1, 0])
    """

    states: np.ndarray
    row_start: np.ndarray
    weights: np.ndarray
    inverse: np.ndarray
    row_pattern: np.ndarray = field(init=False)

    def __post_init__(self):
        self.row_pattern = np.repeat(np.arange(self.weights.size), np.diff(self.row_start))

    @property
    def n_patterns(self):
        return self.weights.size


@dataclass
class _Layout:
    """Where node ``j``'s free weights, their inputs and second moments live in flat
    arrays.

    ``in_idx[w_ptr[j] + k]`` is the node feeding weight ``k`` of node ``j`` (-1: the
    bias); a node whose bias is fixed has no bias weight and adds ``offset[j]`` to its
    activation instead (``has_bias[j]`` False).
    """

    in_idx: np.ndarray
    w_ptr: np.ndarray
    m2_ptr: np.ndarray
    offset: np.ndarray
    has_bias: np.ndarray
    spin: bool = False

    @classmethod
    def from_structure(cls, structure, fixed_bias=None, spin=False):
        """``fixed_bias``: None or a dict node index -> known bias."""
        fixed_bias = fixed_bias or {}
        parents = structure.parents
        J = len(parents)
        has_bias = np.array([j not in fixed_bias for j in range(J)])
        offset = np.array([float(fixed_bias.get(j, 0.0)) for j in range(J)])
        inputs = [([-1] if has_bias[j] else []) + list(parents[j]) for j in range(J)]
        dims = np.array([len(i) for i in inputs], dtype=np.int64)
        in_idx = np.array([i for ins in inputs for i in ins], dtype=np.int64)
        w_ptr = np.concatenate([[0], np.cumsum(dims)]).astype(np.int64)
        m2_ptr = np.concatenate([[0], np.cumsum(dims**2)]).astype(np.int64)
        return cls(in_idx, w_ptr, m2_ptr, offset, has_bias, bool(spin))

    def full(self, j, free):
        """Node ``j``'s ``[bias, parent weights...]`` from its free weights."""
        free = np.asarray(free, dtype=float)
        return free.copy() if self.has_bias[j] else np.concatenate([[self.offset[j]], free])

    def full_cov(self, j, cov):
        """Covariance of ``[bias, parent weights...]`` (a fixed bias has none)."""
        if self.has_bias[j]:
            return cov.copy()
        out = np.zeros((cov.shape[0] + 1, cov.shape[0] + 1))
        out[1:, 1:] = cov
        return out

    def free(self, j, full):
        """The free weights of node ``j`` from ``[bias, parent weights...]``."""
        full = np.asarray(full, dtype=float)
        return full.copy() if self.has_bias[j] else full[1:].copy()

    @property
    def dims(self):
        return np.diff(self.w_ptr)

    @property
    def size(self):
        return int(self.w_ptr[-1])

    def split(self, flat):
        return [flat[a:b] for a, b in zip(self.w_ptr[:-1], self.w_ptr[1:])]


def expand_patterns(codes, structure, max_configurations=MAX_CONFIGURATIONS):
    """``codes`` (n, n_observed) with 0/1 and -1 for missing -> :class:`SBNPatterns`."""
    J = structure.n_nodes
    obs = np.array(structure.observed, dtype=np.int64)
    uniq, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    blocks, starts = [], [0]
    for pattern in uniq:
        base = np.zeros(J)
        base[obs] = np.maximum(pattern, 0)
        unobserved = sorted(list(structure.hidden_nodes) + list(obs[pattern < 0]))
        k = len(unobserved)
        if 2**k > max_configurations:
            raise ValueError(
                f"a case has {k} unobserved binary nodes ({2**k} configurations), more than "
                f"max_configurations={max_configurations}; exact enumeration is refused.")
        configs = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1
        rows = np.repeat(base[None, :], 2**k, axis=0)
        rows[:, unobserved] = configs
        blocks.append(rows)
        starts.append(starts[-1] + 2**k)
    return SBNPatterns(np.ascontiguousarray(np.concatenate(blocks)), np.array(starts, dtype=np.int64),
                       counts.astype(float), inverse.reshape(-1))


def _gaussian_kl(mean, cov, v, prior_mean=0.0):
    """KL(N(mean, cov) || N(prior_mean, v I))."""
    d = mean.size
    if d == 0:
        return 0.0
    _, logdet = np.linalg.slogdet(cov)
    diff = mean - prior_mean
    return 0.5 * (np.trace(cov) / v + diff @ diff / v - d + d * np.log(v) - logdet)


def _inverse_spd(P):
    """Inverse of a symmetric positive definite matrix through its Cholesky factor."""
    if P.size == 0:
        return np.zeros((0, 0))
    Linv = np.linalg.inv(np.linalg.cholesky(0.5 * (P + P.T)))
    return Linv.T @ Linv


def _solve_node(prec_data, lin, v, prior_mean=0.0):
    """Gaussian update of one node: precision ``prec_data + I/v``, linear term
    ``lin + prior_mean / v``; returns (mean, cov)."""
    d = lin.size
    if d == 0:
        return np.zeros(0), np.zeros((0, 0))
    lin = lin + np.asarray(prior_mean) / v
    P = prec_data.reshape(d, d) + np.eye(d) / v
    L = np.linalg.cholesky(P)
    Linv = np.linalg.inv(L)
    cov = Linv.T @ Linv
    return cov @ lin, cov


def map_weights(patterns, layout, prior_variance, w_init, max_iter=5000, tol=1e-10,
                prior_mean=0.0):
    """MAP weights by EM with the Jaakkola–Jordan bound at a point (an MM algorithm).

    With ``q(w)`` a point mass the bound is tight at ``xi = |w.u|``, so every iteration
    (exact E step over the unobserved nodes, then the quadratic-bound M step) raises
    ``ln p(X | w) + ln p(w)``, the objective returned with the weights.  This is the
    point-estimate counterpart of the variational updates of de Freitas et al. (2001),
    §3.2-3.3 (``q(w)`` collapsed to a point, ``xi`` at its optimum).

    Parameters
    ----------
    patterns : SBNPatterns
        The data, e.g. from :meth:`sklearn_vb.VBSigmoidBeliefNetwork.check_data`.
    layout : object
        ``weight_layout_`` of a fitted network (where each node's weights sit).
    prior_variance : float
        Variance of the ``N(prior_mean, v)`` prior of every weight.
    w_init : ndarray
        Starting flat vector of the free weights (nodes in structure order, each
        ``[bias, parents...]``, a fixed bias left out).
    max_iter, tol : int, float
        Iteration cap; stop when the objective changes by less than ``tol`` relatively.
    prior_mean : float or ndarray, default=0.0
        Prior mean of every free weight (``prior_mean_`` of a fitted network).

    Returns
    -------
    w : ndarray
        The MAP weights.
    trace : ndarray
        The objective after every iteration (never decreasing).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import VBSigmoidBeliefNetwork
    >>> from sklearn_vb.sbn import map_weights
    >>> rng = np.random.RandomState(0)
    >>> X = (rng.rand(40, 2) < 0.3).astype(float)
    >>> sbn = VBSigmoidBeliefNetwork(n_init=1, random_state=0).fit(X)
    >>> w, trace = map_weights(sbn.check_data(X), sbn.weight_layout_, 100.0,
    ...                        np.concatenate(sbn.coef_), max_iter=100)
    >>> w.shape
    (5,)
    >>> bool(np.all(np.diff(trace) > -1e-9))
    True
    """
    w = np.array(w_init, dtype=float)
    R, J = patterns.states.shape
    xi = np.empty((R, J))
    terms = np.empty(R)
    post = np.empty(R)
    log_z = np.empty(patterns.n_patterns)
    ent = np.empty(patterns.n_patterns)
    prec = np.empty(int(layout.m2_ptr[-1]))
    lin = np.empty(layout.size)
    v = float(prior_variance)
    mu = np.broadcast_to(np.asarray(prior_mean, dtype=float), (layout.size,))
    const = -0.5 * layout.size * np.log(2 * np.pi * v)

    def objective(w):
        M2 = np.concatenate([np.outer(m, m).ravel() for m in layout.split(w)])
        jj_row_terms(patterns.states, layout.in_idx, w, layout.w_ptr, M2, layout.m2_ptr,
                     layout.offset, layout.spin, xi, True, terms)
        normalise_rows(terms, patterns.row_start, post, log_z, ent)
        return float(patterns.weights @ log_z) - 0.5 * (w - mu) @ (w - mu) / v + const

    obj = objective(w)
    trace = [obj]
    for _ in range(int(max_iter)):
        jj_statistics(patterns.states, layout.in_idx, layout.w_ptr, layout.m2_ptr,
                      layout.offset, layout.spin, xi, patterns.weights[patterns.row_pattern] * post, prec, lin)
        parts = []
        for j, d in enumerate(layout.dims):
            a, b = layout.m2_ptr[j], layout.m2_ptr[j + 1]
            P = prec[a:b].reshape(d, d) + np.eye(d) / v
            sl = slice(layout.w_ptr[j], layout.w_ptr[j + 1])
            parts.append(np.linalg.solve(P, lin[sl] + mu[sl] / v) if d else np.zeros(0))
        w = np.concatenate(parts)
        new = objective(w)
        trace.append(new)
        if abs(new - obj) < tol * max(1.0, abs(new)):
            break
        obj = new
    return w, np.array(trace)


@dataclass
class _FitData:
    """Enumeration rows of the training data, the weight layout and work buffers."""

    patterns: SBNPatterns
    layout: _Layout
    prior_variance: float
    prior_mean: np.ndarray
    scratch: np.ndarray = field(init=False)

    def __post_init__(self):
        self.scratch = np.empty(self.patterns.states.shape[0])


class VBSigmoidBeliefNetwork(DensityMixin, VBEMEstimator):
    """Bayesian sigmoid belief network with hidden nodes, fitted by variational EM
    with the Jaakkola–Jordan bound.

    Parameters
    ----------
    structure : None, dict, list of (parent, child) pairs, or square ndarray
        The DAG, in the formats of :class:`~sklearn_vb.VBDiscreteDAG` (a dict child ->
        ordered parents, an edge list, or an adjacency matrix).  ``None`` (default): one
        hidden binary node ``"latent"``, parent of every column of ``X``.
    hidden : None, name or iterable of names
        The hidden nodes (never observed; not columns of ``X``).
    prior_variance : float, default=100.0
        Variance ``v`` of the independent ``N(prior_mean, v)`` priors of every bias and
        weight.
    prior_mean : float or dict, default=0.0
        Prior mean of every bias and weight (de Freitas et al. used ``N(3, 10 I)`` in
        their bimodal experiment), or a dict node -> a number or the node's
        ``[bias, parent weights...]`` means (nodes left out: 0).
    fixed_bias : None, float or dict, default=None
        Known biases, not learnt: a number for every node, or a dict node -> bias.  A
        fixed bias is no parameter (it has no prior and no posterior); the other
        nodes' biases are weights as usual.
    parent_coding : {"binary", "spin"}, default="binary"
        How a parent's value enters its children's activations: as 0/1, or as -1/+1
        (``2x - 1``; the node values themselves stay 0/1).  With "spin", relabelling a
        hidden parent flips the sign of its weights, which makes posteriors bimodal, as
        in de Freitas et al.'s multimodal experiment.
    binarize : float or None, default=None
        As for ``BernoulliNB``: ``None`` requires ``X`` to hold 0/1 (NaN = missing);
        a number maps values above it to 1 and the others to 0.
    max_iter, tol, n_init, init_params, random_state, warm_start, verbose, verbose_interval, bound_check
        See :class:`sklearn_vb.base.VBEMEstimator`; ``tol`` in nats on the total
        bound.  ``init_params="random"``: posterior means drawn from ``N(0, 1)``, unit
        covariances.
    max_configurations : int, default=4096
        Refuse a case whose unobserved nodes have more joint configurations (exact
        enumeration per case is the only inference offered).
    method : {"batch", "sequential"}, default="batch"
        ``"batch"``: variational EM on all cases at once (above).  ``"sequential"``:
        de Freitas et al.'s one-pass recursive approximation (their Fig. 3; see the
        module docstring): every case updates the Gaussian q(w) once, with its own
        ``xi`` and q(h) iterated to convergence (``max_iter`` iterations per case at
        most, ``tol`` in nats on the case's bound).  It is deterministic (no random
        start: ``n_init``, ``init_params`` and ``warm_start`` have no effect), depends
        on the order of the rows, and ``lower_bound_`` is the batch objective above at
        the resulting q(w) (``xi`` and q(h) at their optima), a lower bound on
        ``ln p(X)`` like the batch one but below the batch optimum.

    Attributes
    ----------
    structure_ : DAGStructure
    weight_layout_ : object
        Where each node's weights and parents sit in flat weight vectors.
    coef_ : list of ndarray
        Posterior mean of every node's weights ``[bias, parent weights...]`` (a fixed
        bias at its value).
    covariances_ : list of ndarray
        Posterior covariance of every node's ``[bias, parent weights...]`` (zero row and
        column for a fixed bias).
    prior_mean_ : ndarray
        Prior mean of every free weight, flat (the order of ``weight_layout_``).
    lower_bound_ : float
        The Jaakkola–Jordan variational bound (nats, total); a lower bound on
        ``ln p(X)`` (see the module docstring).
    log_likelihood_ : float
        ``ln p(X | coef_)``, hidden nodes summed out.
    n_parameters_ : int
        Number of free biases and weights.
    case_bounds_ : ndarray (n_samples,)
        Only with ``method="sequential"``: each case's bound (see the module docstring),
        in row order; their sum estimates ``ln p(X)`` (not a bound: each case is
        integrated against the approximate posterior of the cases before it).
    case_iterations_ : ndarray (n_samples,)
        Only with ``method="sequential"``: the iterations each case took.

    Notes
    -----
    The logistic belief network of de Freitas, Højen-Sørensen, Jordan & Russell (2001),
    §2, with the ``N(0, 100 I)`` weight prior of their experiments (§5.1) as default,
    fitted by the variational approximation of their §3.2 (fully observed nodes) and
    §3.3 (hidden nodes), which bounds every logistic term with the Jaakkola–Jordan
    inequality (their eq. 6): on all cases at once (``method="batch"``) or, as they did,
    case by case in one pass (``method="sequential"``).
    Unlike their §3.3, ``q(h)`` is not a mean-field product: each case's unobserved
    nodes get an exact joint distribution by enumeration (with one hidden node per case,
    as in their experiments, the two coincide).  The posterior can be refined
    by :class:`~sklearn_vb.mcmc.VariationalMCMC` (their §4).

    Examples
    --------
    One hidden binary cause of three binary columns (the default structure):

    >>> import numpy as np
    >>> from sklearn_vb import VBSigmoidBeliefNetwork
    >>> rng = np.random.RandomState(0)
    >>> cause = rng.rand(60) < 0.5
    >>> X = (rng.rand(60, 3) < np.where(cause[:, None], 0.9, 0.1)).astype(float)
    >>> sbn = VBSigmoidBeliefNetwork(n_init=1, random_state=0).fit(X)
    >>> sbn.structure_.names
    ('latent', 'x0', 'x1', 'x2')
    >>> [w.shape for w in sbn.coef_]      # [bias, parent weights...] per node
    [(1,), (2,), (2,), (2,)]
    >>> sbn.n_parameters_
    7
    >>> bool(np.all(np.diff(sbn.lower_bounds_) > -1e-9))   # VBEM never lowers the bound
    True
    >>> sbn.predict_proba(X[:2]).shape    # posterior of the hidden node per row
    (2, 2)
    """

    _parameter_constraints: dict = {
        **VBEMEstimator._parameter_constraints,
        "structure": "no_validation",
        "hidden": "no_validation",
        "prior_variance": [Interval(Real, 0.0, None, closed="neither")],
        "prior_mean": "no_validation",
        "fixed_bias": "no_validation",
        "parent_coding": [StrOptions({"binary", "spin"})],
        "binarize": [None, Interval(Real, None, None, closed="neither")],
        "max_configurations": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions({"batch", "sequential"})],
    }

    def __init__(self, structure=None, hidden=None, *, prior_variance=100.0, prior_mean=0.0,
                 fixed_bias=None, parent_coding="binary", binarize=None,
                 max_iter=1000, tol=1e-4, n_init=3, init_params="random", random_state=None,
                 warm_start=False, verbose=0, verbose_interval=10, bound_check="raise",
                 max_configurations=MAX_CONFIGURATIONS, method="batch"):
        super().__init__(max_iter=max_iter, tol=tol, n_init=n_init, init_params=init_params,
                         random_state=random_state, warm_start=warm_start, verbose=verbose,
                         verbose_interval=verbose_interval, bound_check=bound_check)
        self.structure = structure
        self.hidden = hidden
        self.prior_variance = prior_variance
        self.prior_mean = prior_mean
        self.fixed_bias = fixed_bias
        self.parent_coding = parent_coding
        self.binarize = binarize
        self.max_configurations = max_configurations
        self.method = method

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # ------------------------------------------------------------------ input
    def _columns_for(self, names, n_features, structure):
        obs_names = [structure.names[j] for j in structure.observed]
        if self.structure is None:
            return np.arange(n_features)
        for j in structure.hidden_nodes:
            if names is not None and str(structure.names[j]) in names:
                raise ValueError(f"X has a column {structure.names[j]!r}, but that node is "
                                 "declared hidden (hidden nodes are never observed).")
        if names is not None and all(isinstance(n, str) for n in obs_names):
            lookup = {n: i for i, n in enumerate(names)}
            missing = [n for n in obs_names if n not in lookup]
            extra = [n for n in names if n not in set(obs_names)]
            if missing or extra:
                raise ValueError("the columns of X do not match the observed nodes of the "
                                 f"structure: missing {missing}, unexpected {extra}.")
            return np.array([lookup[n] for n in obs_names], dtype=np.int64)
        if n_features != len(obs_names):
            raise ValueError(f"X has {n_features} columns, but the structure has "
                             f"{len(obs_names)} observed nodes {obs_names}.")
        return np.arange(n_features)

    def _codes(self, Xv):
        X = Xv[:, self._columns]
        nan = np.isnan(X)
        if self.binarize is not None:
            codes = (X > self.binarize).astype(np.int8)
        else:
            bad = ~nan & (X != 0) & (X != 1)
            if np.any(bad):
                raise ValueError(
                    f"X must hold 0/1 values (NaN for missing); found {X[bad][0]!r}. Use "
                    "binarize=<threshold> to binarise real-valued data.")
            codes = np.where(nan, 0, X).astype(np.int8)
        codes[nan] = -1
        return codes

    def _check_fit_data(self, X):
        Xv = validate_float_data(self, X, reset=True, allow_nan=True, max_abs=None)
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else [str(v) for v in names]
        obs_names = names if names is not None else [f"x{i}" for i in range(Xv.shape[1])]
        structure = parse_structure(self.structure, 2, self.hidden, observed_names=obs_names,
                                    n_components=2)
        if any(c != 2 for c in structure.cardinalities):
            raise ValueError("every node of a sigmoid belief network is binary.")
        self._structure = structure
        self._columns = self._columns_for(names, Xv.shape[1], structure)
        self._layout = _Layout.from_structure(structure, self._fixed_biases(structure),
                                              spin=self.parent_coding == "spin")
        self._prior_mean_flat = self._prior_means(structure, self._layout)
        patterns = expand_patterns(self._codes(Xv), structure, self.max_configurations)
        return _FitData(patterns, self._layout, float(self.prior_variance), self._prior_mean_flat)

    def _node_dict(self, value, structure, name):
        """A dict keyed by node names -> {node index: value}, unknown names refused."""
        out = {}
        for node, v in value.items():
            try:
                out[structure.index(node)] = v
            except (KeyError, ValueError, IndexError):
                raise ValueError(f"{name}: unknown node {node!r}; the nodes are "
                                 f"{list(structure.names)}.") from None
        return out

    def _fixed_biases(self, structure):
        fb = self.fixed_bias
        if fb is None:
            return {}
        if isinstance(fb, dict):
            fb = self._node_dict(fb, structure, "fixed_bias")
        elif isinstance(fb, Real):
            fb = {j: fb for j in range(structure.n_nodes)}
        else:
            raise ValueError(f"fixed_bias must be None, a number or a dict node -> number; "
                             f"got {type(fb).__name__}.")
        for j, v in fb.items():
            if not isinstance(v, Real) or not np.isfinite(v):
                raise ValueError(f"fixed_bias of node {structure.names[j]!r} must be a finite "
                                 f"number; got {v!r}.")
        return {j: float(v) for j, v in fb.items()}

    def _prior_means(self, structure, layout):
        pm = self.prior_mean
        if isinstance(pm, Real):
            if not np.isfinite(pm):
                raise ValueError(f"prior_mean must be finite; got {pm!r}.")
            return np.full(layout.size, float(pm))
        if not isinstance(pm, dict):
            raise ValueError("prior_mean must be a number or a dict node -> number or array "
                             f"of [bias, parent weights...]; got {type(pm).__name__}.")
        per_node = self._node_dict(pm, structure, "prior_mean")
        out = np.zeros(layout.size)
        for j, v in per_node.items():
            d_full = 1 + len(structure.parents[j])
            full = np.broadcast_to(np.asarray(v, dtype=float), (d_full,)) \
                if np.ndim(v) == 0 else np.asarray(v, dtype=float)
            if full.shape != (d_full,) or not np.all(np.isfinite(full)):
                raise ValueError(f"prior_mean of node {structure.names[j]!r} must be a finite "
                                 f"number or {d_full} numbers [bias, parent weights...]; got "
                                 f"{v!r}.")
            out[layout.w_ptr[j]:layout.w_ptr[j + 1]] = layout.free(j, full)
        return out

    # ------------------------------------------------------------------ VBEM
    def _iteration_steps(self):
        return (Step("vbm", self._step_vbm), Step("xi", self._step_xi),
                Step("vbe", self._step_vbe))

    def _initialize(self, data, random_state):
        lay = data.layout
        self._mean_ = data.prior_mean + random_state.standard_normal(lay.size)
        self._covs_ = [np.eye(d) for d in lay.dims]
        R, J = data.patterns.states.shape
        self._xi_ = np.empty((R, J))
        self._terms_ = np.empty(R)
        self._post_ = np.empty(R)
        self._log_z_ = np.empty(data.patterns.n_patterns)
        self._entropy_ = np.empty(data.patterns.n_patterns)
        self._kl_ = sum(_gaussian_kl(m, S, data.prior_variance, mu)
                        for m, S, mu in zip(lay.split(self._mean_), self._covs_,
                                            lay.split(data.prior_mean)))
        self._step_xi(data, 0)
        self._step_vbe(data, 0)

    def _run_vbem(self, data):
        if self.method == "batch":
            return super()._run_vbem(data)
        return self._sequential_pass(data)

    def _iteration_limit_text(self):
        if self.method == "batch":
            return super()._iteration_limit_text()
        return f"max_iter={self.max_iter} iterations in some case"

    def _sequential_pass(self, data):
        """One pass from the prior (see the module docstring); returns the batch
        objective at the result as a one-entry trace and whether every case
        converged."""
        lay, pat = data.layout, data.patterns
        v = data.prior_variance
        eye = [np.eye(d).ravel() for d in lay.dims]
        mean = data.prior_mean.copy()
        cov = np.concatenate([v * e for e in eye] + [np.zeros(0)])
        prec = np.concatenate([e / v for e in eye] + [np.zeros(0)])
        n = pat.inverse.size
        bounds = np.empty(n)
        iters = np.empty(n, dtype=np.int64)
        sequential_pass(pat.states, pat.row_start, pat.inverse.astype(np.int64), lay.in_idx,
                        lay.w_ptr, lay.m2_ptr, lay.offset, lay.spin, mean, cov, prec,
                        int(self.max_iter), float(self.tol), bounds, iters)
        self._mean_ = mean
        # the covariance from the accumulated precision (exact sums) rather than the
        # chain of rank-one downdates
        self._covs_ = [_inverse_spd(prec[lay.m2_ptr[j]:lay.m2_ptr[j + 1]].reshape(d, d))
                       for j, d in enumerate(lay.dims)]
        self._kl_ = sum(_gaussian_kl(m, S, v, mu) for m, S, mu in
                        zip(lay.split(mean), self._covs_, lay.split(data.prior_mean)))
        self._step_xi(data, 0)
        self._step_vbe(data, 0)
        self.case_bounds_ = bounds
        self.case_iterations_ = iters
        return [self._lower_bound(data)], bool(np.all(iters < self.max_iter))

    def _second_moments(self):
        return np.concatenate([(S + np.outer(m, m)).ravel()
                               for m, S in zip(self._layout.split(self._mean_), self._covs_)])

    def _step_vbm(self, data, iteration):
        lay, pat = data.layout, data.patterns
        prec = np.empty(int(lay.m2_ptr[-1]))
        lin = np.empty(lay.size)
        jj_statistics(pat.states, lay.in_idx, lay.w_ptr, lay.m2_ptr, lay.offset, lay.spin,
                      self._xi_, pat.weights[pat.row_pattern] * self._post_, prec, lin)
        means, covs, kl = [], [], 0.0
        for j in range(len(lay.dims)):
            sl = slice(lay.w_ptr[j], lay.w_ptr[j + 1])
            m, S = _solve_node(prec[lay.m2_ptr[j]:lay.m2_ptr[j + 1]], lin[sl],
                               data.prior_variance, data.prior_mean[sl])
            means.append(m)
            covs.append(S)
            kl += _gaussian_kl(m, S, data.prior_variance, data.prior_mean[sl])
        self._mean_ = np.concatenate(means)
        self._covs_ = covs
        self._kl_ = kl

    def _row_terms(self, data, set_xi, out):
        lay, pat = data.layout, data.patterns
        jj_row_terms(pat.states, lay.in_idx, self._mean_, lay.w_ptr, self._second_moments(),
                     lay.m2_ptr, lay.offset, lay.spin, self._xi_, set_xi, out)

    def _step_xi(self, data, iteration):
        self._row_terms(data, True, self._terms_)

    def _step_vbe(self, data, iteration):
        normalise_rows(self._terms_, data.patterns.row_start, self._post_, self._log_z_,
                       self._entropy_)

    def _lower_bound(self, data):
        pat = data.patterns
        self._row_terms(data, False, data.scratch)
        g = pat.weights[pat.row_pattern] * self._post_
        return float(g @ data.scratch + pat.weights @ self._entropy_ - self._kl_)

    def _finalize(self, data):
        lay = data.layout
        self.structure_ = self._structure
        self.weight_layout_ = lay
        self.coef_ = [lay.full(j, m) for j, m in enumerate(lay.split(self._mean_))]
        self.covariances_ = [lay.full_cov(j, S) for j, S in enumerate(self._covs_)]
        self.prior_mean_ = self._prior_mean_flat.copy()
        self.n_parameters_ = int(lay.size)
        self.log_likelihood_ = self._log_likelihood(data.patterns)

    # ------------------------------------------------------------------ prediction
    def _check_new_data(self, X, blank=None):
        self._check_is_fitted()
        Xv = validate_float_data(self, X, reset=False, allow_nan=True, max_abs=None)
        codes = self._codes(Xv)
        if blank is not None:
            codes[:, blank] = -1
        return expand_patterns(codes, self.structure_, self.max_configurations)

    def _pattern_log_likelihoods(self, patterns, W):
        lay = self._layout
        out = np.empty((W.shape[0], patterns.n_patterns))
        pattern_log_likelihoods(patterns.states, patterns.row_start, lay.in_idx,
                                np.ascontiguousarray(W, dtype=float), lay.w_ptr, lay.offset,
                                lay.spin, out)
        return out

    def pattern_log_likelihoods(self, weights, patterns):
        """Exact ``ln p(x_p | w)`` of every pattern of ``patterns`` (as returned by
        :meth:`check_data`) for a batch of flat weight vectors ``weights`` (C, total
        free weights, nodes in ``structure_`` order, each ``[bias, parent weights...]``
        with a fixed bias left out);
        returns (C, n_patterns)."""
        self._check_is_fitted()
        return self._pattern_log_likelihoods(patterns, np.atleast_2d(weights))

    def _log_likelihood(self, patterns):
        return float(self._pattern_log_likelihoods(patterns, self._mean_[None])[0] @ patterns.weights)

    def _n_observations(self, patterns):
        return int(patterns.inverse.size)

    def _n_parameters(self):
        return self.n_parameters_

    def score_samples(self, X):
        """``ln p(x_i | coef_)`` per row, hidden and missing nodes summed out (the
        plug-in predictive at the posterior-mean weights)."""
        pat = self._check_new_data(X)
        return self._pattern_log_likelihoods(pat, self._mean_[None])[0][pat.inverse]

    def score(self, X, y=None):
        """Mean of :meth:`score_samples`."""
        return float(np.mean(self.score_samples(X)))

    def _node_index(self, node):
        self._check_is_fitted()
        return self.structure_.query_index(node)

    def predict_proba(self, X, node=None):
        """Posterior ``[P(node = 0), P(node = 1)]`` of ``node`` (default: the first
        hidden node) given each row, at the posterior-mean weights; an observed node's
        own column is held out."""
        j = self._node_index(node)
        s = self.structure_
        blank = None if s.hidden[j] else s.observed.index(j)
        pat = self._check_new_data(X, blank=blank)
        lay = self._layout
        R = pat.states.shape[0]
        M2 = np.concatenate([np.outer(m, m).ravel() for m in lay.split(self._mean_)])
        terms, post = np.empty(R), np.empty(R)
        jj_row_terms(pat.states, lay.in_idx, self._mean_, lay.w_ptr, M2, lay.m2_ptr,
                     lay.offset, lay.spin, np.empty((R, s.n_nodes)), True, terms)
        normalise_rows(terms, pat.row_start, post, np.empty(pat.n_patterns), np.empty(pat.n_patterns))
        p1 = np.bincount(pat.row_pattern, weights=post * pat.states[:, j], minlength=pat.n_patterns)
        p1 = np.clip(p1, 0.0, 1.0)[pat.inverse]
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X, node=None):
        """Most probable value of ``node`` (default: the first hidden node) per row."""
        return np.argmax(self.predict_proba(X, node=node), axis=1)

    def sample(self, n_samples=1):
        """Ancestral samples at the posterior-mean weights.

        Returns
        -------
        X : ndarray (n_samples, n_observed) of 0/1
        hidden : ndarray (n_samples, n_hidden) of 0/1
        """
        self._check_is_fitted()
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        rng = check_random_state(self.random_state)
        states = sample_states(self.structure_, self.coef_, int(n_samples), rng,
                               spin=self._layout.spin)
        s = self.structure_
        return states[:, list(s.observed)], states[:, list(s.hidden_nodes)]

    def log_alias_count(self):
        """ln of the number of permutations of the hidden nodes that map the network
        onto itself (exact symmetries of the posterior; flipping a hidden node's values
        is not one, since it shifts its children's biases under a fixed prior)."""
        return float(np.log(hidden_automorphisms(self.structure_)))


def hidden_automorphisms(structure, max_hidden=8):
    """Number of permutations of the hidden nodes preserving the edge set (1 when there
    are more than ``max_hidden`` of them)."""
    hidden = list(structure.hidden_nodes)
    if len(hidden) < 2 or len(hidden) > max_hidden:
        return 1
    edges = {(p, c) for c in range(structure.n_nodes) for p in structure.parents[c]}
    count = 0
    for perm in itertools.permutations(hidden):
        mapping = dict(zip(hidden, perm))
        count += {(mapping.get(p, p), mapping.get(c, c)) for p, c in edges} == edges
    return count


def sample_states(structure, coefs, n_samples, rng, spin=False):
    """Ancestral sampling of all nodes with weights ``coefs`` (list per node of
    ``[bias, parent weights...]``); ``spin``: parents enter as -1/+1."""
    states = np.zeros((n_samples, structure.n_nodes), dtype=np.int64)
    for j in structure.order:
        w = coefs[j]
        u = states[:, list(structure.parents[j])]
        a = w[0] + ((2 * u - 1) if spin else u) @ w[1:]
        states[:, j] = rng.random_sample(n_samples) < 1.0 / (1.0 + np.exp(-a))
    return states
