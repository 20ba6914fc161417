"""Variational Bayesian linear dynamical system (linear-Gaussian state-space model).

Model (Beal 2003, Chapter 5)::

    x_0 ~ N(mu0, Sigma0)
    x_t = A x_{t-1} + B u_t + w_t,       w_t ~ N(0, I_k)
    y_t = C x_t + D u_t + v_t,           v_t ~ N(0, diag(rho)^{-1})

with ARD priors on the columns of A (alpha), B (beta), C (gamma) and D (delta), the
priors on the rows of C and D scaled by the noise precision of their output, and
Gamma(a, b) priors on the noise precisions rho.  The variational posterior is
``q(A, B) q(C, D, rho) q(x)``; ``q(x)`` is computed by the variational Kalman
filter / RTS smoother in :mod:`sklearn_vb.lds.kalman`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.base import Step, VBEMEstimator, predicted_remaining_gain
from .._core.validation import (
    MISSING_IN_SEQUENCES,
    check_sequences,
    check_sequences_routed,
    check_unused_y,
    fitted_from_sequence_ids,
    sequence_bounds,
    validate_float_data,
)
from ._ard_check import active_state_mask, run_with_ard_check
from ._forecast import forecast, posterior_std, sample
from ._hyper import check_schedule, optimal_init_state
from ._inputs import full_inputs, input_columns
from ._move_steps import rotate_step, translate_step
from ._point import fit_m_step, point_objective
from ._prune import prune_step
from ._state import BoundMemo, HiddenPosterior, HyperparameterTrace, ParameterPosterior
from ._vbem import (
    SIGMA0_FLOOR,
    exact_hyper_update,
    fixed_point_hyper_update,
    hidden_stats,
    init_state_prior,
    initial_hidden_posterior,
    kl_terms,
    lower_bound,
    noise_prior_learned,
    output_scale,
    vbm,
)
from .inference import (StatePosterior, check_missing_outputs, data_moments, missing_outputs,
                        smooth_states)

__all__ = ["VBLinearDynamicalSystem"]


def _default_n_states(n_outputs):
    """The state dimension of ``n_states=None``: the number of outputs (the
    toolbox's default), but at least 4, so that few outputs still get an oscillating
    pair of states (a cycle needs two; a one-dimensional state cannot oscillate) and
    room for ARD to switch the unneeded ones off."""
    return max(int(n_outputs), 4)


@dataclass
class _Sequences:
    """Validated sequences: the outputs, the full input matrix (user inputs then
    intercept) and its columns that drive the state and the outputs, and the first
    and one-past-last row of every sequence."""

    X: np.ndarray
    U: np.ndarray
    Us: np.ndarray
    Uo: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


@dataclass
class _FitData(_Sequences):
    """The training sequences and the statistics of the VBM step that do not depend
    on q(x), computed once per fit: ``U'U`` of the state and of the output inputs,
    ``U_o'Y`` and the per-output sums of squares ``sum_t y_ts^2``.  With missing
    outputs (NaN in ``X``), ``X0`` is ``X`` with them set to 0 and ``obs_mask`` marks
    the observed ones (both ``X`` and None without)."""

    UUs: np.ndarray = field(init=False)
    UUo: np.ndarray = field(init=False)
    UY: np.ndarray = field(init=False)
    YY: np.ndarray = field(init=False)
    X0: np.ndarray = field(init=False)
    obs_mask: np.ndarray | None = field(init=False)

    def __post_init__(self):
        self.X0, self.obs_mask = missing_outputs(self.X)
        self.UUs, self.UUo, self.UY, self.YY = data_moments(self.X0, self.Us, self.Uo)


class VBLinearDynamicalSystem(ClassNamePrefixFeaturesOutMixin, TransformerMixin, VBEMEstimator):
    """Variational Bayesian linear-Gaussian state-space model with inputs and ARD.

    Parameters
    ----------
    n_states : int or None, default=None
        Dimension ``k`` of the hidden state; None means the number of outputs, but
        at least 4 (with one output a single state could not oscillate).
        With ``ard=True`` choose it generously: unused dimensions are switched off
        (and, with ``prune_states``, removed), so it is the maximum dimension.
    fit_intercept : bool, default=True
        Append a constant input 1 to ``u_t`` (a state offset through B and an output
        offset through D).
    input_to_state, input_to_output : bool or array of bool, default=True
        Which user inputs drive the states (columns of B) and the outputs (columns of
        D); a structurally absent column is exactly zero.  The intercept, when
        fitted, drives both.
    ard : bool, default=True
        Optimise the ARD precisions alpha, beta, gamma, delta of the columns of A, B,
        C, D.  With False they stay at ``ard_init``.
    hyperparameter_schedule : tuple of 3 ints or None, default=(10, 20, 30)
        Iterations from which (alpha, beta), (gamma, delta) and the remaining
        hyperparameters (a, b, mu0, Sigma0) are optimised.  None: never optimise.
    ard_init : float, default=1.0
        Initial (or fixed) value of every ARD precision.
    noise_shape : float, default=1.0
        Initial shape ``a`` of the Gamma(a, b) prior of the output noise precisions.
    noise_rate : float or None, default=None
        Initial rate ``b`` of that prior (units of squared outputs).  None: the mean
        variance of the output columns, so that the default prior follows the data's
        scale and outputs in other units (``X * c``) give the same fit, with the bound
        shifted by the Jacobian ``-T p ln c``.  A float is used as given.
    init_state_cov : {"diag", "full", "spherical", "fixed"}, default="diag"
        Form of the optimised prior covariance of the auxiliary initial state.
    ard_threshold : float, default=10.0
        Pruning rule for ``active_states_``: state dimension j is reported switched
        off when ``alpha_j >= ard_threshold * <x_j^2>_A`` and
        ``gamma_j >= ard_threshold * <x_j^2>_C`` (prior precision dominating the data
        information of that column in both A and C; ``<x_j^2>`` are the diagonals of
        the expected state second-moment sums W_A and W_C).  For an active column the
        ratio is far below 1 (typically < 0.1); once a column is extinct its ARD
        update raises the ratio by about 1 per iteration, so the rule fires roughly
        ``ard_threshold`` iterations after extinction.  A dimension dead in A but
        alive in C (a static factor) still shapes the output covariance and is kept.
    init_params : {"pca", "scaled-pca", "random"}, default="pca"
        Initial hidden-state statistics for the first VBM step: ``"pca"`` uses the
        unit-variance principal-component scores of X (plus 0.1 N(0, 1) noise, so
        restarts differ), or, when ``n_states`` exceeds the rank of X, those of X
        with lagged copies of itself appended (the delay embedding of singular
        spectrum analysis: for one output with a cycle, a sine and cosine of the
        cycle), so that every state starts with a signal to follow;
        ``"random"`` the toolbox's N(0, I) draws.  From random
        starts ARD often stalls on plateaus with spurious "static" dimensions (alive
        in C, dead in A); the PCA start avoids most of them.  ``"scaled-pca"``
        rescales each PCA score to unit innovation variance under a one-step
        regression on the previous scores and the state inputs (the scale that
        Q = I implies: a persistent dimension has variance 1 / (1 - a^2), not 1).
        On persistent, input-driven systems it saves hundreds of iterations (the
        unit-variance start spends them growing the state scale); when the outputs
        are dominated by direct input effects D u_t it can start the states on the
        inputs and end in a lower bound.
    prune_states : bool, default=True
        With ``ard=True``, a bound-guided move that removes state dimensions (not in
        the thesis; in the spirit of the birth/death moves of the mixture of factor
        analysers): the weakest dimension is removed (its row and column of A, row
        of B, column of C, ARD precisions and initial-state entries), the smaller
        model is re-converged for up to ``prune_iter`` iterations, and the move is
        kept only if the bound then exceeds the bound before the move (extrapolated
        over those iterations at the current gain per iteration); otherwise, or as
        soon as the re-convergence cannot reach that at its current gain, the state
        before the move is restored.  ARD alone leaves spare dimensions that carry
        input effects (a state alive in C and dead in A whose B row replaces a
        column of D, or dead in C and alive in A feeding a lagged input through B)
        as local optima with a lower bound than the smaller model: B's ARD has one
        precision per input column shared by all state rows, so extra rows cost
        almost nothing.  See ``sklearn_vb.lds._prune.prune_step`` for when moves are
        proposed.  Removed dimensions are deleted from the fitted model: ``n_states_``
        and every state-sized array shrink, ``kept_states_`` maps them to the
        original labels.  The iterations spent re-converging are not counted in
        ``n_iter_`` and ``lower_bounds_`` records one bound per iteration, after any
        accepted move (a rejected move leaves no trace), so it never decreases.
    prune_interval : int, default=50
        Iterations between removal proposals (doubling after repeated rejections);
        the first comes ``prune_interval`` iterations after the hyperparameter
        schedule has started every group.
    prune_iter : int, default=20
        VBEM iterations that re-converge the model after a proposed removal.  A
        removal tried when the bound has stalled may use every iteration the fit
        has left (up to ``max_iter``) and is accepted once it passes the larger
        model's bound: a smaller model can sit on a plateau for longer than
        ``prune_iter`` before it climbs past it.
    rotations : bool, default=True
        Once the hyperparameter schedule has started every group, start every
        iteration with a rotation move (Luttinen and Ilin 2010;
        Luttinen 2013; ``sklearn_vb.lds._moves``): the change of basis of the
        hidden state ``x -> R x`` (``A -> R A R^-1``, ``B -> R B``, ``C -> C R^-1``)
        that maximises the bound, with the ARD precisions and the initial-state
        prior that the schedule optimises re-optimised for the rotated posterior.
        VBEM alone creeps along these directions (the scale and orientation of the
        states), often for thousands of iterations; the move is accepted only when
        it raises the bound.
    translations : bool, default=True
        With ``fit_intercept=True``, follow every rotation move with a translation
        move (``sklearn_vb.lds._moves.TranslationObjective``): the shift of the
        hidden state ``x -> x + c`` that the intercept columns of B and D absorb
        exactly (``b -> b + (I - A) c``, ``d -> d - C c``), with c maximising the
        bound through the priors of those two columns.  VBEM trades the level of
        the states against the two intercepts only by small coupled steps, for
        hundreds of iterations; the move is accepted only when it raises the bound.
    ard_check : bool, default=True
        With ``ard=True``, when the fit ends with fewer effective states than
        ``n_states``, also fit from the same start with the ARD precisions first
        held at ``ard_init`` (every dimension kept) and then optimised; if that
        reaches a higher bound it is kept, with a warning that names the bound lost
        by switching dimensions off.  Costs about two more fits, only when ARD
        switched something off; it runs inside every restart (``n_init``), so each
        restart keeps the better of its two fits.  ``n_iter_`` and
        ``lower_bounds_`` are those of the kept fit's last stage (at most
        ``max_iter``); ``ard_check_iter_`` counts the iterations the check ran.
    hyperparameter_update : {"exact", "fixed-point"}, default="exact"
        ``"exact"``: each ARD precision is set to the exact maximiser of the bound
        with q(theta) optimised jointly (closed form for alpha and beta, a monotone
        one-dimensional root for gamma and delta), the Gamma prior (a, b) of the
        noise precisions to the joint optimum with q(rho) (with more than one
        output), and, after the VBE step, the initial-state prior to its joint
        optimum with q(x) from the smoother's messages (the smoother is rerun when
        that gains more than ``tol``); see ``sklearn_vb.lds._hyper``.  A
        switched-off input column then reaches its infinite precision at once
        instead of creeping up by about T per iteration.  ``"fixed-point"``: the
        thesis updates (Beal 2003, eqs. 5.133-5.138) at the current q(theta).
    method : {"vb", "map", "ml"}, default="vb"
        ``"vb"`` runs VBEM.  ``"ml"`` and ``"map"`` run EM for a point estimate of
        ``(A, B, C, D, rho)`` (the baselines of Beal 2003, section 5.5), from the same
        initial hidden-state statistics (``init_params``) and with the same restarts
        and convergence rule: M steps (least squares for ``"ml"``; for ``"map"`` the
        rows of ``[A B]`` and ``[C D]`` at their conjugate posterior means under the
        ARD precisions held at ``ard_init`` and rho at the mode of its Gamma factor in
        ``ln rho``) alternate with E steps (the exact Kalman/RTS smoother at the
        point).  No hyperparameter is optimised, and there are no rotations, pruning
        or ARD check.  ``(mu0, Sigma0)`` stay at ``N(0, I)``.  ``lower_bound_`` and
        ``lower_bounds_`` then hold the EM objective (also ``objective_`` and
        ``objectives_``), which is not a bound on ln p(X): the log-likelihood at the
        point (``log_likelihood_``) for ``"ml"``, plus ``ln p(theta) + sum ln rho`` for
        ``"map"``; EM never decreases it and the loop checks this after every
        iteration.  The point is in ``A_mean_``, ``B_mean_``, ``C_mean_``,
        ``D_mean_`` and ``noise_precision_mean_``, which ``predict``, ``score``,
        ``transform`` and ``sample`` use; the posterior attributes (``Sigma_AB_``,
        ``Sigma_CD_``, ``rho_shape_``, ``rho_rate_``) are not set.
    max_iter, tol, n_init, random_state, warm_start, verbose,
    verbose_interval, bound_check,
    keep_restarts
        See :class:`sklearn_vb.base.VBEMEstimator`.  ``tol`` is on the absolute
        change of the bound in nats; convergence is only declared after the
        hyperparameter schedule has started every group and (``method="vb"``)
        when the gain still to come, predicted from the geometric decay of the last
        increments (:func:`sklearn_vb.base.predicted_remaining_gain`), is below
        ``tol``; otherwise ``converged_`` is False.

    Attributes
    ----------
    lower_bound_ : float
        The complete variational lower bound F on ln p(X | U) in nats.
    lower_bound_terms_ : dict
        ``ln_Z`` and the KL terms (``KL_B``, ``KL_A_given_B``, ``KL_rho``,
        ``KL_D_given_rho``, ``KL_C_given_rho_D``) of F at the last VBE step.
    A_mean_, B_mean_, C_mean_, D_mean_ : posterior means; B and D have one column
        per input (user inputs, then the intercept), zero where structurally absent.
    Sigma_AB_, Sigma_CD_ : posterior row covariances of [A B_s] and [C D_o] (compact:
        only the present input columns, ``state_inputs_`` / ``output_inputs_``);
        rows of [C D] have covariance ``Sigma_CD_ / rho_s``.  Fitted with missing
        outputs (NaN), every row has its own: ``Sigma_CD_`` (p, k + do, k + do), row s
        ``Sigma_CD_[s] / rho_s``.
    rho_shape_, rho_rate_ : Gamma posterior of the noise precisions (``rho_shape_``
        one float, or (p,) when fitted with missing outputs).
    noise_precision_mean_ : posterior mean of rho.
    alpha_, beta_, gamma_, delta_ : ARD precisions (beta/delta are inf for absent
        input columns).
    noise_prior_shape_, noise_prior_rate_, init_state_mean_, init_state_cov_ :
        optimised hyperparameters.
    n_states_ : int
        State dimension of the fitted model (``n_states`` less the removed ones).
    kept_states_ : array of int, shape (``n_states_``,)
        Original labels (0 .. n_states - 1) of the dimensions of the fitted model.
    active_states_, n_effective_states_ : the dimensions of the fitted model that
        ARD keeps (``ard_threshold``) and their number; removed dimensions are not
        counted.
    ard_check_iter_ : int
        Iterations run by the ARD check of the kept restart (both stages; 0 when
        it did not run), not included in ``n_iter_``.
    hyperparameter_history_ : dict of per-iteration arrays of alpha, gamma (one
        column per original state label, NaN once removed), beta, delta (best run).

    Examples
    --------
    >>> from sklearn_vb import VBLinearDynamicalSystem
    >>> from sklearn_vb.datasets import make_lds, make_lds_params
    >>> params = make_lds_params(2, 4, 0, random_state=0)   # 2 states, 4 outputs, no inputs
    >>> X, states = make_lds(params, [100], random_state=0)
    >>> lds = VBLinearDynamicalSystem(n_states=2, fit_intercept=False, max_iter=100,
    ...                               random_state=0).fit(X)
    >>> lds.transform(X).shape    # smoothed state means
    (100, 2)
    """

    _parameter_constraints: dict = {
        **VBEMEstimator._parameter_constraints,
        "n_states": [Interval(Integral, 1, None, closed="left"), None],
        "fit_intercept": ["boolean"],
        "input_to_state": ["boolean", "array-like"],
        "input_to_output": ["boolean", "array-like"],
        "ard": ["boolean"],
        "hyperparameter_schedule": [tuple, list, None],
        "ard_init": [Interval(Real, 0.0, None, closed="neither")],
        "method": [StrOptions({"vb", "map", "ml"})],
        "noise_shape": [Interval(Real, 0.0, None, closed="neither")],
        "noise_rate": [Interval(Real, 0.0, None, closed="neither"), None],
        "init_state_cov": [StrOptions({"diag", "full", "spherical", "fixed"})],
        "ard_threshold": [Interval(Real, 0.0, None, closed="neither")],
        "init_params": [StrOptions({"pca", "scaled-pca", "random"})],
        "prune_states": ["boolean"],
        "prune_interval": [Interval(Integral, 1, None, closed="left")],
        "prune_iter": [Interval(Integral, 1, None, closed="left")],
        "rotations": ["boolean"],
        "translations": ["boolean"],
        "ard_check": ["boolean"],
        "hyperparameter_update": [StrOptions({"exact", "fixed-point"})],
    }

    def __init__(
        self,
        n_states=None,
        *,
        fit_intercept=True,
        input_to_state=True,
        input_to_output=True,
        ard=True,
        hyperparameter_schedule=(10, 20, 30),
        ard_init=1.0,
        noise_shape=1.0,
        noise_rate=None,
        init_state_cov="diag",
        ard_threshold=10.0,
        prune_states=True,
        prune_interval=50,
        prune_iter=20,
        rotations=True,
        translations=True,
        ard_check=True,
        hyperparameter_update="exact",
        max_iter=500,
        tol=1e-4,
        n_init=1,
        init_params="pca",
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        bound_check="raise",
        keep_restarts=False,
        method="vb",
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
        self.method = method
        self.n_states = n_states
        self.fit_intercept = fit_intercept
        self.input_to_state = input_to_state
        self.input_to_output = input_to_output
        self.ard = ard
        self.hyperparameter_schedule = hyperparameter_schedule
        self.ard_init = ard_init
        self.noise_shape = noise_shape
        self.noise_rate = noise_rate
        self.init_state_cov = init_state_cov
        self.ard_threshold = ard_threshold
        self.prune_states = prune_states
        self.prune_interval = prune_interval
        self.prune_iter = prune_iter
        self.rotations = rotations
        self.translations = translations
        self.ard_check = ard_check
        self.hyperparameter_update = hyperparameter_update

    # ================================================================ data
    def _prepare(self, X, U, lengths, sequence_ids, reset):
        # NaN: a missing output, marginalised (missing at random); infinity is refused
        X = validate_float_data(self, X, reset=reset, missing=MISSING_IN_SEQUENCES,
                                allow_nan=True, ensure_min_samples=1)
        lens = check_sequences(X.shape[0], lengths, sequence_ids)
        starts, ends = sequence_bounds(lens)
        n_user = None if reset else self.n_user_inputs_
        Uall = full_inputs(X, U, n_user, self.fit_intercept)
        return X, Uall, starts, ends

    def _check_fit_data(self, X, U=None, lengths=None, sequence_ids=None):
        X, Uall, starts, ends = self._prepare(X, U, lengths, sequence_ids, reset=True)
        check_missing_outputs(X)
        n_user = Uall.shape[1] - int(self.fit_intercept)
        check_schedule(self.hyperparameter_schedule)
        state_cols, out_cols = input_columns(n_user, self.input_to_state,
                                             self.input_to_output, self.fit_intercept)
        Us = np.ascontiguousarray(Uall[:, state_cols])
        Uo = np.ascontiguousarray(Uall[:, out_cols])
        data = _FitData(X, Uall, Us, Uo, starts, ends)
        self.n_user_inputs_ = n_user
        self.state_inputs_ = state_cols
        self.output_inputs_ = out_cols
        self.n_inputs_ = Uall.shape[1]
        return data

    # ================================================================ init
    def _initialize(self, data, random_state):
        X = data.X
        p = X.shape[1]
        k = self.n_states if self.n_states is not None else _default_n_states(p)
        ds = data.Us.shape[1]
        do = data.Uo.shape[1]
        self.n_states_ = k
        self.kept_states_ = np.arange(k)
        self._k_max = k
        # rotations wait until the schedule optimises every hyperparameter group: while
        # ARD is switching dimensions off, a rotation can keep a dying one alive by
        # mixing it with the others
        sched = self.hyperparameter_schedule
        self._rotation_start = max(sched) + 1 if sched is not None else 1
        self.alpha_ = np.full(k, float(self.ard_init))
        self.beta_c_ = np.full(ds, float(self.ard_init))
        self.gamma_ = np.full(k, float(self.ard_init))
        self.delta_c_ = np.full(do, float(self.ard_init))
        self.noise_prior_shape_ = float(self.noise_shape)
        self.noise_prior_rate_ = (output_scale(X) if self.noise_rate is None
                                  else float(self.noise_rate))
        self.init_state_mean_ = np.zeros(k)
        self.init_state_cov_ = np.eye(k)
        self._q_x = initial_hidden_posterior(data, k, self.init_params, random_state)
        self._stats = hidden_stats(data, self._q_x)
        self._q_theta = None
        self._point_loglik = self._point_value = -np.inf
        self._history = HyperparameterTrace()

    # ================================================================ VBM
    def _hyper(self):
        """The hyperparameters of q(theta)'s prior: ``(alpha, beta, gamma, delta, a, b)``
        (the ARD precisions of the present columns, the noise prior)."""
        return (self.alpha_, self.beta_c_, self.gamma_, self.delta_c_,
                self.noise_prior_shape_, self.noise_prior_rate_)

    def _vbm(self, data, stats):
        """Optimal q(A, B) and q(C, D, rho) given the hidden statistics (thesis
        Section 5.3.1; :func:`sklearn_vb.lds._vbem.vbm`)."""
        self._q_theta = vbm(data, stats, self._q_x.omega, *self._hyper())

    # ================================================================ VBE
    def _smooth(self, X, Us, Uo, starts, ends, *, smooth, point=False, observed=None, shared=False):
        """The variational (or, with ``point=True``, the posterior-mean) Kalman filter and smoother
        of q(theta) on all sequences (``shared``: covariance tables, as ``smooth_states``)."""
        q = self._q_theta
        spread = (None, None, None) if point else (q.Sigma_AB, q.Sigma_CD, q.log_rho)
        return smooth_states(X, Us, Uo, starts, ends, q.M_AB, q.M_CD, q.rho,
                             self.init_state_mean_, self.init_state_cov_, smooth=smooth,
                             observed=observed, Sigma_AB=spread[0], Sigma_CD=spread[1],
                             log_rho=spread[2], shared_covariances=shared)

    # ================================================================ steps
    def _iteration_steps(self):
        if self.method != "vb":
            return (Step("m", self._step_m), Step("e", self._step_e))
        steps = (Step("rotate", partial(rotate_step, self)),
                 Step("translate", partial(translate_step, self)),
                 Step("hyper", self._step_hyper), Step("vbm", self._step_vbm),
                 Step("vbe", self._step_vbe))
        if self.prune_states and self._ard_on:
            return steps + (Step("prune", partial(prune_step, self)),)
        return steps

    @property
    def _ard_on(self):
        """Whether the ARD precisions are optimised (``ard``, unless the first stage
        of the ARD check holds them)."""
        return self.ard and not getattr(self, "_ard_held", False)

    def _step_vbm(self, data, iteration):
        if getattr(self, "_vbm_done", False):
            self._vbm_done = False
            return
        self._vbm(data, self._stats)

    # ================================================================ point EM steps
    @property
    def _point_fitted(self):
        """Whether the stored parameters are a point estimate (``method="ml"/"map"``)."""
        q = getattr(self, "_q_theta", None)
        return q is not None and q.point

    def _step_m(self, data, iteration):
        M_AB, M_CD, rho = fit_m_step(data, self._stats, self._q_x.omega, self._hyper(),
                                     self.method)
        # a q(theta) with no spread: the VBE kernel is then the exact smoother
        self._q_theta = ParameterPosterior.at_point(M_AB, M_CD, rho)

    def _step_e(self, data, iteration):
        res = self._smooth(data.X, data.Us, data.Uo, data.starts, data.ends, smooth=True,
                           point=True, shared=True)
        self._q_x = HiddenPosterior.from_smoother(res)
        self._stats = hidden_stats(data, self._q_x)
        self._point_loglik = float(np.sum(res.log_terms))
        self._point_value = point_objective(self.method, self._point_loglik,
                                            self._q_theta, *self._hyper())

    def _step_vbe(self, data, iteration):
        self._vbe(data)
        sched = self.hyperparameter_schedule
        if (self.hyperparameter_update == "exact" and sched is not None
                and self.init_state_cov != "fixed" and iteration - 1 >= sched[2]):
            # the joint optimum of the initial-state prior and q(x): the plain update
            # (in the hyperparameter step) moves it only like 1/n towards it
            mu0, cov, gain = optimal_init_state(
                self._q_x.omega0, self._q_x.ups0, self.init_state_mean_,
                self.init_state_cov_, self.init_state_cov, SIGMA0_FLOOR)
            if gain > self.tol:  # worth a second smoother run
                self.init_state_mean_, self.init_state_cov_ = mu0, cov
                self._vbe(data)
        self._history.record(self._in_original_labels(self.alpha_), self.beta_c_.copy(),
                             self._in_original_labels(self.gamma_), self.delta_c_.copy())

    def _in_original_labels(self, value):
        """A per-state array in the original state labels (removed ones: NaN)."""
        full = np.full(self._k_max, np.nan)
        full[self.kept_states_] = value
        return full

    def _vbe(self, data):
        self._vbm_done = False  # q(theta) is no longer optimal for the new q(x)
        res = self._smooth(data.X, data.Us, data.Uo, data.starts, data.ends, smooth=True, shared=True)
        self._q_x = HiddenPosterior.from_smoother(res)
        self._stats = hidden_stats(data, self._q_x)
        self.lower_bound_terms_ = {"ln_Z": float(np.sum(self._q_x.ln_z)),
                                   **kl_terms(self._q_theta, *self._hyper())._asdict()}

    def _step_hyper(self, data, iteration):
        self._vbm_done = False
        if self._q_theta is None:
            return
        if getattr(self, "_warm_data_changed", False):
            # warm start on new data: refresh q(x) for the new sequences first
            self._warm_data_changed = False
            self._step_vbe(data, iteration)
            return
        sched = self.hyperparameter_schedule
        if sched is None:
            return
        done = iteration - 1  # number of completed iterations
        q = self._q_theta
        p = data.X.shape[1]
        if self.hyperparameter_update == "exact":
            outputs = done >= sched[1] and self._ard_on
            noise = done >= sched[2] and noise_prior_learned(p)
            if data.obs_mask is not None:
                # the exact update of the output groups assumes one design shared by
                # the rows of [C D]; with missing outputs every row has its own, and
                # the thesis updates at the current q(theta) (each raises the bound)
                # stand in for them
                hyper = fixed_point_hyper_update(q, self._hyper(), False, outputs, noise)
                (self.alpha_, self.beta_c_, self.gamma_, self.delta_c_,
                 self.noise_prior_shape_, self.noise_prior_rate_) = hyper
                outputs = noise = False
            (self.alpha_, self.beta_c_, self.gamma_, self.delta_c_, self.noise_prior_shape_,
             self.noise_prior_rate_) = exact_hyper_update(
                data, self._stats, self._hyper(), done >= sched[0] and self._ard_on,
                outputs, noise)
            if done >= sched[2] and self.init_state_cov != "fixed":
                self._update_init_state()
            # the updates are optima of the bound with q(theta) optimised jointly: with
            # the stale q(theta) the bound could fall, so this step ends with the VBM
            # step (which the next step then need not repeat)
            self._vbm(data, self._stats)
            self._vbm_done = True
            return
        (self.alpha_, self.beta_c_, self.gamma_, self.delta_c_, self.noise_prior_shape_,
         self.noise_prior_rate_) = fixed_point_hyper_update(
            q, self._hyper(), self._ard_on and done >= sched[0],
            self._ard_on and done >= sched[1], done >= sched[2] and noise_prior_learned(p))
        if done >= sched[2] and self.init_state_cov != "fixed":
            self._update_init_state()

    def _update_init_state(self):
        """The optimal initial-state prior (mu0, Sigma0) of the chosen form for the
        current q(x_0) (eq. 5.139 and its constrained forms)."""
        self.init_state_mean_, self.init_state_cov_ = init_state_prior(
            self._q_x.omega0, self._q_x.ups0, self.init_state_cov)

    # ================================================================ the loop
    def _run_vbem(self, data):
        return run_with_ard_check(self, data)

    def _watch_trace(self, iteration, trace, restarted):
        """``stop`` callback of :meth:`_iterate`: keeps the trace for :meth:`_can_stop`."""
        self._stop_trace = trace
        floor = getattr(self, "_abandon_below", None)
        if (floor is not None and not restarted and self._can_stop_schedule(iteration)
                and trace[-1] + predicted_remaining_gain(trace) < floor):
            return False  # stop, not converged
        return None

    def _can_stop(self, iteration):
        """Convergence needs the schedule to have started every group and, for VBEM,
        the gain still to come predicted from the geometric decay of the last
        increments (``base.predicted_remaining_gain``) below ``tol``: a bound creeping
        up by small but barely shrinking increments has not converged."""
        if self.method != "vb":
            return True
        if not self._can_stop_schedule(iteration):
            return False
        return predicted_remaining_gain(getattr(self, "_stop_trace", [])) < self.tol

    def _can_stop_schedule(self, iteration):
        """Whether the schedule has started every hyperparameter group by ``iteration``."""
        sched = self.hyperparameter_schedule
        return sched is None or iteration - 1 > max(sched)

    # ================================================================ bound
    def _lower_bound(self, data):
        """F of the stored state.  For a point fit (``method="ml"/"map"``), the EM
        objective of the point of the last E step (with ``bound_check="steps"`` the M
        step is therefore not checked on its own).  Otherwise F for the stored (q(x),
        q(theta), hyperparameters), any q(x): the expected complete-data
        log-likelihood plus the entropy of q(x) minus the KL terms of q(theta)
        (thesis Section 5.3.7 gives the form right after a VBE step).

        The moves evaluate F before and after themselves, and an iteration ends with
        it: the value of an unchanged state is reused.  The state is identified by
        the q(x), q(theta) and statistics objects (never changed in place; the memo
        holds them, so their identities cannot be reused) and the hyperparameters'
        values."""
        if self._point_fitted:
            return self._point_value
        key = (data, self._q_x, self._q_theta, self._stats)
        values = (self.alpha_, self.beta_c_, self.gamma_, self.delta_c_,
                  self.init_state_mean_, self.init_state_cov_,
                  self.noise_prior_shape_, self.noise_prior_rate_)
        memo = getattr(self, "_bound_memo", None)
        if memo is not None and all(a is b for a, b in zip(memo.state, key)) and all(
                np.array_equal(a, b) for a, b in zip(memo.hyperparameters, values)):
            return memo.value
        value = lower_bound(data, self._q_theta, self._stats, self._q_x,
                            self.init_state_mean_, self.init_state_cov_,
                            kl_terms(self._q_theta, *self._hyper()))
        self._bound_memo = BoundMemo(key, tuple(np.copy(v) for v in values), value)
        return value

    # ================================================================ state
    def _get_state(self):
        state = super()._get_state()
        for name in ("_q_x", "_q_theta", "_stats", "_history", "_point_loglik",
                     "_point_value"):
            state[name] = copy.deepcopy(getattr(self, name))
        return state

    def fit(self, X, y=None, *, U=None, lengths=None, sequence_ids=None):
        """Fit by VBEM.

        Parameters
        ----------
        X : array of shape (n_samples, n_outputs)
            Observations; rows of all sequences concatenated in time order.
        y : ignored
        U : array of shape (n_samples, n_inputs), optional
            Inputs aligned with the rows of X (``u_t`` drives ``x_t`` and ``y_t``).
        lengths : array of int, optional
            Lengths of the sequences (hmmlearn convention).
        sequence_ids : array of shape (n_samples,), optional
            One sequence label per row, an alternative to ``lengths`` that survives
            sklearn's cross-validation splitters.
        """
        check_unused_y(y, X, "fit")
        continuing = self.warm_start and hasattr(self, "lower_bound_")
        if continuing:
            self._warm_data_changed = True
        # the ARD check runs inside every restart (``_run_vbem``, ``_ard_check``); not
        # when continuing
        self._check_ard = (self.ard and self.ard_check and not continuing
                           and self.method == "vb")
        try:
            super().fit(X, U=U, lengths=lengths, sequence_ids=sequence_ids)
        finally:
            self._ard_held = False
            self.__dict__.pop("_abandon_below", None)
        self.__dict__.pop("_bound_memo", None)  # holds the training data
        self._fitted_from_sequence_ids = fitted_from_sequence_ids(sequence_ids)
        return self

    def _active_state_mask(self):
        """The ``ard_threshold`` rule of ``active_states_`` for the stored state."""
        return active_state_mask(self.alpha_, self.gamma_, self._stats, self.ard_threshold)

    def _run_stage(self, data, n_iter):
        self._stop_trace = []
        self._vbm_done = False
        return self._iterate(data, range(1, n_iter + 1), self._watch_trace)

    def _finalize(self, data):
        q = self._q_theta
        k = self.n_states_
        d = data.U.shape[1]
        p = data.X.shape[1]
        sc, oc = self.state_inputs_, self.output_inputs_
        self.A_mean_ = q.M_AB[:, :k].copy()
        self.B_mean_ = np.zeros((k, d))
        self.B_mean_[:, sc] = q.M_AB[:, k:]
        self.C_mean_ = q.M_CD[:, :k].copy()
        self.D_mean_ = np.zeros((p, d))
        self.D_mean_[:, oc] = q.M_CD[:, k:]
        point = self._point_fitted
        if point:
            for name in ("Sigma_AB_", "Sigma_CD_", "rho_shape_", "rho_rate_"):
                self.__dict__.pop(name, None)
        else:
            self.Sigma_AB_ = q.Sigma_AB.copy()
            self.Sigma_CD_ = q.Sigma_CD.copy()
            # one shape per output when outputs are missing (each counts its own steps)
            self.rho_shape_ = (float(q.rho_shape) if np.ndim(q.rho_shape) == 0
                               else np.array(q.rho_shape, dtype=float))
            self.rho_rate_ = q.rho_rate.copy()
        self.noise_precision_mean_ = q.rho.copy()
        self.beta_ = np.full(d, np.inf)
        self.beta_[sc] = self.beta_c_
        self.delta_ = np.full(d, np.inf)
        self.delta_[oc] = self.delta_c_
        self.hyperparameter_history_ = {} if point else self._history.as_arrays()
        self.active_states_ = np.ones(k, dtype=bool) if point else self._active_state_mask()
        self.n_effective_states_ = int(np.sum(self.active_states_))
        self.n_features_in_ = p
        if point:
            self.log_likelihood_ = self._point_loglik
            self.objective_ = self.lower_bound_
            self.objectives_ = self.lower_bounds_

    # ================================================================ posterior summaries
    def posterior_std(self):
        """Posterior standard deviations of (A, B, C, D), shaped like the means.

        Rows of [A B] have covariance ``Sigma_AB_``; row s of [C D] has the Student-t
        marginal covariance ``E[1/rho_s] Sigma_CD_`` (needs ``rho_shape_ > 1``).
        Structurally absent input columns have standard deviation 0.
        """
        self._check_is_fitted()
        return posterior_std(self)

    def significant_inputs(self, n_sd=3.0):
        """Boolean masks of the entries of B and D whose posterior mean is more than
        ``n_sd`` posterior standard deviations from zero (the criterion of thesis
        Section 5.5.2)."""
        sd = self.posterior_std()
        with np.errstate(divide="ignore", invalid="ignore"):
            sig_B = np.abs(self.B_mean_) > n_sd * sd["B"]
            sig_D = np.abs(self.D_mean_) > n_sd * sd["D"]
        sig_B[:, np.setdiff1d(np.arange(self.n_inputs_), self.state_inputs_)] = False
        sig_D[:, np.setdiff1d(np.arange(self.n_inputs_), self.output_inputs_)] = False
        return {"B": sig_B, "D": sig_D}

    # ================================================================ inference
    def _check_new_data(self, X, U=None, lengths=None, sequence_ids=None):
        self._check_is_fitted()
        X, Uall, starts, ends = self._prepare(X, U, lengths, sequence_ids, reset=False)
        Us = np.ascontiguousarray(Uall[:, self.state_inputs_])
        Uo = np.ascontiguousarray(Uall[:, self.output_inputs_])
        return _Sequences(X, Uall, Us, Uo, starts, ends)

    def _infer(self, data, *, point, smooth):
        return self._smooth(data.X, data.Us, data.Uo, data.starts, data.ends, smooth=smooth,
                            point=point)

    @property
    def _n_features_out(self):
        """The number of state dimensions of :meth:`transform` (names from ``get_feature_names_out``)."""
        return int(self.n_states_)

    def transform(self, X, *, U=None, lengths=None, sequence_ids=None):
        """Smoothed state means ``E_q[x_t]`` (VBE step with q(theta) fixed)."""
        data = self._check_new_data(X, U, lengths, sequence_ids)
        return self._infer(data, point=False, smooth=True).omega

    def state_posterior(self, X, *, U=None, lengths=None, sequence_ids=None):
        """Filtered and smoothed beliefs about the hidden state of every row: the
        variational Kalman filter and RTS smoother (Beal 2003, Sections 5.3.3-5.3.5)
        with q(theta) fixed, as in :meth:`transform`, whose output is
        ``smoothed_mean``.

        Returns a ``StatePosterior``: the means and
        covariances of ``x_t`` given the rows up to t of its sequence and given the
        whole sequence, and the sequences' row offsets ``starts``, ``ends``.
        """
        data = self._check_new_data(X, U, lengths, sequence_ids)
        res = self._infer(data, point=False, smooth=True)
        return StatePosterior(res.filt_mean, res.filt_cov, res.omega, res.ups,
                              np.asarray(data.starts), np.asarray(data.ends))

    def fit_transform(self, X, y=None, *, U=None, lengths=None, sequence_ids=None):
        """Fit, then return the smoothed state means of the training data."""
        check_unused_y(y, X, "fit_transform")
        return self.fit(X, U=U, lengths=lengths, sequence_ids=sequence_ids).transform(
            X, U=U, lengths=lengths, sequence_ids=sequence_ids)

    def score_samples(self, X, y=None, *, U=None, lengths=None, sequence_ids=None):
        """One-step-ahead predictive log density ``ln p(y_t | y_{1:t-1}, theta_mean)``
        of every row under the posterior-mean parameters (exact Kalman filter)."""
        check_unused_y(y, X, "score_samples")
        data = self._check_new_data(X, U, lengths, sequence_ids)
        return self._infer(data, point=True, smooth=False).log_terms

    def score(self, X, y=None, *, U=None, lengths=None, sequence_ids=None):
        """Mean one-step-ahead predictive log-likelihood per time step under the
        posterior-mean parameters.

        A model fitted with ``sequence_ids`` (several sequences) needs ``lengths`` or
        ``sequence_ids`` here too (cross-validation: enable metadata routing)."""
        check_unused_y(y, X, "score")
        check_sequences_routed(self, lengths, sequence_ids)
        return float(np.mean(self.score_samples(
            X, U=U, lengths=lengths, sequence_ids=sequence_ids)))

    def score_sequences(self, X, *, U=None, lengths=None, sequence_ids=None, method="mean"):
        """Per-sequence log scores: ``"mean"`` exact ln p(y | theta_mean);
        ``"bound"`` the VB log normaliser ln Z' with q(theta) fixed (a lower bound
        on ln E_q[p(y | theta)], and never above ``"mean"``)."""
        if method not in ("mean", "bound"):
            raise ValueError(f"method must be 'mean' or 'bound'; got {method!r}.")
        data = self._check_new_data(X, U, lengths, sequence_ids)
        return self._infer(data, point=method == "mean", smooth=False).ln_z

    def predict(self, X, *, U=None, lengths=None, sequence_ids=None, return_cov=False):
        """One-step-ahead predictions ``E[y_t | y_{1:t-1}]`` under the posterior-mean
        parameters (causal: row t uses rows before t of its sequence only).

        With ``return_cov`` also the predictive covariances ``C P_t C' + diag(1/rho)``.
        """
        data = self._check_new_data(X, U, lengths, sequence_ids)
        res = self._infer(data, point=True, smooth=False)
        C, D = self.C_mean_, self.D_mean_
        mean = res.pred_mean @ C.T + data.U @ D.T
        if not return_cov:
            return mean
        cov = np.einsum("sj,tjl,rl->tsr", C, res.pred_cov, C)
        cov += np.diag(1.0 / self.noise_precision_mean_)
        return mean, cov

    def forecast(self, n_steps, X=None, *, U=None, U_future=None, method="vb"):
        """Forecast ``n_steps`` outputs after the history ``X`` (one sequence; None
        forecasts from the initial-state prior).

        ``method="vb"`` runs the VB filter with the future observations missing and
        returns the predictive mean and covariance under ``q(theta)``;
        ``"plugin"`` uses the posterior-mean parameters as if they were known.
        Returns ``(mean (n_steps, p), cov (n_steps, p, p))``.
        """
        self._check_is_fitted()
        return forecast(self, n_steps, X, U, U_future, method)

    def sample(self, n_samples=1, *, U=None, random_state=None):
        """Draw one sequence of ``n_samples`` steps from the posterior-mean model.

        Returns ``(Y, states)`` of shapes (n_samples, p) and (n_samples, k).
        """
        self._check_is_fitted()
        return sample(self, n_samples, U,
                      random_state if random_state is not None else self.random_state)

    # ================================================================ bic / aic
    def _log_likelihood(self, data):
        return float(np.sum(self._infer(data, point=True, smooth=False).log_terms))

    def _n_observations(self, data):
        return data.X.shape[0]

    def _n_parameters(self):
        k, p = self.n_states_, self.n_features_in_
        ds, do = len(self.state_inputs_), len(self.output_inputs_)
        return k * k + k * ds + p * k + p * do + p - k * (k - 1) // 2

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.allow_nan = True
        return tags
