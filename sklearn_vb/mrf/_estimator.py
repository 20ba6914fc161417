"""Fully observed pairwise Markov random fields (Boltzmann machines and K-state models).

``p(x | lambda) = exp(lambda^T f(x)) / Z(lambda)`` with node indicator features and edge
indicator features, state 0 as reference (binary 0/1 variables: the biases ``x_i`` and
couplings ``x_i x_j`` of a Boltzmann machine; :mod:`sklearn_vb.mrf.layout`), and
independent ``N(0, prior_variance)`` priors on every parameter.  The fit maximises the
penalised log-likelihood ``t = lambda^T S - N ln Z + ln p(lambda)`` (``point="map"``) or
the likelihood (``point="ml"``, computed with a very broad prior ``ml_prior_variance``, since
the maximum likelihood estimate does not exist when a pair table has an empty cell).
The data enter only through the sufficient statistics ``S`` and the case count ``N``.

Inference (``inference_``): ``"exact"`` enumeration of the joint states when there are at
most ``max_exact_states`` of them; ``"tree"``: belief propagation on a forest, exact; or
``"bp"``: damped loopy belief propagation, whose Bethe ``ln Z_B`` and linear-response
covariance replace the exact ones (Parise and Welling 2006; Welling and Teh 2004).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from .._core.validation import validate_float_data
from .inference import (BPEngine, ExactEngine, grouped_prior_precision, lbfgs_minimize,
                             log_prior, newton_map, sample_states)
from .layout import MRFLayout, parse_structure

__all__ = ["PairwiseMRF", "prior_precision_vector"]


def prior_precision_vector(prior_variance, layout):
    """Per-feature prior precision from a scalar, ``{"node": v, "edge": v}`` or an array
    of length ``n_features``.

    The prior itself (independent Gaussians on every canonical parameter) is this
    package's choice: Parise & Welling (2006), §2, leave it open.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import PairwiseMRF
    >>> from sklearn_vb.mrf import prior_precision_vector
    >>> X = np.array([[0, 1, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]])
    >>> mrf = PairwiseMRF(structure=[(0, 1)]).fit(X)
    >>> prior_precision_vector({"node": 4.0, "edge": 0.5}, mrf.layout_).tolist()
    [0.25, 0.25, 0.25, 2.0]
    """
    return grouped_prior_precision(prior_variance, layout.n_features, layout.is_node_feature(),
                                   ("node", "edge"))


class PairwiseMRF(DensityMixin, BaseEstimator):
    """Pairwise discrete Markov random field fitted at the MAP (or ML).

    Parameters
    ----------
    structure : None, "complete", iterable of node pairs, or (p, p) symmetric array
        The edges (nodes are the columns of ``X``); ``None``: no edges.  Order and
        orientation of the pairs are irrelevant.
    n_states : int, sequence of int, or None, default 2
        States per variable (values ``0..K_i - 1``); ``None`` learns the categories of
        each column from the training data (sorted distinct values, as
        :class:`~sklearn_vb.VBDiscreteDAG`), which must be integers (negative ones
        too); non-integral values are refused.
    prior_variance : float, dict or array, default 1.0
        Variance of the independent Gaussian prior of every parameter; ``{"node": v,
        "edge": v}`` or one value per feature.
    point : {"map", "ml"}, default "map"
    inference : {"auto", "exact", "bp"}, default "auto"
        ``"auto"``: enumeration when ``prod K_i <= max_exact_states``, else belief
        propagation (exact on forests).  ``"exact"`` refuses loopy graphs too large to
        enumerate.
    max_exact_states : int, default 2**16
    solver : {"newton", "lbfgs"}, default "newton"
        Damped Newton steps with the (exact or linear-response) Hessian, or L-BFGS on
        the gradient alone.
    init : {"pmm", "zeros", "coef"}, default "pmm"
        Start: pseudo-moment matching (the BP fixed point with the empirical marginals),
        zeros, or ``init_coef``.
    init_coef : array or None
    bp_damping, bp_tol, bp_max_iter : BP settings (damping of the parallel schedule in
        the log domain; convergence when the largest message change is below
        ``bp_tol``).
    lr_method : {"matrix", "propagation"}, default "matrix"
        How the linear-response covariance is computed (inverse of the Bethe entropy
        Hessian, or the derivative of the message updates).
    max_iter : int, default 100
    tol : float, default 1e-10
        Newton decrement (nats) at which the fit stops.
    ml_prior_variance : float, default 1e4
    random_state : int, RandomState or None
        Seeds :meth:`sample`.
    verbose : int, default 0

    Attributes
    ----------
    coef_ : (F,) canonical parameters (node features, then edge features)
    edges_ : (E, 2) edges, ``i < j``, sorted
    n_states_ : (p,) states per node
    categories_ : list of arrays or None (with ``n_states=None``)
    feature_names_, n_parameters_, inference_, log_partition_ (exact or Bethe),
    node_marginals_ (p, Kmax), edge_marginals_ (E, Kmax, Kmax), feature_covariance_
    (exact or linear response; None for BP models with more than 500 features, whose
    ``J`` stays sparse), sufficient_stats_, n_samples_, objective_ (``t`` at
    ``coef_``), n_iter_, converged_, bp_converged_ (None without BP), ml_at_boundary_.

    Notes
    -----
    The model and the MAP fit by Newton steps with the Bethe free energy and
    linear-response covariances for loopy graphs are those of Parise & Welling (2006),
    §2 (the BP-LR approximation, whose Laplace evidence is the ``"bethe_laplace"`` score);
    their experiments (§4) use Boltzmann machines, the binary case here.  The prior is
    not given in the paper; ``prior_variance=1`` is this package's default.

    Examples
    --------
    Three binary variables on a chain; the first two agree 80% of the time:

    >>> import numpy as np
    >>> from sklearn_vb import PairwiseMRF
    >>> rng = np.random.RandomState(0)
    >>> X = (rng.rand(100, 3) < 0.5).astype(int)
    >>> X[:, 1] = np.where(rng.rand(100) < 0.8, X[:, 0], 1 - X[:, 0])
    >>> mrf = PairwiseMRF(structure=[(0, 1), (1, 2)]).fit(X)
    >>> mrf.edges_.tolist(), mrf.inference_, mrf.converged_
    ([[0, 1], [1, 2]], 'exact', True)
    >>> mrf.coef_.shape                   # 3 node biases, then 2 couplings
    (5,)
    >>> bool(mrf.coef_[3] > 1.0), bool(abs(mrf.coef_[4]) < 0.5)   # strong, weak coupling
    (True, True)
    >>> mrf.score_samples(X[:2]).shape
    (2,)
    """

    _parameter_constraints: dict = {
        "structure": "no_validation",
        "n_states": "no_validation",
        "prior_variance": "no_validation",
        "point": [StrOptions({"map", "ml"})],
        "inference": [StrOptions({"auto", "exact", "bp"})],
        "max_exact_states": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions({"newton", "lbfgs"})],
        "init": [StrOptions({"pmm", "zeros", "coef"})],
        "init_coef": ["array-like", None],
        "bp_damping": [Interval(Real, 0, 1, closed="left")],
        "bp_tol": [Interval(Real, 0, None, closed="neither")],
        "bp_max_iter": [Interval(Integral, 1, None, closed="left")],
        "lr_method": [StrOptions({"matrix", "propagation"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "ml_prior_variance": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, structure=None, *, n_states=2, prior_variance=1.0, point="map",
                 inference="auto", max_exact_states=2**16, solver="newton", init="pmm",
                 init_coef=None, bp_damping=0.5, bp_tol=1e-10, bp_max_iter=2000,
                 lr_method="matrix", max_iter=100, tol=1e-10, ml_prior_variance=1e4,
                 random_state=None, verbose=0):
        self.structure = structure
        self.n_states = n_states
        self.prior_variance = prior_variance
        self.point = point
        self.inference = inference
        self.max_exact_states = max_exact_states
        self.solver = solver
        self.init = init
        self.init_coef = init_coef
        self.bp_damping = bp_damping
        self.bp_tol = bp_tol
        self.bp_max_iter = bp_max_iter
        self.lr_method = lr_method
        self.max_iter = max_iter
        self.tol = tol
        self.ml_prior_variance = ml_prior_variance
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ input
    def _encode(self, X, fit):
        """Float matrix -> int codes (N, p), checking states."""
        X = np.asarray(X, dtype=float)
        if fit:
            self.categories_ = None
            if self.n_states is None:
                _check_integral_codes(X)
                self.categories_ = [np.unique(X[:, j]) for j in range(X.shape[1])]
                self.n_states_ = np.array([max(2, c.size) for c in self.categories_], dtype=np.int64)
            else:
                ns = np.asarray(self.n_states)
                if ns.ndim == 0:
                    ns = np.full(X.shape[1], ns)
                if ns.shape != (X.shape[1],) or not all(float(k).is_integer() and k >= 2 for k in ns):
                    raise ValueError(f"n_states must be an integer >= 2 or one such integer per column "
                                     f"of X ({X.shape[1]}), got {self.n_states!r}.")
                self.n_states_ = ns.astype(np.int64)
        if self.categories_ is None:
            # the states are the integers 0..K-1: every column checked at once, the
            # first bad column named
            K = self.n_states_
            bad = (X != np.round(X)) | (X < 0) | (X >= K[None, :])
            if np.any(bad):
                j = int(np.flatnonzero(bad.any(axis=0))[0])
                col = X[:, j]
                raise ValueError(f"X: column {j} contains {col[bad[:, j]][0]!r}; values must be "
                                 f"integers in [0, {K[j]}) (n_states={K[j]}).")
            return X.astype(np.int64)
        codes = np.empty(X.shape, dtype=np.int64)
        for j in range(X.shape[1]):
            col = X[:, j]
            cats = self.categories_[j]
            pos = np.minimum(np.searchsorted(cats, col), cats.size - 1)
            bad = cats[pos] != col
            if np.any(bad):
                raise ValueError(f"X: column {j} contains {col[bad][0]!r}, a value not seen in "
                                 f"training (categories {cats.tolist()}).")
            codes[:, j] = pos
        return codes

    def _engine(self, layout, warn=True):
        M = layout.n_states_total
        kind = self.inference
        if kind == "auto":
            kind = "exact" if M <= self.max_exact_states else "bp"
        if kind == "exact" and M > self.max_exact_states:
            if not layout.forest:
                raise ValueError(
                    f"inference='exact': the graph has {M} joint states (> max_exact_states="
                    f"{self.max_exact_states}) and cycles; use inference='bp' or raise max_exact_states.")
            kind = "bp"
        if kind == "exact":
            return ExactEngine(layout), "exact"
        eng = BPEngine(layout, damping=self.bp_damping, tol=self.bp_tol, max_iter=self.bp_max_iter,
                       lr=self.lr_method, warn=warn)
        return eng, ("tree" if eng.tree else "bp")

    def _precision(self, layout):
        if self.point == "ml":
            return np.full(layout.n_features, 1.0 / float(self.ml_prior_variance))
        return prior_precision_vector(self.prior_variance, layout)

    def fit(self, X, y=None, sample_weight=None):
        """Fit the parameters from the rows of ``X`` (one case per row)."""
        self._validate_params()
        X = validate_float_data(self, X, reset=True, max_abs=None, ensure_min_samples=1)
        sw = _check_sample_weight(sample_weight, X)
        if np.any(sw < 0):
            raise ValueError("sample_weight must be non-negative.")
        codes = self._encode(X, fit=True)
        edges = parse_structure(self.structure, X.shape[1])
        layout = MRFLayout(self.n_states_, edges)
        S = layout.statistics(codes, sw)
        N = float(np.sum(sw))
        if N <= 0:
            raise ValueError("sample_weight must have a positive sum.")
        self._fit_statistics(layout, S, N)
        return self

    def _fit_statistics(self, layout, S, N):
        engine, kind = self._engine(layout)
        P = self._precision(layout)
        F = layout.n_features
        if self.init == "coef":
            if self.init_coef is None:
                raise ValueError("init='coef' needs init_coef.")
            coef0 = np.asarray(self.init_coef, dtype=float)
            if coef0.shape != (F,):
                raise ValueError(f"init_coef must have {F} entries, got shape {coef0.shape}.")
        elif self.init == "pmm":
            coef0 = layout.pmm_coef(S / N, N)
        else:
            coef0 = np.zeros(F)
        if self.solver == "newton":
            res = newton_map(engine, S, N, P, coef0, self.max_iter, self.tol, self.verbose)
            coef, t, n_iter, converged = res.coef, res.objective, res.n_iter, res.converged
            m = res.moments
            self._newton = (res, S, N, P)  # the scores of the training data start from it
        else:
            def neg(c):
                mm = engine.moments(c, covariance=False)
                return (-(c @ S - N * mm.log_partition + log_prior(c, P)),
                        -(S - N * mm.kappa - P * c))

            r = lbfgs_minimize(neg, coef0, maxiter=50 * self.max_iter, gtol=1e-9, ftol=1e-15)
            coef, t, n_iter, converged = r.x, -float(r.fun), int(r.nit), bool(r.success)
            m = engine.moments(coef)
            self._newton = None
        self._layout = layout
        self._engine_ = engine
        self.edges_ = layout.edges.copy()
        self.coef_ = coef
        self.node_coef_, self.edge_coef_ = layout.potentials(coef)
        self.feature_names_ = layout.feature_names()
        self.n_parameters_ = F
        self.inference_ = kind
        self.log_partition_ = float(m.log_partition)
        self._beliefs = None  # node and edge marginals, read off kappa on first access
        self.feature_moments_ = m.kappa
        self.feature_covariance_ = m.cov
        self.sufficient_stats_ = S
        self.n_samples_ = N
        self.objective_ = float(t)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.bp_converged_ = m.info.get("bp_converged") if kind != "exact" else None
        self.ml_at_boundary_ = bool(self.point == "ml" and np.max(np.abs(coef), initial=0.0) > 15)
        return self

    def check_data(self, X):
        """The ``(N, p)`` int state codes of ``X`` for the fitted model (validated)."""
        check_is_fitted(self, "coef_")
        X = validate_float_data(self, X, reset=False, max_abs=None)
        return self._encode(X, fit=False)

    # ------------------------------------------------------------------ densities
    def score_samples(self, X):
        """``ln p(x | coef_)`` per row, with ``log_partition_`` (the Bethe approximation
        when ``inference_ == "bp"``)."""
        check_is_fitted(self, "coef_")
        X = validate_float_data(self, X, reset=False, max_abs=None)
        codes = self._encode(X, fit=False)
        return self._layout.energies(self.coef_, codes) - self.log_partition_

    def score(self, X, y=None):
        """Mean log-likelihood per row (not an evidence)."""
        return float(np.mean(self.score_samples(X)))

    def conditional_log_proba(self, X):
        """``ln p(x_i | x_-i, coef_)`` per row and node (the pseudo-likelihood terms;
        exact at any size)."""
        check_is_fitted(self, "coef_")
        X = validate_float_data(self, X, reset=False, max_abs=None)
        codes = self._encode(X, fit=False)
        L = self._layout
        out = np.empty(codes.shape)
        for i in range(L.n_nodes):
            alt = []
            for k in range(L.n_states[i]):
                c = codes.copy()
                c[:, i] = k
                alt.append(L.energies(self.coef_, c))
            alt = np.stack(alt, axis=1)
            mx = alt.max(axis=1, keepdims=True)
            lse = (mx + np.log(np.exp(alt - mx).sum(axis=1, keepdims=True)))[:, 0]
            out[:, i] = alt[np.arange(codes.shape[0]), codes[:, i]] - lse
        return out

    def _decode(self, codes):
        if self.categories_ is None:
            return codes
        X = np.empty(codes.shape, dtype=float)
        for j, cats in enumerate(self.categories_):
            X[:, j] = cats[np.minimum(codes[:, j], cats.size - 1)]
        return X

    def sample(self, n_samples=1, random_state=None, method="auto", n_burnin=1000, thin=10):
        """Draw ``n_samples`` cases: exactly by enumeration when the joint state space has
        at most ``max_exact_states`` states (``method="exact"``), otherwise by single-site
        Gibbs sampling (``"gibbs"``, approximate: ``n_burnin`` sweeps, one draw every
        ``thin`` sweeps)."""
        check_is_fitted(self, "coef_")
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        rng = check_random_state(random_state if random_state is not None else self.random_state)
        codes = sample_states(self._layout, self.coef_, n_samples, rng, method,
                              self.max_exact_states, n_burnin, thin)
        return self._decode(codes)

    def ising_params(self):
        """``(h, J)`` of the spin (+-1) form ``sum_i h_i s_i + sum_ij J_ij s_i s_j`` of a
        binary model, ``s = 2 x - 1``: ``J_ij = w_ij / 4``,
        ``h_i = theta_i / 2 + sum_j w_ij / 4``; ``J`` is (E,) in the order of ``edges_``."""
        check_is_fitted(self, "coef_")
        if np.any(self.n_states_ != 2):
            raise ValueError("ising_params needs binary variables.")
        L = self._layout
        theta, w = self.coef_[:L.n_nodes], self.coef_[L.n_nodes:]
        h = theta / 2.0
        np.add.at(h, L.edges[:, 0], w / 4.0)
        np.add.at(h, L.edges[:, 1], w / 4.0)
        return h, w / 4.0

    @property
    def node_marginals_(self):
        """``(p, Kmax)`` node marginals (exact or beliefs), 0 beyond a node's states."""
        return self._marginals()[0]

    @property
    def edge_marginals_(self):
        """``(E, Kmax, Kmax)`` edge marginals (exact or beliefs), 0 beyond the states."""
        return self._marginals()[1]

    def _marginals(self):
        # a search fits many candidates whose tables nobody reads: built when asked for
        check_is_fitted(self, "coef_")
        if getattr(self, "_beliefs", None) is None:
            self._beliefs = self._layout.beliefs_from_moments(self.feature_moments_)
        return self._beliefs

    @property
    def layout_(self):
        """The ``MRFLayout`` of the fitted structure."""
        check_is_fitted(self, "coef_")
        return self._layout

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        # integer codes of categories, which scikit-learn's estimator checks then feed
        tags.input_tags.categorical = True
        return tags


def _check_integral_codes(X):
    """Learned categories are integer codes: continuous data would make every distinct
    value a state (and an edge of two such columns a table of their product)."""
    bad = X != np.round(X)
    if np.any(bad):
        j = int(np.flatnonzero(bad.any(axis=0))[0])
        col = X[:, j]
        raise ValueError(
            f"X: column {j} holds non-integral values such as {col[bad[:, j]][0]!r} "
            f"({np.unique(col).size} distinct values); PairwiseMRF learns categories from "
            "integer codes, not continuous data. Discretise the column (e.g. "
            "sklearn.preprocessing.KBinsDiscretizer with encode='ordinal') or encode its "
            "labels as integers (sklearn.preprocessing.OrdinalEncoder).")
