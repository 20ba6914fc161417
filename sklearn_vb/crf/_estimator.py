"""Linear-chain conditional random fields fitted at the MAP (or ML).

``p(t | x, lambda) = exp(lambda^T f(t, x)) / Z(lambda, x)`` for label sequences ``t`` of
sequences of input rows ``x`` (Lafferty et al. 2001; Parise and Welling 2006, eq. 9), with
state features ``1[t_i = k] g^a(x_i)`` and transition features
``1[t_i = k, t_{i+1} = l] g^a(x_i)`` tied across positions and sequences (label 0 the
reference; with binary labels ``t_i g^a(x_i)`` and ``t_i t_{i+1} g^a(x_i)``), and
independent ``N(0, prior_variance)`` priors on every weight.  ``state_features`` and
``transition_features`` choose the input columns of each set: that is the structure the
evidence compares (:mod:`sklearn_vb.model_selection`).

The default is the classic linear-chain CRF (the model of CRFsuite and of most taggers):
a bias per label, a constant weight per label pair (the label-bigram transition weights,
``bias=True`` puts the constant input ``g^0 = 1`` in both sets) and state features of
every input column, with no input-dependent transitions (``transition_features="none"``).
Without the constant transition weights a CRF cannot learn that labels persist, however
informative the labels' order.  Label 0 being the reference, the transition table
``transition_`` has a zero row and column for it: a pair weight of the form ``a(k) +
b(l)`` only shifts the label biases (up to the first and last positions), so the
``(L - 1)^2`` weights are the identifiable part of the ``L x L`` table.

The fit maximises ``sum_n [lambda^T f(t_n, x_n) - ln Z(lambda, x_n)] + ln p(lambda)``
with exact forward-backward gradients (L-BFGS, or Newton steps with the exact Hessian
``-(sum_n Cov f + P)``); inference is exact (:mod:`sklearn_vb.crf._kernels`).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.validation import (MISSING_IN_SEQUENCES, check_sequences, check_sequences_routed,
                          fitted_from_sequence_ids, validate_float_data)
from ..mrf.inference import grouped_prior_precision, lbfgs_minimize, log_prior, newton_map
from ._layout import CRFData, CRFEngine, CRFLayout

__all__ = ["LinearChainCRF", "crf_prior_precision"]


def crf_prior_precision(prior_variance, layout):
    """Per-feature prior precision from a scalar, ``{"state": v, "transition": v}`` or an
    array of length ``n_features``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import LinearChainCRF
    >>> from sklearn_vb.crf import crf_prior_precision
    >>> X = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    >>> crf = LinearChainCRF(transition_features=[0]).fit(X, [0, 1, 1, 0])
    >>> crf.feature_names_                  # the constant input "1" ends both sets
    ['state:x0', 'state:x1', 'state:1', 'transition:x0', 'transition:1']
    >>> crf_prior_precision({"state": 4.0, "transition": 0.5}, crf.layout_).tolist()
    [0.25, 0.25, 0.25, 2.0, 2.0]
    """
    return grouped_prior_precision(prior_variance, layout.n_features, layout.is_state_feature(),
                                   ("state", "transition"))


def _feature_columns(spec, n_inputs, name):
    """``"all"``, ``"none"``/None, or column indices (or a boolean mask) -> sorted ints."""
    if isinstance(spec, str):
        if spec == "all":
            return np.arange(n_inputs, dtype=np.int64)
        if spec == "none":
            return np.zeros(0, dtype=np.int64)
        raise ValueError(f"{name} must be 'all', 'none' or column indices, got {spec!r}.")
    if spec is None:
        return np.zeros(0, dtype=np.int64)
    arr = np.asarray(spec)
    if arr.dtype == bool:
        if arr.shape != (n_inputs,):
            raise ValueError(f"{name}: a boolean mask needs {n_inputs} entries (the columns of X), "
                             f"got shape {arr.shape}.")
        return np.flatnonzero(arr).astype(np.int64)
    arr = arr.reshape(-1)
    if arr.size and (arr.dtype.kind not in "iu" or np.any(arr < 0) or np.any(arr >= n_inputs)):
        raise ValueError(f"{name} must hold column indices in 0..{n_inputs - 1}, got {spec!r}.")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} has duplicate columns: {spec!r}.")
    return np.sort(arr.astype(np.int64))


class LinearChainCRF(ClassifierMixin, BaseEstimator):
    """Linear-chain conditional random field with Gaussian priors, fitted at the MAP.

    Parameters
    ----------
    state_features : "all", "none" or array of column indices (or boolean mask), default "all"
        Columns ``a`` of ``X`` with a state feature ``1[t_i = k] x_ia`` per label ``k >= 1``.
    transition_features : "all", "none" or array of column indices, default "none"
        Columns with an input-dependent transition feature ``1[t_i = k, t_{i+1} = l] x_ia``
        per label pair ``k, l >= 1`` (the input of the earlier position of the pair).
        ``"all"`` is the model of Parise and Welling (2006); it multiplies the weights by
        about the number of labels.
    bias : bool, default True
        Add a constant input to both sets: a bias per label and a constant weight per label
        pair (``bias_``, ``transition_``).  ``bias=False`` with
        ``transition_features="all"`` is the paper's model (it has no constant features).
    prior_variance : float, dict or array, default 1.0
        Variance of the independent Gaussian prior of every weight; ``{"state": v,
        "transition": v}`` or one value per feature.
    point : {"map", "ml"}, default "map"
        ``"ml"`` maximises the likelihood, computed with the very broad prior
        ``ml_prior_variance`` (the maximum does not exist on separable data).
    solver : {"lbfgs", "newton"}, default "lbfgs"
        L-BFGS on the exact gradient, or damped Newton steps with the exact Hessian (the
        second-order forward pass; cost grows with the square of the number of features).
    max_iter : int, default 500
        Iterations of the solver.
    tol : float, default 1e-8
        L-BFGS: largest gradient entry, per labelled position, at which it stops (the
        gradient is a sum over positions, and its rounding noise grows with their number);
        Newton: decrement in nats.
    ml_prior_variance : float, default 1e4
    verbose : int, default 0

    Attributes
    ----------
    classes_ : (L,) the labels (sorted; ``classes_[0]`` is the reference label)
    coef_ : (F,) weights: state weights (L - 1, Gs) then transition weights
        (L - 1, L - 1, Gt), C order
    state_coef_, transition_coef_ : the same weights as (L, Gs) and (L, L, Gt) tables
        (zero rows for the reference label; with ``bias`` the constant input is the last)
    bias_ : (L,) the label biases (zero without ``bias``, and for the reference label)
    transition_ : (L, L) the constant label-pair weights, ``transition_[k, l]`` for
        ``t_i = k, t_{i+1} = l`` (zero without ``bias``, and in the reference row and
        column)
    state_features_, transition_features_ : the input columns used
    feature_names_, n_parameters_, n_features_in_
    objective_ : the penalised conditional log-likelihood at ``coef_``
    n_iter_, converged_

    Examples
    --------
    Two documents whose lines are labelled question (0) or answer (1):

    >>> from sklearn_vb import LinearChainCRF
    >>> from sklearn_vb.datasets import make_faq_like_sequences
    >>> from sklearn_vb.scoring import score
    >>> X, y, lengths = make_faq_like_sequences(n_documents=2, n_lines=40, random_state=0)
    >>> crf = LinearChainCRF(state_features=[0, 4])     # + label bias and transition weight
    >>> crf = crf.fit(X, y, lengths=lengths)
    >>> crf.n_parameters_, crf.converged_
    (4, True)
    >>> crf.feature_names_
    ['state:x0', 'state:x4', 'state:1', 'transition:1']
    >>> crf.predict(X[:5]).shape, crf.predict_proba(X, lengths=lengths).shape
    ((5,), (80, 2))
    >>> round(crf.score(X, y, lengths=lengths), 2)
    0.89
    >>> ev = score(crf, X, "bethe_laplace", y=y, lengths=lengths)   # ln p(y | X) of the structure
    >>> bool(ev.log_evidence < crf.conditional_log_likelihood(X, y, lengths=lengths))
    True
    """

    _parameter_constraints: dict = {
        "state_features": "no_validation",
        "transition_features": "no_validation",
        "bias": ["boolean"],
        "prior_variance": "no_validation",
        "point": [StrOptions({"map", "ml"})],
        "solver": [StrOptions({"lbfgs", "newton"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "ml_prior_variance": [Interval(Real, 0, None, closed="neither")],
        "verbose": ["verbose"],
    }

    def __init__(self, state_features="all", transition_features="none", *, bias=True,
                 prior_variance=1.0, point="map", solver="lbfgs", max_iter=500, tol=1e-8,
                 ml_prior_variance=1e4, verbose=0):
        self.state_features = state_features
        self.transition_features = transition_features
        self.bias = bias
        self.prior_variance = prior_variance
        self.point = point
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.ml_prior_variance = ml_prior_variance
        self.verbose = verbose

    # ------------------------------------------------------------------ input
    def _precision(self, layout):
        if self.point == "ml":
            return np.full(layout.n_features, 1.0 / float(self.ml_prior_variance))
        return crf_prior_precision(self.prior_variance, layout)

    def _label_codes(self, y):
        codes = np.searchsorted(self.classes_, y)
        codes = np.clip(codes, 0, self.classes_.size - 1)
        bad = self.classes_[codes] != y
        if np.any(bad):
            raise ValueError(f"y has labels not seen in fit: {np.unique(np.asarray(y)[bad])[:5]!r}.")
        return codes.astype(np.int64)

    def check_data(self, X, y=None, lengths=None, sequence_ids=None):
        """The ``CRFData`` of ``X`` (and labels ``y``) for
        the fitted model (validated)."""
        check_is_fitted(self, "coef_")
        X = validate_float_data(self, X, reset=False, missing=MISSING_IN_SEQUENCES, max_abs=None,
                                accept_sparse="csr")
        lens = check_sequences(X.shape[0], lengths, sequence_ids)
        codes = None
        if y is not None:
            y = np.asarray(y)
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise ValueError(f"y must be 1-D with one label per row of X ({X.shape[0]}), "
                                 f"got shape {y.shape}.")
            codes = self._label_codes(y)
        return CRFData.build(self._layout, X, codes, lens)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, lengths=None, sequence_ids=None):
        """Fit the weights to labelled sequences.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_inputs)
            Input rows (e.g. binary observation features), sequences one after another.
            A sparse ``X`` (e.g. one-hot word-window features) keeps the fit's cost
            proportional to its non-zero entries.
        y : array-like of shape (n_samples,)
            Labels (any hashable values; at least two classes).
        lengths : array-like of int, optional
            Sequence lengths (consecutive blocks of rows); default one sequence.
        sequence_ids : array-like of shape (n_samples,), optional
            One id per row, contiguous per sequence (survives cross-validation splits);
            exclusive with ``lengths``.
        """
        self._validate_params()
        # this package's messages for X first (non-numeric, 1-D, NaN), then X with y
        n_rows = validate_float_data(self, X, reset=True, missing=MISSING_IN_SEQUENCES,
                                     max_abs=None, ensure_min_samples=1,
                                     accept_sparse="csr").shape[0]
        n_y = len(y) if hasattr(y, "__len__") else None
        if n_y is not None and n_y != n_rows:
            raise ValueError(f"y has {n_y} labels but X has {n_rows} rows; give one label "
                             "per row of X.")
        X, y = validate_data(self, X, y, dtype=float, ensure_min_samples=1, accept_sparse="csr")
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError("LinearChainCRF needs at least two classes in y, got one class "
                             f"({self.classes_[0]!r}).")
        lens = check_sequences(X.shape[0], lengths, sequence_ids)
        layout = CRFLayout(self.classes_.size, X.shape[1],
                           _feature_columns(self.state_features, X.shape[1], "state_features"),
                           _feature_columns(self.transition_features, X.shape[1],
                                            "transition_features"),
                           self.bias)
        data = CRFData.build(layout, X, codes.ravel(), lens)
        P = self._precision(layout)
        coef, t, n_iter, converged = self._optimize(layout, data, P)
        self._layout = layout
        self.coef_ = coef
        L = layout.n_labels
        self.state_coef_ = np.zeros((L, layout.n_state_inputs))
        self.state_coef_[1:] = coef[:layout.n_state].reshape(L - 1, -1)
        self.transition_coef_ = np.zeros((L, L, layout.n_transition_inputs))
        self.transition_coef_[1:, 1:] = coef[layout.n_state:].reshape(L - 1, L - 1, -1)
        # the constant input is the last column of both sets
        self.bias_ = self.state_coef_[:, -1].copy() if layout.bias else np.zeros(L)
        self.transition_ = (self.transition_coef_[:, :, -1].copy() if layout.bias
                            else np.zeros((L, L)))
        self.state_features_ = layout.state_columns.copy()
        self.transition_features_ = layout.transition_columns.copy()
        names = getattr(self, "feature_names_in_", None)
        self.feature_names_ = layout.feature_names(names)
        self.n_parameters_ = layout.n_features
        self.objective_ = float(t)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self._fitted_from_sequence_ids = fitted_from_sequence_ids(sequence_ids)
        return self

    def _optimize(self, layout, data, P):
        engine = CRFEngine(layout, data)
        F = layout.n_features
        coef0 = np.zeros(F)
        if F == 0:
            return coef0, -engine.log_partition(coef0[None])[0], 0, True
        if self.solver == "newton":
            res = newton_map(engine, data.S, data.N, P, coef0, self.max_iter, self.tol, self.verbose)
            return res.coef, res.objective, res.n_iter, res.converged

        def neg(c):
            lz, kappa = engine.value_and_gradient(c)
            return (-(c @ data.S - lz + float(log_prior(c, P))), -(data.S - kappa - P * c))

        res = lbfgs_minimize(neg, coef0, maxiter=self.max_iter,
                             gtol=self.tol * max(1.0, data.N), ftol=1e-15)
        if self.verbose:
            print(f"[LinearChainCRF] L-BFGS: {res.nit} iterations, objective {-res.fun:.6f}, "
                  f"{res.message}", flush=True)
        return res.x, -float(res.fun), int(res.nit), bool(res.success)

    # ------------------------------------------------------------------ prediction
    def _engine(self, X, y=None, lengths=None, sequence_ids=None):
        check_is_fitted(self, "coef_")
        return CRFEngine(self._layout, self.check_data(X, y, lengths, sequence_ids))

    def predict(self, X, lengths=None, sequence_ids=None):
        """The most probable label sequence of every sequence (Viterbi; jointly most
        probable, so a row's label may differ from the argmax of :meth:`predict_proba`)."""
        path = self._engine(X, None, lengths, sequence_ids).viterbi(self.coef_)
        return self.classes_[path]

    def predict_proba(self, X, lengths=None, sequence_ids=None):
        """Per-row label marginals ``p(t_i = k | x)`` (n_samples, n_classes)."""
        return self._engine(X, None, lengths, sequence_ids).marginals(self.coef_)[1]

    def predict_log_proba(self, X, lengths=None, sequence_ids=None):
        """The logarithm of :meth:`predict_proba` (n_samples, n_classes)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X, lengths, sequence_ids))

    def score(self, X, y, sample_weight=None, lengths=None, sequence_ids=None):
        """Per-row accuracy of :meth:`predict` (the classifier convention; not an
        evidence).  A model fitted with ``sequence_ids`` needs ``lengths`` or
        ``sequence_ids`` here too."""
        check_sequences_routed(self, lengths, sequence_ids)
        return float(accuracy_score(y, self.predict(X, lengths, sequence_ids),
                                    sample_weight=sample_weight))

    def sequence_log_likelihood(self, X, y, lengths=None, sequence_ids=None):
        """``ln p(t_n | x_n, coef_)`` of every sequence."""
        engine = self._engine(X, y, lengths, sequence_ids)
        d = engine.data
        U, B = self._layout.potentials(self.coef_, d.gs, d.gt)
        U, B = U[0], B[0]
        pos = np.arange(d.codes.size)
        unary = U[pos, d.codes]
        nxt = np.minimum(pos + 1, pos.size - 1)
        pair = B[pos, d.codes, d.codes[nxt]]
        pair[d.ends - 1] = 0.0
        seq = np.repeat(np.arange(d.n_sequences), d.ends - d.starts)
        energy = np.bincount(seq, weights=unary + pair, minlength=d.n_sequences)
        return energy - engine.sequence_log_partition(self.coef_[None])[0]

    def conditional_log_likelihood(self, X, y, lengths=None, sequence_ids=None):
        """``sum_n ln p(t_n | x_n, coef_)`` (total nats)."""
        return float(np.sum(self.sequence_log_likelihood(X, y, lengths, sequence_ids)))

    @property
    def layout_(self):
        """The ``CRFLayout`` of the fitted structure."""
        check_is_fitted(self, "coef_")
        return self._layout

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = True
        return tags
