"""Discrete Bayesian networks with hidden nodes: VBEM, MAP/ML EM and exact inference.

The model (Beal 2003, Chapter 6): every node is categorical, node
``j`` has a conditional probability table (CPT) ``theta_j`` of shape
``(q_j, r_j)`` (parent configurations x states; parent configurations in C order,
first-listed parent most significant), and every CPT row has an independent
Dirichlet prior.  Hidden nodes are never observed; a missing value (NaN, or -1 in a
column with declared cardinality) makes that node hidden for that case only.

Inference is exact: the observed data are compressed to distinct patterns with
counts, and for every pattern the joint configurations of its unobserved nodes are
enumerated (:mod:`sklearn_vb.dag.kernels`).  VBEM alternates

* VBM: ``q(theta_jl) = Dir(lambda_jl + N_jl)`` with expected family counts ``N``;
* VBE: exact inference with the sub-normalised tables ``exp E[ln theta]``;

and ``lower_bound_`` is the complete bound F in its general form, valid for any stored
pair (q(hidden), q(theta)): the expected counts times ``E[ln theta]``, plus the entropy
of q(hidden), minus ``KL(q(theta) || p(theta))``.  Right after a VBE step it equals
``sum_i ln Z_i - KL``; right after a VBM step, the complete-data evidence at the
expected counts plus the entropy (thesis Section 6.3.4).

``partial_fit`` and ``learning_method="online"`` replace the VBM step by
natural-gradient steps from minibatches of rows (stochastic variational inference,
:mod:`sklearn_vb.dag._online`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln
from sklearn.base import DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight

from .._core.base import ACCELERATION_CONSTRAINT, Step, VBEMEstimator
from .._core.docstrings import (ONLINE_LEARNING_RESTARTS, PARTIAL_FIT_NOT_SCORED, fill_doc,
                                online_learning_epochs, online_learning_result,
                                online_step_params, partial_fit_minibatches,
                                partial_fit_stream)
from .._core.distributed import check_batch_vb, is_dask_array
from .._core.online import ONLINE_PARAMETER_CONSTRAINTS, check_online_method
from .._core.validation import validate_categorical_data
from ._distributed import DaskFitData, dask_fit_data
from ._encoding import encode_columns, observed_columns, positive_rows, prior_flat, start_tables
from ._online_fit import partial_fit, run_online
from ._vbe import log_likelihood, vbe_patterns, vbe_statistics
from .fit_kernels import DECREASED, NOT_FINITE, em_run, vbem_run
from .kernels import (
    dirichlet_update,
    enumerate_posterior,
    masked_dot,
    normalise_rows,
    pattern_log_normalisers,
)
from .structure import (
    MAX_CONFIGURATIONS,
    CPTLayout,
    PatternData,
    exact_log_evidence,
    log_dirichlet_integral,
    observed_column_names,
    parameter_count,
    parse_structure,
    prepare_patterns,
)
from .._core.warn import warn_at_caller

__all__ = ["VBDiscreteDAG"]


@dataclass
class _FitData:
    """What the VBEM steps need: compressed patterns, CPT layout, the prior and, for
    ``init_params="posterior"``, the starting log-tables of the nodes given in
    ``init_posterior`` (None for a node drawn from its prior); ``post`` is a work
    buffer of the VBE step.  ``codes`` and ``row_weights`` are the rows with positive
    weight before compression (integer codes, -1 missing), from which online learning
    draws its minibatches."""

    pdata: PatternData
    layout: CPTLayout
    prior: np.ndarray
    n_samples: int
    start_tables: list | None = None
    codes: np.ndarray | None = None
    row_weights: np.ndarray | None = None
    post: np.ndarray = field(init=False)

    def __post_init__(self):
        self.post = np.empty(self.pdata.idx.shape[0])

    def chunk_sum(self, fn, *args):
        """``fn(patterns, *args)`` summed over the chunks of the data: here the data
        are one chunk (see :class:`~sklearn_vb.dag._distributed.DaskFitData`)."""
        return fn(self.pdata, *args)


@fill_doc(online_learning_epochs=online_learning_epochs("rows"),
          online_learning_result=online_learning_result("rows", "row", "VBE step"),
          online_learning_restarts=ONLINE_LEARNING_RESTARTS,
          online_step_params=online_step_params("rows"),
          partial_fit_minibatches=partial_fit_minibatches("rows"),
          partial_fit_stream=partial_fit_stream("rows"),
          partial_fit_not_scored=PARTIAL_FIT_NOT_SCORED)
class VBDiscreteDAG(DensityMixin, VBEMEstimator):
    """Variational Bayesian discrete DAG with hidden nodes (Beal 2003, Chapter 6).

    Parameters
    ----------
    structure : None, dict, list of (parent, child) pairs, or square ndarray
        The DAG.  A dict maps each child to its ordered list of parents; an edge
        list gives ``(parent, child)`` pairs; an adjacency array ``A`` has
        ``A[i, j] != 0`` for an edge ``i -> j`` (nodes are then named 0..J-1).
        Node order: dict keys (then parents not listed as keys), order of first
        appearance in an edge list, or array index; nodes named only in
        ``cardinalities`` are appended as isolated nodes.  ``None`` (default) is
        the latent-class model: one hidden node ``"latent"`` with
        ``n_components`` states, parent of every column of ``X``.
    cardinalities : None, int, dict or sequence
        Number of states per node (dict by name, sequence in node order, or one
        int for all).  Hidden nodes need one.  An observed node without one
        (``None``) learns its categories from the training data, like
        ``OrdinalEncoder``: the distinct integers (negatives too), strings, or the
        categories of a pandas categorical column (all of them, in their order) become
        states; non-integral numbers only with ``allow_float_categories=True``.  A
        value unseen during ``fit`` is treated as missing later (None, NaN and
        pandas.NA are missing).  Observed
        nodes with a declared cardinality ``r`` take integer values ``0..r-1``;
        ``-1`` or NaN mark a missing value.  With ``structure=None``,
        ``cardinalities`` refers to the observed columns only.
    hidden : None, name or iterable of names
        The hidden nodes (never observed; not columns of ``X``).
    n_components : int, default=2
        Number of states of the hidden node of the default latent-class model
        (used only when ``structure=None``).
    prior : float, "uniform", "bdeu", dict or list, default=1.0
        Dirichlet hyperparameters ``lambda_jlk``: a positive scalar for every entry
        (1.0 = "uniform", the thesis prior), ``"bdeu"`` (``ess / (q_j r_j)``), or
        per-node tables of shape ``(q_j, r_j)`` (dict by node name, or a list in
        node order; scalars broadcast).
    ess : float, default=1.0
        Equivalent sample size for ``prior="bdeu"``.
    method : {"vb", "map", "ml"}, default="vb"
        ``"vb"`` runs VBEM.  ``"map"`` / ``"ml"`` run EM for a point estimate
        (thesis Section 6.3.1); ``lower_bound_`` is then the Cheeseman-Stutz value at the
        estimate, which is the VB bound of the pair (exact posterior at theta_hat,
        Dir(lambda + N_hat)) and hence a true lower bound; the EM objective history
        is in ``objectives_``.
    map_basis : {"softmax", "natural"}, default="softmax"
        Basis of the MAP estimate.  ``"softmax"``: ``theta ∝ lambda + N``, valid for
        every ``lambda > 0``.  ``"natural"``: eq. (6.23), ``theta ∝ lambda - 1 + N``;
        falls back to ``"softmax"`` with a warning when some ``lambda < 1``.
    init_params : {"random", "posterior"}, default="random"
        The first q(hidden) is the exact posterior of the unobserved nodes under
        starting tables phi, and VBEM (or EM) continues from there (as in the thesis's
        experiments, VBEM and EM can then start from the same tables).

        * "random" draws every CPT row from its Dirichlet prior, phi = theta_init.
        * "posterior" starts from ``init_posterior``: for a node given there, phi is
          the table of the VBE step under ``q(theta_j) = Dir(init_posterior[j])``,
          ``exp E[ln theta_j]`` (for ``method="map"``/``"ml"``, the posterior-mean
          CPT); a node not given is drawn from its prior as with "random".  Restarts
          differ only in those draws, so with every node given ``n_init=1`` suffices.

        Any q(hidden) is a valid start: ``lower_bound_`` remains a lower bound, and
        only the optimum reached depends on the start.
    init_posterior : dict or None, default=None
        For ``init_params="posterior"``: Dirichlet parameters of the starting
        q(theta_j), keyed by node name, each of shape ``(q_j, r_j)`` (parent
        configurations x states, as ``posterior_``) with positive finite entries;
        for example ``{name: table for name, table in zip(fitted.structure_.names,
        fitted.posterior_)}`` from a fitted model.  Any subset of the nodes may be
        given.
    max_iter, tol, n_init, random_state, warm_start, verbose, verbose_interval, bound_check, keep_restarts
        See :class:`sklearn_vb.base.VBEMEstimator`.  ``tol`` is in nats on the
        total bound (the thesis used ``1e-6 * n_samples``).  With ``warm_start=True``
        a refit continues from the fitted state and ``init_params`` is not used.  Each
        restart runs as one compiled call (``sklearn_vb.dag.fit_kernels``): the
        bound checks and the messages of ``verbose=2`` follow when the restart ends.
    acceleration : {"squarem"} or None, default="squarem"
        ``method="vb"`` only: extrapolate the VBEM fixed point in log Dirichlet counts
        (SQUAREM, Varadhan & Roland 2008, as :class:`sklearn_vb.base.SquaremSteps`),
        keeping an extrapolation only when it does not lower the bound.  None runs plain
        VBEM.
    allow_float_categories : bool, default=False
        Observed nodes with learned categories refuse non-integral numbers (continuous
        data would make every distinct value a category).  True accepts them, each
        distinct value a category.
    max_configurations : int, default=2**20
        Refuse exact inference when one case has more joint configurations of its
        unobserved nodes than this.
    learning_method : {"batch", "online"}, default="batch"
        How ``fit`` updates q(theta) (``method="vb"`` only), as in scikit-learn's
        ``LatentDirichletAllocation``.
        {online_learning_epochs}
        The first q(theta) is the VBM step of the start's q(hidden); with
        ``sample_weight``, ``total_samples`` is the rows' total weight.  An epoch
        records in ``lower_bounds_`` a stochastic estimate of the bound: the sum over
        its minibatches of ln Z of their rows (under the q(theta) that each step
        started from) minus the KL of q(theta) at the end of the epoch.
        {online_learning_result}
        ``expected_counts_`` are those of that VBE step.  ``acceleration`` and
        ``bound_check`` do not apply (the estimate may decrease).
        {online_learning_restarts}
    {online_step_params}
    batch_size : int, default=128
        Number of rows in a minibatch (``learning_method="online"`` and
        :meth:`partial_fit`), as scikit-learn's ``LatentDirichletAllocation``.  A
        step costs a compression of its rows to patterns and the enumeration of their
        unobserved configurations, so larger minibatches amortise the compression
        and average more rows per step.
    total_samples : float, default=1e6
        Number of rows of the whole stream that :meth:`partial_fit` learns from
        (their total weight with ``sample_weight``): a minibatch's expected counts
        are multiplied by ``total_samples / n_b`` (``n_b`` its rows, or their total
        weight) before the step.  ``fit`` uses the rows of ``X`` instead.

    Attributes
    ----------
    structure_ : DAGStructure
        The parsed structure, with all cardinalities.
    cardinalities_ : dict
        Number of states of every node.
    categories_ : list of (ndarray or None)
        For every observed column, the learned category values (None when the
        cardinality was declared).
    prior_ : list of ndarray
        The Dirichlet hyperparameters ``lambda_j`` per node, shape ``(q_j, r_j)``.
    posterior_ : list of ndarray
        VB only: the Dirichlet parameters ``alpha_j = lambda_j + N_j`` of q(theta).
    cpts_ : list of ndarray
        The CPTs used for prediction: posterior means ``alpha / alpha_0`` (VB) or
        the EM estimate.
    expected_log_cpts_ : list of ndarray
        VB only: ``E_q[ln theta]`` (the sub-normalised tables of the VBE step).
    expected_counts_ : list of ndarray
        Expected family counts ``N_j`` under the stored q(hidden).
    lower_bound_ : float
        The variational lower bound on ln p(X) (nats, total); for EM methods the
        Cheeseman-Stutz bound.
    log_likelihood_ : float
        ln p(X | ``cpts_``).
    log_alias_count_ : float
        ln S, the number of equivalent relabellings (thesis Section 6.3.2; counted
        by the automorphism rule of ``alias_count``).
    n_parameters_ : int
        Naive parameter count, eq. (6.24).
    n_batch_iter_ : int
        Online learning only: one more than the number of natural-gradient steps
        taken, the t of the next step size (scikit-learn's convention).

    Examples
    --------
    The default structure is the latent-class model: one hidden node parent of every column.

    >>> from sklearn_vb import VBDiscreteDAG
    >>> from sklearn_vb.datasets import make_beal_dag
    >>> X = make_beal_dag(n_samples=200, random_state=0)     # 4 observed columns, 5 states
    >>> dag = VBDiscreteDAG(n_components=2, random_state=0).fit(X)
    >>> dag.structure_.names
    ('latent', 'x0', 'x1', 'x2', 'x3')
    >>> [cpt.shape for cpt in dag.cpts_]
    [(1, 2), (2, 5), (2, 5), (2, 5), (2, 5)]
    """

    _parameter_constraints: dict = {
        **VBEMEstimator._parameter_constraints,
        "structure": "no_validation",
        "cardinalities": "no_validation",
        "hidden": "no_validation",
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "prior": [Interval(Real, 0.0, None, closed="neither"), StrOptions({"uniform", "bdeu"}), dict, list, tuple],
        "ess": [Interval(Real, 0.0, None, closed="neither")],
        "method": [StrOptions({"vb", "map", "ml"})],
        "map_basis": [StrOptions({"softmax", "natural"})],
        "init_params": [StrOptions({"random", "posterior"})],
        "init_posterior": [None, dict],
        "max_configurations": [Interval(Integral, 1, None, closed="left")],
        "allow_float_categories": ["boolean"],
        "acceleration": ACCELERATION_CONSTRAINT,
        **ONLINE_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        structure=None,
        cardinalities=None,
        hidden=None,
        *,
        n_components=2,
        prior=1.0,
        ess=1.0,
        method="vb",
        map_basis="softmax",
        max_iter=1000,
        tol=1e-4,
        n_init=3,
        init_params="random",
        init_posterior=None,
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        bound_check="raise",
        max_configurations=MAX_CONFIGURATIONS,
        acceleration="squarem",
        keep_restarts=False,
        allow_float_categories=False,
        learning_method="batch",
        learning_decay=0.7,
        learning_offset=10.0,
        batch_size=128,
        total_samples=1e6,
    ):
        super().__init__(
            max_iter=max_iter,
            tol=tol,
            n_init=n_init,
            init_params=init_params,
            random_state=random_state,
            warm_start=warm_start,
            verbose=verbose,
            verbose_interval=verbose_interval,
            bound_check=bound_check,
        )
        self.keep_restarts = keep_restarts
        self.structure = structure
        self.cardinalities = cardinalities
        self.hidden = hidden
        self.n_components = n_components
        self.prior = prior
        self.ess = ess
        self.method = method
        self.map_basis = map_basis
        self.init_posterior = init_posterior
        self.max_configurations = max_configurations
        self.acceleration = acceleration
        self.allow_float_categories = allow_float_categories
        self.learning_method = learning_method
        self.learning_decay = learning_decay
        self.learning_offset = learning_offset
        self.batch_size = batch_size
        self.total_samples = total_samples

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        # a table of categories (integer codes, labels, pandas categoricals), which
        # scikit-learn's estimator checks then feed as integer codes
        tags.input_tags.categorical = True
        return tags

    # ------------------------------------------------------------------ input
    def _check_online(self, what):
        """Arguments that online learning (``what``: the argument or method asking for
        it) cannot combine with."""
        check_online_method(self.method, what)

    def _check_fit_data(self, X, sample_weight=None):
        if self.learning_method == "online":
            self._check_online("learning_method='online'")
        # a fit (or the first partial_fit) begins a new history of bounds
        self._streamed = False
        if is_dask_array(X):
            self._check_dask(sample_weight)
            return dask_fit_data(self, X)
        columns, declared = validate_categorical_data(self, X, reset=True)
        n = columns[0].shape[0]
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else [str(v) for v in names]
        obs_names = observed_column_names(names, len(columns))
        structure = parse_structure(self.structure, self.cardinalities, self.hidden,
                                    observed_names=obs_names, n_components=self.n_components)
        self._structure = structure
        self._columns = observed_columns(structure, names, len(columns), self.structure is None)
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, columns[0][:, None], dtype=np.float64,
                                           ensure_non_negative=True)
        codes, self._categories = encode_columns(
            [columns[c] for c in self._columns], structure, weights=weights,
            declared_categories=[declared[c] for c in self._columns],
            allow_float_categories=self.allow_float_categories)
        cardinalities = list(structure.cardinalities)
        for c, j in enumerate(structure.observed):
            if self._categories[c] is not None:
                cardinalities[j] = int(self._categories[c].size)
        self._structure = structure.with_cardinalities(cardinalities)
        layout = CPTLayout(self._structure)
        self._layout = layout
        self._prior = prior_flat(self.prior, self.ess, layout)
        self._basis = self.map_basis
        if self.method == "map" and self.map_basis == "natural" and np.any(self._prior < 1):
            warn_at_caller(
                "map_basis='natural' with Dirichlet hyperparameters below 1 can give negative "
                "probabilities (eq. 6.23); using the softmax basis (theta ∝ lambda + N) instead.",
                UserWarning)
            self._basis = "softmax"
        codes, weights = positive_rows(codes, weights)
        start = (start_tables(self.init_posterior, layout, self.method)
                 if self.init_params == "posterior" else None)
        pdata = prepare_patterns(codes, weights, layout, max_configurations=self.max_configurations)
        return _FitData(pdata, layout, self._prior, n, start, codes,
                        np.ones(codes.shape[0]) if weights is None else weights)

    def _check_dask(self, sample_weight):
        """What a fit on a dask array cannot combine with."""
        check_batch_vb(self)
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with a dask array X.")

    # ------------------------------------------------------------------ VBEM / EM
    # One restart is one compiled call (sklearn_vb.dag.fit_kernels): the M / VBM and
    # E / VBE steps, SQUAREM and the stopping rule run there; the base class keeps the
    # restarts, warm starts, the kept run and the convergence warning.
    def _iteration_steps(self):
        # the compiled loop (dag/fit_kernels.py) runs the steps; they are named here
        # for its messages
        if self.method == "vb":
            # the iteration the compiled run reproduces; a fit on a dask array runs it
            return (Step("vbm", self._step_vbm), Step("vbe", self._step_vbe))
        return (Step("m", None), Step("e", None))

    def _step_vbm(self, data, iteration):
        self._alpha_ = np.empty(data.layout.size)
        self._elog_ = np.empty(data.layout.size)
        self._kl_ = float(dirichlet_update(data.prior, self._counts_, data.layout.row_ptr,
                                           self._alpha_, self._elog_))

    def _step_vbe(self, data, iteration):
        self._infer(data, self._elog_)

    def _pack_hyperparameters(self):
        # SQUAREM extrapolates ln alpha, as the compiled run does
        return np.log(self._alpha_)

    def _unpack_hyperparameters(self, vector, data):
        trial = np.exp(vector)
        if not np.all((trial > 0) & np.isfinite(trial)):
            return False
        self._alpha_ = np.empty(data.layout.size)
        self._elog_ = np.empty(data.layout.size)
        self._kl_ = float(dirichlet_update(data.prior, trial - data.prior,
                                           data.layout.row_ptr, self._alpha_, self._elog_))
        return True

    def _initialize(self, data, random_state):
        layout = data.layout
        if data.start_tables is None:
            g = random_state.standard_gamma(data.prior)
            g = np.maximum(g, 1e-300)
            log_phi = np.log(g / np.repeat(layout.row_sums(g), np.diff(layout.row_ptr)))
        else:
            priors = layout.split(data.prior)
            tables = []
            for j, table in enumerate(data.start_tables):
                if table is None:
                    g = np.maximum(random_state.standard_gamma(priors[j]), 1e-300)
                    table = np.log(g / g.sum(axis=1, keepdims=True))
                tables.append(table)
            log_phi = layout.join(tables)
        self._infer(data, log_phi)
        # a new start begins the step-size schedule of online learning anew
        self.__dict__.pop("n_batch_iter_", None)
        if self.learning_method == "online":
            self._online_rng = random_state  # the epochs' orders continue its draws
        else:
            self.__dict__.pop("_online_rng", None)
        self._stale_counts = False
        # placeholders until the first VBM / M step
        if self.method == "vb":
            self._alpha_ = data.prior.copy()
            self._elog_ = np.zeros(layout.size)
            self._kl_ = 0.0
            self._fresh = True
        else:
            self._theta_ = np.exp(log_phi)
            self._log_theta_ = log_phi

    def _infer(self, data, log_phi):
        """The (V)E step under the flat log tables ``log_phi``: expected counts and, per
        pattern in memory or summed over the chunks of a dask array, ln Z and the
        entropy of q(hidden)."""
        if isinstance(data, DaskFitData):
            stats = data.chunk_sum(vbe_statistics, log_phi)
            self._counts_ = stats.counts
            self._log_z_ = np.array([stats.log_normaliser])
            self._entropy_ = np.array([stats.entropy])
            return
        self._counts_, self._log_z_, self._entropy_ = vbe_patterns(data.pdata, log_phi,
                                                                   data.post)

    def _run_vbem(self, data):
        """One restart from the stored E-step state, as one compiled call (or epochs of
        online steps with ``learning_method="online"``)."""
        if self.method == "vb" and self.learning_method == "online":
            return run_online(self, data)
        if isinstance(data, DaskFitData):
            # the VBE steps are tasks on the chunks: the iteration runs here
            if getattr(self, "_stale_counts", False):
                self._infer(data, self._elog_)
                self._stale_counts = False
            self._fresh = False
            return self._iterate(data, range(1, self.max_iter + 1))
        if getattr(self, "_stale_counts", False):
            # q(theta) was last moved by partial_fit: the counts of its last minibatch
            # are not those of these data, so the run begins with a VBE step
            self._infer(data, self._elog_)
            self._stale_counts = False
        self._fresh = False
        pd, layout = data.pdata, data.layout
        counts = self._counts_.copy()
        log_z = np.empty(pd.n_patterns)
        entropy = np.empty(pd.n_patterns)
        trace = np.empty(self.max_iter)
        check_steps = self.bound_check == "steps"
        self._run_extrapolations = None
        if self.method == "vb":
            accelerate = self.acceleration == "squarem"
            alpha = np.empty(layout.size)
            elog = np.empty(layout.size)
            n_iter, converged, kl, accepted, rejected, status, step, before, after = vbem_run(
                counts, data.prior, layout.row_ptr, pd.idx, pd.row_start, pd.weights,
                self.max_iter, float(self.tol), accelerate, check_steps, alpha, elog,
                data.post, log_z, entropy, trace)
            self._alpha_, self._elog_, self._kl_ = alpha, elog, kl
            if accelerate:
                self._run_extrapolations = {"accepted": accepted, "rejected": rejected}
        else:
            offset = self._em_offset(data)
            theta = np.empty(layout.size)
            log_theta = np.empty(layout.size)
            n_iter, converged, status, step, before, after = em_run(
                counts, offset, self._log_prior_constant(data), layout.row_ptr, pd.idx,
                pd.row_start, pd.weights, self.max_iter, float(self.tol), check_steps, theta,
                log_theta, data.post, log_z, entropy, trace)
            self._theta_, self._log_theta_ = theta, log_theta
        self._counts_, self._log_z_, self._entropy_ = counts, log_z, entropy
        self._check_run(trace[:n_iter], status, step, before, after)
        return [float(v) for v in trace[:n_iter]], bool(converged)

    # ------------------------------------------------------------------ online VB
    def _check_run(self, trace, status, step, before, after):
        """Raise, warn and print as the base class's loop does after every iteration."""
        iteration = trace.shape[0] + 1  # where a failed run stopped
        if status == DECREASED:
            self._check_decrease(before, after, iteration, self._iteration_steps()[step].name,
                                 raise_error=True)
        if status == NOT_FINITE:
            raise FloatingPointError(
                f"{type(self).__name__}: the lower bound is {after} at iteration "
                f"{iteration}; the data or the priors are degenerate.")
        if self.bound_check != "steps":
            label = "+".join(s.name for s in self._iteration_steps())
            for i in range(1, trace.shape[0]):
                self._check_decrease(float(trace[i - 1]), float(trace[i]), i + 1, label)
        if self.verbose >= 2:
            for i in range(self.verbose_interval, trace.shape[0] + 1, self.verbose_interval):
                print(f"  iteration {i}: bound {trace[i - 1]:.6f}")

    def _em_offset(self, data):
        """What the M step adds to the expected counts before normalising (the mode of
        the Dirichlet posterior in the chosen basis), also the power of theta in the
        prior density of the MAP objective."""
        if self.method == "ml":
            return np.zeros(data.layout.size)
        if self._basis == "softmax":
            return data.prior
        return data.prior - 1.0

    def _log_prior_constant(self, data):
        """ln of the normaliser of the Dirichlet prior densities (0 for ML)."""
        if self.method == "ml":
            return 0.0
        lam = data.prior
        rp = data.layout.row_ptr[:-1]
        return float(np.sum(gammaln(np.add.reduceat(lam, rp))) - np.sum(gammaln(lam)))

    def _lower_bound(self, data):
        """The bound of the stored state (the EM objective for ``method="map"|"ml"``);
        the compiled run records the same value after every iteration."""
        if self.method == "vb":
            return self._bound_form_c(data)
        ent = float(np.dot(_pattern_weights(data), self._entropy_))
        return masked_dot(self._counts_, self._log_theta_) + ent + (
            self._log_prior_constant(data) + masked_dot(self._em_offset(data), self._log_theta_))

    # three forms of F: the general one (C) and what it reduces to right after a VBE
    # step (A) and right after a VBM step (B); tests check they agree where each is valid
    def _bound_form_a(self, data):
        """Valid right after a VBE step: sum_i w_i ln Z_i(theta~) - KL(q(theta)||p(theta))."""
        return float(np.dot(_pattern_weights(data), self._log_z_)) - self._kl_

    def _bound_form_b(self, data):
        """Valid right after a VBM step: complete-data evidence at N(q_s) + entropy of q_s."""
        return log_dirichlet_integral(data.prior, self._counts_, data.layout) + float(
            np.dot(_pattern_weights(data), self._entropy_))

    def _bound_form_c(self, data):
        """General form, valid for any stored pair (q_s, q_theta)."""
        return masked_dot(self._counts_, self._elog_) + float(
            np.dot(_pattern_weights(data), self._entropy_)) - self._kl_

    def _finalize(self, data):
        if self.method == "vb" and self.learning_method == "online":
            # the history holds estimates; the bound of the final q(theta) is exact
            self._infer(data, self._elog_)
            self.lower_bound_ = self._bound_form_a(data)
        theta = self._set_fitted_tables(data.layout, data.prior)
        if self.method != "vb":
            self.objective_ = self.lower_bound_
            self.objectives_ = self.lower_bounds_
            # the last step was an exact E step at theta_hat: Cheeseman-Stutz (Form B)
            cs = self._bound_form_b(data)
            self.cheeseman_stutz_ = cs
            self.lower_bound_ = cs
            self.lower_bounds_ = np.array([cs])
        with np.errstate(divide="ignore"):
            log_theta = np.log(theta)
        self.log_likelihood_ = data.chunk_sum(log_likelihood, log_theta)

    def _weighted_log_likelihood(self, pdata, theta):
        """sum_i w_i ln p(x_i | theta) over the patterns ``pdata``."""
        with np.errstate(divide="ignore"):
            log_theta = np.log(theta)
        return log_likelihood(pdata, log_theta)

    def _set_fitted_tables(self, layout, prior):
        """The fitted attributes of the stored state that need no data (structure,
        prior, counts, q(theta) or the point estimate, CPTs); returns the CPTs, flat."""
        s = self._structure
        self.structure_ = s
        self.cardinalities_ = {n: int(r) for n, r in zip(s.names, s.cardinalities)}
        self.categories_ = list(self._categories)
        self.prior_ = layout.split(prior)
        self.expected_counts_ = layout.split(self._counts_)
        self.n_parameters_ = parameter_count(s)
        # S is an exact Python integer (it can exceed 2**64): math.log, not np.log
        self.log_alias_count_ = math.log(alias_count(s, prior, layout))
        if self.method == "vb":
            theta = np.empty(layout.size)
            normalise_rows(self._alpha_, layout.row_ptr, theta)
            self.posterior_ = layout.split(self._alpha_)
            self.expected_log_cpts_ = layout.split(self._elog_)
        else:
            theta = self._theta_
        self._theta_mean = theta
        self.cpts_ = layout.split(theta)
        return theta

    # ------------------------------------------------------------------ partial_fit
    def partial_fit(self, X, y=None, sample_weight=None):
        """Online variational Bayes: natural-gradient steps on q(theta) from the rows
        of ``X``.

        {partial_fit_minibatches}
        The step is an exact VBE step on its rows (the posterior over the joint
        configurations of every row's unobserved nodes under the current
        ``exp E[ln theta]``), then, for every CPT row's Dirichlet,

            alpha <- (1 - rho) alpha + rho (lambda + total_samples / n_b * N_b),

        with ``lambda`` the prior, ``N_b`` the minibatch's expected family counts, n_b
        its number of rows (total weight with ``sample_weight``) and
        ``rho = (learning_offset + n_batch_iter_)^(-learning_decay)``; then
        ``n_batch_iter_`` grows by one.  ``X`` is read, never written, and encoded as a
        whole (one integer code per cell), so a stream too large for memory is passed
        in chunks, e.g. of a ``np.memmap``::

            for X_chunk in chunks:
                model.partial_fit(X_chunk)

        The first call (on an unfitted model) sets up the structure and, for observed
        nodes without a declared cardinality, the categories, from that first ``X``;
        its start is one start of ``init_params`` (no restarts): q(hidden) of the rows
        of the first ``X`` under the starting tables and the VBM step of its counts.
        Later calls must have the same columns; a value outside the categories learned
        from the first ``X`` is then treated as missing, as in ``predict``, so declare
        the cardinalities of a stream whose first chunk may not show every state.  A
        fitted model (by ``fit``, batch or online) continues from its q(theta).

        {partial_fit_stream}
        The estimate is ``total_samples / n_b`` times the minibatch's sum of ln Z under
        the q(theta) its step started from, minus the KL of q(theta) after the step;
        ``expected_counts_`` are the last minibatch's expected counts times
        ``total_samples / n_b``; ``log_likelihood_`` is that of the rows of this
        call's ``X`` under ``cpts_``.
        {partial_fit_not_scored}

        Parameters
        ----------
        X : array-like of shape (n_samples, n_observed)
            Observed columns, as for :meth:`fit`.
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights; rows of weight zero are left out.

        Returns
        -------
        self
        """
        return partial_fit(self, X, sample_weight)

    # ------------------------------------------------------------------ prediction
    def _codes(self, X, sample_weight=None):
        """Integer codes (-1 missing) of the rows of new data ``X`` in observed-node
        order, and the validated ``sample_weight`` (None when not given)."""
        columns, _ = validate_categorical_data(self, X, reset=False)
        codes = encode_columns([columns[c] for c in self._columns], self._structure,
                               self._categories)[0]
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, columns[0][:, None], dtype=np.float64,
                                           ensure_non_negative=True)
        return codes, weights

    def _prepare(self, X, blank=None):
        self._check_is_fitted()
        codes = self._codes(X)[0]
        if blank is not None:
            codes[:, blank] = -1
        return prepare_patterns(codes, None, self._layout, max_configurations=self.max_configurations)

    def score_samples(self, X):
        """ln p(x_i | ``cpts_``) per row (unseen or missing values are marginalised)."""
        return self._row_log_likelihoods(self._prepare(X))

    def _row_log_likelihoods(self, pdata):
        with np.errstate(divide="ignore"):
            log_theta = np.log(self._theta_mean)
        log_z = np.empty(pdata.n_patterns)
        pattern_log_normalisers(log_theta, pdata.idx, pdata.row_start, log_z)
        return log_z[pdata.inverse]

    def score(self, X, y=None):
        """Mean log-likelihood per row under the posterior-mean CPTs."""
        return float(np.mean(self.score_samples(X)))

    def _node_index(self, node):
        self._check_is_fitted()
        return self.structure_.query_index(node)

    def predict_proba(self, X, node=None):
        """Posterior marginal of ``node`` (default: the first hidden node) for each row.

        The posterior is exact under the posterior-mean CPTs ``cpts_``, which for one
        new case is the exact predictive under q(theta) (each CPT row appears at most
        once).  If ``node`` is observed, its column in ``X`` is ignored (held out).
        """
        j = self._node_index(node)
        s = self.structure_
        blank = None
        if not s.hidden[j]:
            blank = s.observed.index(j)
        pdata = self._prepare(X, blank=blank)
        with np.errstate(divide="ignore"):
            log_theta = np.log(self._theta_mean)
        post = np.empty(pdata.idx.shape[0])
        counts = np.empty(self._layout.size)
        lz = np.empty(pdata.n_patterns)
        ent = np.empty(pdata.n_patterns)
        enumerate_posterior(log_theta, pdata.idx, pdata.row_start, np.zeros(pdata.n_patterns),
                            counts, post, lz, ent)
        r = int(self._layout.r[j])
        owner = np.repeat(np.arange(pdata.n_patterns), np.diff(pdata.row_start))
        marg = np.bincount(owner * r + pdata.states[:, j], weights=post,
                           minlength=pdata.n_patterns * r).reshape(pdata.n_patterns, r)
        return marg[pdata.inverse]

    def predict(self, X, node=None):
        """Most probable state of ``node`` (default: the first hidden node) per row
        (category values for observed nodes with learned categories)."""
        j = self._node_index(node)
        labels = np.argmax(self.predict_proba(X, node=node), axis=1)
        s = self.structure_
        if not s.hidden[j]:
            cats = self._categories[s.observed.index(j)]
            if cats is not None:
                return cats[labels]
        return labels

    def sample(self, n_samples=1):
        """Draw cases by ancestral sampling from ``cpts_``.

        Returns
        -------
        X : ndarray (n_samples, n_observed)
            Observed values (integers; learned category values if any).
        hidden : ndarray (n_samples, n_hidden)
            The states of the hidden nodes.
        """
        self._check_is_fitted()
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        rng = check_random_state(self.random_state)
        states = sample_states(self.structure_, self._layout, self._theta_mean, n_samples, rng)
        s = self.structure_
        obs = states[:, list(s.observed)]
        if any(c is not None for c in self._categories):
            labels = any(c is not None and c.dtype == object for c in self._categories)
            X = obs.astype(object if labels else float)
            for c, cats in enumerate(self._categories):
                if cats is not None:
                    X[:, c] = cats[obs[:, c]]
        else:
            X = obs
        return X, states[:, list(s.hidden_nodes)]

    # ------------------------------------------------------------------ bic / aic
    def _check_new_data(self, X):
        return self._prepare(X)

    def _log_likelihood(self, pdata):
        return float(np.sum(self._row_log_likelihoods(pdata)))

    def _n_observations(self, pdata):
        return pdata.inverse.shape[0]

    def _n_parameters(self):
        """The naive parameter count d of eq. (6.24)."""
        return self.n_parameters_

    def format_cpts(self, decimals=2):
        """The CPTs as readable text: one block per node, one line per parent configuration."""
        self._check_is_fitted()
        s = self.structure_
        lines = []
        for j in range(s.n_nodes):
            kind = "hidden" if s.hidden[j] else "observed"
            pa = [s.names[p] for p in s.parents[j]]
            lines.append(f"{s.names[j]!s} ({kind}, {s.cardinalities[j]} states) | parents {pa}")
            table = self.cpts_[j]
            radices = [s.cardinalities[p] for p in s.parents[j]]
            for l, row in enumerate(table):
                cfg = np.unravel_index(l, radices) if radices else ()
                label = ",".join(str(int(v)) for v in cfg) if radices else "-"
                vals = " ".join(f"{v:.{decimals}f}" for v in row)
                lines.append(f"  [{label}]  {vals}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ oracles
    def exact_log_evidence(self, X, max_terms=2 * 10**6):
        """ln p(X | structure, prior) by brute-force summation over all completions
        of the hidden values.  Exponential cost: tiny data only."""
        pdata = self._prepare(X)
        return exact_log_evidence(prior_flat(self.prior, self.ess, self._layout), self._layout, pdata, max_terms=max_terms)


def _pattern_weights(data):
    """The weights of the per-pattern ln Z and entropies the estimator stores: the
    patterns' in memory; one for the sums over the chunks of a dask array."""
    return np.ones(1) if isinstance(data, DaskFitData) else data.pdata.weights


def sample_states(structure, layout, theta, n_samples, rng):
    """Ancestral sampling of all nodes: (n_samples, J) int array."""
    J = structure.n_nodes
    states = np.zeros((n_samples, J), dtype=np.int64)
    for j in structure.order:
        r = int(layout.r[j])
        l = np.zeros(n_samples, dtype=np.int64)
        for p in structure.parents[j]:
            l = l * int(layout.r[p]) + states[:, p]
        table = theta[layout.offsets[j]:layout.offsets[j + 1]].reshape(-1, r)
        cdf = np.cumsum(table[l], axis=1)
        u = rng.random_sample(n_samples)[:, None] * cdf[:, -1:]
        states[:, j] = np.minimum((u >= cdf).sum(axis=1), r - 1)
    return states


def alias_count(structure, prior, layout):
    """S = |Aut_H(G)| * prod_{hidden h with children} r_h!, the number of aliases of
    the parameter posterior (thesis Section 6.3.2), by the automorphism rule.

    ``Aut_H(G)``: permutations of the connected hidden nodes that preserve
    cardinalities, prior tables and the edge set (observed nodes fixed).
    """
    s = structure
    connected = [h for h in s.hidden_nodes if s.children(h)]
    S = 1
    for h in connected:
        S *= math.factorial(s.cardinalities[h])
    if len(connected) < 2 or len(connected) > 8:
        return S
    edges = {(p, c) for c in range(s.n_nodes) for p in s.parents[c]}
    priors = layout.split(prior)
    aut = 0
    for perm in itertools.permutations(connected):
        mapping = dict(zip(connected, perm))
        ok = all(s.cardinalities[a] == s.cardinalities[b] and priors[a].shape == priors[b].shape
                 and np.array_equal(priors[a], priors[b]) for a, b in mapping.items())
        if ok:
            mapped = {(mapping.get(p, p), mapping.get(c, c)) for p, c in edges}
            ok = mapped == edges
        aut += ok
    return S * aut
