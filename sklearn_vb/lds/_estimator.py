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
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import digamma, polygamma
from sklearn.base import TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.distributions import gamma_expected_log, gamma_kl
from .._core.kernels.constants import LOG_2PI
from .._core.kernels.linalg import spd_inverse
from .inference import hidden_statistics, smooth_states
from .kalman import simulate_lds
from ._hyper import (
    dynamics_evidence,
    optimal_init_state,
    output_evidence,
    update_dynamics_precisions,
    update_output_hyperparameters,
)
from ._moves import (
    RotationObjective,
    TranslationObjective,
    optimise_rotation,
    optimise_translation,
    rotate_hidden_posterior,
    translate_hidden_posterior,
)
from ._point import log_prior_density, point_m_step
from .._core.validation import (
    MISSING_IN_SEQUENCES,
    check_sequences,
    check_sequences_routed,
    fitted_from_sequence_ids,
    sequence_bounds,
    validate_float_data,
)
from .._core.base import VBEMEstimator, bound_round_off, predicted_remaining_gain

__all__ = ["VBLinearDynamicalSystem"]

_HYPER_CAP = 1e12
_SHAPE_CAP = 1e8
_SIGMA0_FLOOR = 1e-6
# the exact update drives the Gamma shape to its cap when the noise levels are tied;
# beyond ~1e6 the bound's ln G(a) terms lose ~1e-7 nats to round-off, while the
# bound lost against an infinite shape is only about p T / (4 a) nats
_EXACT_SHAPE_CAP = 1e6
# the exact ARD update sets a switched-off column's precision to this cap at once (its
# optimum is infinite); 1e8 leaves the row covariances well conditioned and loses
# only about (data information) / 1e8 nats per column against infinity
_EXACT_PRECISION_CAP = 1e8


def _default_n_states(n_outputs):
    """The state dimension of ``n_states=None``: the number of outputs (the
    toolbox's default), but at least 4, so that few outputs still get an oscillating
    pair of states (a cycle needs two; a one-dimensional state cannot oscillate) and
    room for ARD to switch the unneeded ones off."""
    return max(int(n_outputs), 4)


def _spd_inv_logdet(M):
    """Inverse and log-determinant of a symmetric positive definite matrix."""
    if M.shape[0] == 0:
        return np.zeros((0, 0)), 0.0
    # the numba routine avoids LAPACK thread start-up costs on these tiny matrices
    return spd_inverse(np.ascontiguousarray(M, dtype=np.float64))


def _covariance_root(S):
    """``(L', L^-1)`` with ``L L' = S`` for a covariance S (symmetric, positive
    semi-definite): ``L = V diag(sqrt(w))`` from its eigendecomposition, with the
    inverse taken on the positive eigenvalues only (a cross-covariance with a
    null direction of S vanishes in that direction)."""
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    root = np.sqrt(np.maximum(w, 0.0))
    inv = np.divide(1.0, root, out=np.zeros_like(root), where=root > 0.0)
    return root[:, None] * V.T, inv[:, None] * V.T


#: Above this condition number of ``Z'Z + diag(prior)`` a regression row is solved by QR
#: instead of the normal equations, which then lose more than 8 of 16 digits.
_NORMAL_EQUATIONS_MAX_CONDITION = 1e8


def _ridge_regression(designs, targets, prior):
    """Posterior of Gaussian regression rows: ``Sigma = (Z'Z + diag(prior))^-1``,
    ``M = (Sigma Z'Y)'`` and ``ln|Sigma^-1|``, for Z and Y the row blocks of
    ``designs`` and ``targets`` stacked.

    Well-conditioned problems (the usual case) use the normal equations, whose cost
    does not grow with the number of targets beyond one product ``Z'Y``.  Otherwise the
    rows are solved from a QR factorisation ``QR`` of the augmented design ``[Z;
    diag(sqrt(prior))]`` as ``R^-1 Q' [Y; 0]``: with explosive or strongly persistent dynamics the hidden
    states are nearly collinear and ``Z'Z`` can have a condition number near ``1e13``,
    for which the normal equations lose almost all digits of the coefficients along
    its small directions (and VBM steps then lower the bound by many nats); the QR
    form loses only about the square root of it (Golub and Van Loan 2013, Section 5.3).
    """
    d = prior.shape[0]
    Z = np.vstack(designs)
    Y = np.vstack(targets)
    precision = Z.T @ Z + np.diag(prior)
    eig = np.linalg.eigvalsh(precision) if np.all(np.isfinite(precision)) else [0.0]
    if eig[0] > 0.0 and eig[-1] < _NORMAL_EQUATIONS_MAX_CONDITION * eig[0]:
        Sigma, logdet = _spd_inv_logdet(precision)
        return (Sigma @ (Z.T @ Y)).T, Sigma, float(logdet)
    # QR of the design alone: the coefficient block of the augmented factorisation is
    # Q' [Y; 0], one product as in the normal equations, instead of a factorisation
    # whose cost grows with the square of the number of targets
    q_factor, r11 = np.linalg.qr(np.vstack([Z, np.diag(np.sqrt(prior))]), mode="reduced")
    diag = np.abs(np.diag(r11))
    if not np.all(diag > 0.0) or not np.all(np.isfinite(r11)):
        raise np.linalg.LinAlgError("the posterior precision of a regression row is singular")
    r11_inv = solve_triangular(r11, np.eye(d))
    coef = r11_inv @ (q_factor[: Z.shape[0]].T @ Y)  # (d, n_targets)
    Sigma = r11_inv @ r11_inv.T
    return coef.T, 0.5 * (Sigma + Sigma.T), float(2.0 * np.sum(np.log(diag)))


def _gamma_hyper_update(mean_rho, mean_log_rho, a_start):
    """Maximise sum_s <ln Ga(rho_s | a, b)> over (a, b) (eq. 5.138, Appendix C.2):
    Newton steps in ln a on psi(a) - ln a = mean <ln rho> - ln mean <rho>, then
    b = a / mean <rho>."""
    d_bar = float(np.mean(mean_rho))
    c_bar = float(np.mean(mean_log_rho))
    target = c_bar - np.log(d_bar)  # < 0 by Jensen
    a = float(min(max(a_start, 1e-3), _SHAPE_CAP))
    for _ in range(100):
        f = digamma(a) - np.log(a) - target
        fp = a * polygamma(1, a) - 1.0  # derivative w.r.t. ln a, > 0
        step = -f / fp
        step = float(np.clip(step, -5.0, 5.0))
        a_new = min(a * np.exp(step), _SHAPE_CAP)
        # psi(a) - ln a loses ~1e-16 ln(a) to cancellation: 1e-10 is the attainable
        # relative accuracy for large a
        if abs(step) <= 1e-10 or a_new >= _SHAPE_CAP:
            a = a_new
            break
        a = a_new
    return a, a / d_bar


def _output_scale(X):
    """The mean variance of the output columns (the mean square of the values for
    constant outputs, 1 for all-zero outputs): the default rate of the noise-precision
    prior.  Every other prior of the model is scale-free (the rows of C and D are
    scaled by the noise precision, the states have unit innovation variance), so a
    rate proportional to the outputs' squared scale makes ``X * c`` give the same fit
    with C, D scaled by c and the noise precisions by 1 / c^2."""
    scale = float(np.mean(X.var(axis=0)))
    if not scale > 0:
        scale = float(np.mean(X**2))
    return scale if scale > 0 else 1.0


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
    ``U_o'Y`` and the per-output sums of squares ``sum_t y_ts^2``."""

    UUs: np.ndarray = field(init=False)
    UUo: np.ndarray = field(init=False)
    UY: np.ndarray = field(init=False)
    YY: np.ndarray = field(init=False)

    def __post_init__(self):
        self.UUs = self.Us.T @ self.Us
        self.UUo = self.Uo.T @ self.Uo
        self.UY = self.Uo.T @ self.X
        self.YY = np.einsum("ts,ts->s", self.X, self.X)


class VBLinearDynamicalSystem(TransformerMixin, VBEMEstimator):
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
        restarts differ), ``"random"`` the toolbox's N(0, I) draws.  From random
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
        almost nothing.  See ``_step_prune`` for when moves are proposed.  Removed
        dimensions are deleted from the fitted model: ``n_states_`` and every
        state-sized array shrink, ``kept_states_`` maps them to the original labels.
        The iterations spent re-converging are not counted in ``n_iter_`` and
        ``lower_bounds_`` records one bound per iteration, after any accepted move
        (a rejected move leaves no trace), so it never decreases.
    prune_interval : int, default=50
        Iterations between removal proposals (doubling after repeated rejections);
        the first comes ``prune_interval`` iterations after the hyperparameter
        schedule has started every group.
    prune_iter : int, default=20
        VBEM iterations that re-converge the model after a proposed removal.
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
        rows of [C D] have covariance ``Sigma_CD_ / rho_s``.
    rho_shape_, rho_rate_ : Gamma posterior of the noise precisions.
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
    def _inputs(self, X, U, n_user_inputs):
        """Validated full input matrix (user inputs then intercept), shape (N, d)."""
        N = X.shape[0]
        if U is None:
            if n_user_inputs:
                raise ValueError(
                    f"U is required: the model was fitted with {n_user_inputs} input(s)."
                )
            U = np.zeros((N, 0))
        else:
            try:
                U = np.asarray(U, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"U must be numeric; {exc}") from None
            if U.ndim == 1:
                raise ValueError(
                    f"U must be 2-D of shape (n_samples, n_inputs); got shape {U.shape}. "
                    "Reshape a single input with U.reshape(-1, 1)."
                )
            if U.ndim != 2 or U.shape[0] != N:
                raise ValueError(
                    f"U must have one row per row of X ({N}); got shape {U.shape}."
                )
            if not np.all(np.isfinite(U)):
                raise ValueError("U contains NaN or infinity; inputs must be finite "
                                 "(the model has no missing-value support for U).")
            if n_user_inputs is not None and U.shape[1] != n_user_inputs:
                raise ValueError(
                    f"U has {U.shape[1]} column(s), but the model was fitted with "
                    f"{n_user_inputs} input(s)."
                )
        if self.fit_intercept:
            U = np.hstack([U, np.ones((N, 1))])
        return np.ascontiguousarray(U)

    def _input_masks(self, n_user):
        def mask(value, name):
            if isinstance(value, (bool, np.bool_)):
                m = np.full(n_user, bool(value))
            else:
                m = np.asarray(value)
                if m.dtype != bool or m.shape != (n_user,):
                    raise ValueError(
                        f"{name} must be a bool or a boolean array with one entry per "
                        f"input column ({n_user}); got {value!r}."
                    )
            if self.fit_intercept:
                m = np.append(m, True)
            return np.flatnonzero(m)

        return mask(self.input_to_state, "input_to_state"), mask(
            self.input_to_output, "input_to_output"
        )

    def _prepare(self, X, U, lengths, sequence_ids, reset):
        X = validate_float_data(self, X, reset=reset, missing=MISSING_IN_SEQUENCES, ensure_min_samples=1)
        lens = check_sequences(X.shape[0], lengths, sequence_ids)
        starts, ends = sequence_bounds(lens)
        n_user = None if reset else self.n_user_inputs_
        Uall = self._inputs(X, U, n_user)
        return X, Uall, starts, ends

    def _check_fit_data(self, X, U=None, lengths=None, sequence_ids=None):
        X, Uall, starts, ends = self._prepare(X, U, lengths, sequence_ids, reset=True)
        n_user = Uall.shape[1] - int(self.fit_intercept)
        sched = self.hyperparameter_schedule
        if sched is not None:
            if len(sched) != 3 or not all(
                isinstance(s, Integral) and not isinstance(s, bool) and s >= 0 for s in sched
            ):
                raise ValueError(
                    "hyperparameter_schedule must be None or three non-negative ints "
                    f"(alpha/beta, gamma/delta, the rest); got {sched!r}."
                )
        state_cols, out_cols = self._input_masks(n_user)
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
        N, p = X.shape
        k = self.n_states if self.n_states is not None else _default_n_states(p)
        n_seq = data.starts.shape[0]
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
        self.noise_prior_rate_ = (_output_scale(X) if self.noise_rate is None
                                  else float(self.noise_rate))
        self.init_state_mean_ = np.zeros(k)
        self.init_state_cov_ = np.eye(k)
        omega = random_state.standard_normal((N, k))
        omega0 = random_state.standard_normal((n_seq, k))
        ups_scale = 1.0
        if self.init_params in ("pca", "scaled-pca"):
            # unit-variance principal-component scores of the outputs plus a little
            # noise (so restarts differ); extra dimensions beyond the rank stay random
            Xc = X - X.mean(axis=0)
            left, sv, _ = np.linalg.svd(Xc, full_matrices=False)
            r = min(k, int(np.sum(sv > 1e-10 * max(sv[0], 1e-300))) if sv.size else 0)
            omega *= 0.1
            omega[:, :r] += np.sqrt(N) * left[:, :r]
            ups_scale = 0.1
            # "scaled-pca": with Q = I the state scale is fixed by the dynamics: a persistent
            # dimension (|a| near 1) has variance 1 / (1 - a^2), not 1.  Unit-variance
            # scores start every persistent dimension too small (and its C column too
            # large), and VBEM then spends hundreds of iterations growing the scale.
            # Rescale each score so that its one-step regression on the previous
            # scores and the state inputs leaves unit innovation variance.
            if self.init_params == "scaled-pca":
                scale = self._innovation_scale(omega, data.Us, data.starts)
                omega *= scale
                ups_scale = ups_scale * np.outer(scale, scale)
        # hidden-state statistics to start from, as Algorithm 5.3 step 1 (successive
        # states uncorrelated)
        self._q_x = {
            "omega": omega,
            "ups": np.broadcast_to(ups_scale * np.eye(k), (N, k, k)).copy(),
            "cross": np.zeros((N, k, k)),
            "omega0": omega0,
            "ups0": np.broadcast_to(np.eye(k), (n_seq, k, k)).copy(),
            "entropy": np.zeros(n_seq),
            "ln_z": np.zeros(n_seq),
        }
        self._stats = self._hidden_stats(data, self._q_x)
        self._q_theta = None
        self._point_loglik = self._point_value = -np.inf
        self._history = {"alpha": [], "beta": [], "gamma": [], "delta": []}

    @staticmethod
    def _innovation_scale(omega, Us, starts):
        """Per-dimension factors ``1 / sd(e_j)`` where ``e`` are the residuals of the
        least-squares regression of ``omega_t`` on ``[omega_{t-1}, u_t]`` (within
        sequences), floored so a factor never exceeds 10."""
        N = omega.shape[0]
        keep = np.ones(N, dtype=bool)
        keep[starts] = False
        if np.count_nonzero(keep) <= omega.shape[1] + Us.shape[1]:
            return np.ones(omega.shape[1])
        prev = np.zeros_like(omega)
        prev[1:] = omega[:-1]
        Z = np.hstack([prev, Us])[keep]
        coef, *_ = np.linalg.lstsq(Z, omega[keep], rcond=None)
        resid = omega[keep] - Z @ coef
        var = np.mean(resid**2, axis=0)
        return 1.0 / np.sqrt(np.maximum(var, 1e-2))

    # ================================================================ VBM
    @staticmethod
    def _hidden_stats(data, q_x):
        """Expected hidden-state statistics of ``q_x`` on ``data``."""
        return hidden_statistics(q_x["omega"], q_x["ups"], q_x["cross"], q_x["omega0"],
                                 q_x["ups0"], data.starts, data.ends, data.X, data.Us, data.Uo)

    def _vbm(self, data, stats):
        """Optimal q(A, B) and q(C, D, rho) given the hidden statistics (thesis
        Section 5.3.1), with each row of [A B] and of [C D] solved jointly."""
        k = self.n_states_
        p = data.X.shape[1]
        ds = data.Us.shape[1]
        do = data.Uo.shape[1]
        # q(A, B): rows [a_j; b_j] ~ N(Sigma_AB r_j, Sigma_AB) with
        # Sigma_AB = (W_z + diag(prior))^-1, r_j the j-th column of [S_A; M]: the
        # expected regression of x_t on z_t = [x_{t-1}; u_t], solved as least squares
        ups_root, ups_root_inv = _covariance_root(stats.ups_prev_sum)
        prior_ab = np.concatenate([self.alpha_, self.beta_c_])
        M_AB, Sigma_AB, logdet_Sigma_AB_inv = _ridge_regression(
            [np.hstack([stats.prev, data.Us]),
             np.hstack([ups_root, np.zeros((k, ds))])],
            [self._q_x["omega"], ups_root_inv @ stats.cross_sum], prior_ab)
        E_AB = M_AB.T @ M_AB + k * Sigma_AB
        # q(C, D, rho): the expected regression of y_t on w_t = [x_t; u_t]
        prior_cd = np.concatenate([self.gamma_, self.delta_c_])
        ups_root, _ = _covariance_root(stats.ups_sum)
        M_CD, Sigma_CD, logdet_Sigma_CD_inv = _ridge_regression(
            [np.hstack([self._q_x["omega"], data.Uo]),
             np.hstack([ups_root, np.zeros((k, do))])],
            [data.X, np.zeros((k, p))], prior_cd)  # M_CD: p x (k + do)
        # g_s = Ydd_ss - r_s' Sigma r_s, written as a sum of non-negative terms
        C_bar, D_bar = M_CD[:, :k], M_CD[:, k:]
        resid = data.X - self._q_x["omega"] @ C_bar.T - data.Uo @ D_bar.T
        g = (
            np.einsum("ts,ts->s", resid, resid)
            + np.einsum("sj,jl,sl->s", C_bar, stats.ups_sum, C_bar)
            + (M_CD**2) @ prior_cd
        )
        g = np.maximum(g, 1e-300)
        shape = self.noise_prior_shape_ + 0.5 * stats.T
        rate = self.noise_prior_rate_ + 0.5 * g
        rho = shape / rate
        log_rho = gamma_expected_log(shape, rate)
        E_CD = (M_CD.T * rho) @ M_CD + p * Sigma_CD
        self._q_theta = {
            "Sigma_AB": Sigma_AB,
            "logdet_Sigma_AB": -logdet_Sigma_AB_inv,
            "M_AB": M_AB,
            "E_AB": E_AB,
            "Sigma_CD": Sigma_CD,
            "logdet_Sigma_CD": -logdet_Sigma_CD_inv,
            "M_CD": M_CD,
            "E_CD": E_CD,
            "rho_shape": shape,
            "rho_rate": rate,
            "rho": rho,
            "log_rho": log_rho,
            "k": k,
            "ds": ds,
            "do": do,
        }

    # ================================================================ VBE
    def _smooth(self, X, Us, Uo, starts, ends, *, smooth, point=False, observed=None):
        """The variational (or, with ``point=True``, the posterior-mean) Kalman filter
        and smoother of q(theta) on all sequences."""
        q = self._q_theta
        moments = {} if point else {"Sigma_AB": q["Sigma_AB"], "Sigma_CD": q["Sigma_CD"],
                                    "log_rho": q["log_rho"]}
        return smooth_states(X, Us, Uo, starts, ends, q["M_AB"], q["M_CD"], q["rho"],
                             self.init_state_mean_, self.init_state_cov_, smooth=smooth,
                             observed=observed, **moments)

    # ================================================================ steps
    def _iteration_steps(self):
        if self.method != "vb":
            return ("m", "e")
        steps = ("rotate", "translate", "hyper", "vbm", "vbe")
        if self.prune_states and self._ard_on:
            return steps + ("prune",)
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
        return q is not None and bool(q.get("point", False))

    def _point_priors(self):
        return (np.concatenate([self.alpha_, self.beta_c_]),
                np.concatenate([self.gamma_, self.delta_c_]))

    def _step_m(self, data, iteration):
        s = self._stats
        W_z = np.block([[s.W_A, s.G_A], [s.G_A.T, data.UUs]])
        R_AB = np.vstack([s.S_A, s.M])
        W_w = np.block([[s.W_C, s.G_C], [s.G_C.T, data.UUo]])
        R_CD = np.vstack([s.S_C, data.UY])
        prior_ab, prior_cd = self._point_priors()
        M_AB, M_CD, rho = point_m_step(W_z, R_AB, W_w, R_CD, data.YY, s.T, prior_ab,
                                       prior_cd, self.noise_prior_shape_,
                                       self.noise_prior_rate_, self.method)
        n_ab, n_cd = M_AB.shape[1], M_CD.shape[1]
        # a q(theta) with no spread: the VBE kernel is then the exact smoother
        self._q_theta = {
            "point": True, "M_AB": M_AB, "M_CD": M_CD, "rho": rho, "log_rho": np.log(rho),
            "Sigma_AB": np.zeros((n_ab, n_ab)), "Sigma_CD": np.zeros((n_cd, n_cd)),
            "k": self.n_states_, "ds": data.Us.shape[1], "do": data.Uo.shape[1],
        }

    def _point_objective(self, loglik):
        if self.method == "ml":
            return loglik
        q = self._q_theta
        prior_ab, prior_cd = self._point_priors()
        log_prior = log_prior_density(q["M_AB"][None], q["M_CD"][None], q["rho"][None],
                                      prior_ab, prior_cd, self.noise_prior_shape_,
                                      self.noise_prior_rate_)[0]
        # the M step maximises in ln rho: its Jacobian sum ln rho is part of the objective
        return loglik + float(log_prior) + float(np.sum(q["log_rho"]))

    def _step_e(self, data, iteration):
        res = self._smooth(data.X, data.Us, data.Uo, data.starts, data.ends, smooth=True,
                           point=True)
        self._q_x = {key: getattr(res, key) for key in
                     ("omega", "ups", "cross", "omega0", "ups0", "entropy", "ln_z")}
        self._stats = self._hidden_stats(data, self._q_x)
        self._point_loglik = float(np.sum(res.log_terms))
        self._point_value = self._point_objective(self._point_loglik)

    def _step_vbe(self, data, iteration):
        self._vbe(data)
        if self._init_state_jump_due(iteration):
            # the joint optimum of the initial-state prior and q(x): the plain update
            # (in the hyperparameter step) moves it only like 1/n towards it
            mu0, cov, gain = optimal_init_state(
                self._q_x["omega0"], self._q_x["ups0"], self.init_state_mean_,
                self.init_state_cov_, self.init_state_cov, _SIGMA0_FLOOR)
            if gain > self.tol:  # worth a second smoother run
                self.init_state_mean_, self.init_state_cov_ = mu0, cov
                self._vbe(data)
        kept = self.kept_states_
        for name, value in (("alpha", self.alpha_), ("gamma", self.gamma_)):
            # per-iteration values in the original state labels (pruned: NaN)
            full = np.full(self._k_max, np.nan)
            full[kept] = value
            self._history[name].append(full)
        for name, value in (("beta", self.beta_c_), ("delta", self.delta_c_)):
            self._history[name].append(value.copy())

    def _init_state_jump_due(self, iteration):
        sched = self.hyperparameter_schedule
        return (self.hyperparameter_update == "exact" and sched is not None
                and self.init_state_cov != "fixed" and iteration - 1 >= sched[2])

    def _vbe(self, data):
        self._vbm_done = False  # q(theta) is no longer optimal for the new q(x)
        res = self._smooth(data.X, data.Us, data.Uo, data.starts, data.ends, smooth=True)
        self._q_x = {key: getattr(res, key) for key in
                     ("omega", "ups", "cross", "omega0", "ups0", "entropy", "ln_z")}
        self._ln_z_sigma0 = (self.init_state_mean_.copy(), self.init_state_cov_.copy())
        self._stats = self._hidden_stats(data, self._q_x)
        self._record_terms()

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
        k = self.n_states_
        p = data.X.shape[1]
        if self.hyperparameter_update == "exact":
            # with one output the joint optimum of (a, b) is always the shape cap (a
            # prior fitted to a single precision collapses onto it), and the fits
            # then crawl; the fixed-point update moves there only gradually
            joint_noise = p > 1
            self._exact_hyper_update(data, done >= sched[0] and self._ard_on,
                                     done >= sched[1] and self._ard_on,
                                     done >= sched[2] and joint_noise)
            if done >= sched[2] and not joint_noise:
                a, b = _gamma_hyper_update(q["rho"], q["log_rho"], self.noise_prior_shape_)
                self.noise_prior_shape_, self.noise_prior_rate_ = a, b
            if done >= sched[2] and self.init_state_cov != "fixed":
                self._update_init_state()
            # the updates are optima of the bound with q(theta) optimised jointly: with
            # the stale q(theta) the bound could fall, so this step ends with the VBM
            # step (which the next step then need not repeat)
            self._vbm(data, self._stats)
            self._vbm_done = True
            return
        if self._ard_on and done >= sched[0]:
            diag = np.diag(q["E_AB"])
            self.alpha_ = np.minimum(k / diag[:k], _HYPER_CAP)
            self.beta_c_ = np.minimum(k / diag[k:], _HYPER_CAP)
        if self._ard_on and done >= sched[1]:
            diag = np.diag(q["E_CD"])
            self.gamma_ = np.minimum(p / diag[:k], _HYPER_CAP)
            self.delta_c_ = np.minimum(p / diag[k:], _HYPER_CAP)
        if done >= sched[2]:
            a, b = _gamma_hyper_update(q["rho"], q["log_rho"], self.noise_prior_shape_)
            self.noise_prior_shape_, self.noise_prior_rate_ = a, b
            if self.init_state_cov != "fixed":
                self._update_init_state()

    def _exact_hyper_update(self, data, dynamics, outputs, noise):
        """The ARD precisions of the started groups and, with ``noise``, the Gamma
        prior (a, b) of the noise precisions, each set to the exact maximiser of the
        bound with q(theta) optimised jointly for the current q(x)
        (``sklearn_vb.lds._hyper``); each group is kept only if that bound rises."""
        s = self._stats
        k = self.n_states_
        if dynamics:
            W_z = np.block([[s.W_A, s.G_A], [s.G_A.T, data.UUs]])
            R_AB = np.vstack([s.S_A, s.M])
            lam = np.concatenate([self.alpha_, self.beta_c_])
            new = update_dynamics_precisions(W_z, R_AB, lam, np.ones(lam.size, bool),
                                             _EXACT_PRECISION_CAP)
            if dynamics_evidence(W_z, R_AB, new) >= dynamics_evidence(W_z, R_AB, lam):
                self.alpha_, self.beta_c_ = new[:k], new[k:]
        if outputs or noise:
            W_w = np.block([[s.W_C, s.G_C], [s.G_C.T, data.UUo]])
            R_CD = np.vstack([s.S_C, data.UY])
            lam = np.concatenate([self.gamma_, self.delta_c_])
            a, b = self.noise_prior_shape_, self.noise_prior_rate_
            free = np.full(lam.size, bool(outputs))
            new, a_new, b_new = update_output_hyperparameters(
                W_w, R_CD, data.YY, lam, a, b, s.T, free, noise, _EXACT_PRECISION_CAP,
                _EXACT_SHAPE_CAP)
            T = s.T
            if (output_evidence(W_w, R_CD, data.YY, new, a_new, b_new, T)
                    >= output_evidence(W_w, R_CD, data.YY, lam, a, b, T)):
                self.gamma_, self.delta_c_ = new[:k], new[k:]
                self.noise_prior_shape_, self.noise_prior_rate_ = a_new, b_new

    def _update_init_state(self):
        """The optimal initial-state prior (mu0, Sigma0) of the chosen form for the
        current q(x_0) (eq. 5.139 and its constrained forms)."""
        k = self.n_states_
        omega0, ups0 = self._q_x["omega0"], self._q_x["ups0"]
        mu0 = omega0.mean(axis=0)
        dev = omega0 - mu0
        full = ups0.mean(axis=0) + dev.T @ dev / omega0.shape[0]
        full = 0.5 * (full + full.T)
        if self.init_state_cov == "diag":
            cov = np.diag(np.maximum(np.diag(full), _SIGMA0_FLOOR))
        elif self.init_state_cov == "spherical":
            cov = np.eye(k) * max(np.trace(full) / k, _SIGMA0_FLOOR)
        else:
            w, V = np.linalg.eigh(full)
            cov = (V * np.maximum(w, _SIGMA0_FLOOR)) @ V.T
            cov = 0.5 * (cov + cov.T)
        self.init_state_mean_ = mu0
        self.init_state_cov_ = cov

    # ================================================================ rotations
    def _hyper_groups_started(self, iteration):
        """Which hyperparameter groups the schedule optimises from ``iteration``:
        (alpha and beta, gamma and delta, the rest)."""
        sched = self.hyperparameter_schedule
        if sched is None:
            return False, False, False
        done = iteration - 1
        return (self._ard_on and done >= sched[0], self._ard_on and done >= sched[1],
                done >= sched[2])

    def _rotation_objective(self, data, iteration):
        """The bound of the rotated posterior as a function of R (see
        ``sklearn_vb.lds._moves``), with the hyperparameter groups that the
        schedule optimises at this iteration at their optimum."""
        ab, cd, rest = self._hyper_groups_started(iteration)
        init_state = self.init_state_cov if rest and self.init_state_cov != "fixed" \
            else "fixed"
        return RotationObjective(
            self._stats, self._q_theta, data.UUs, self._q_x["omega0"], self._q_x["ups0"],
            data.X.shape[0], data.X.shape[1],
            alpha=None if ab else self.alpha_, beta=None if ab else self.beta_c_,
            gamma=None if cd else self.gamma_, init_state=init_state,
            mu0=self.init_state_mean_, Sigma0=self.init_state_cov_, cap=_HYPER_CAP)

    def _rotate(self, data, iteration, R, objective):
        """Transform the posterior by R: q(x) exactly, the ARD precisions and the
        initial-state prior to their optimum for the transformed posterior (where
        optimised), then q(theta) to its optimum for them (which can only raise the
        bound of the transformed q(theta))."""
        self._q_x = rotate_hidden_posterior(self._q_x, R, data.ends - data.starts)
        self._stats = self._hidden_stats(data, self._q_x)
        self.alpha_, self.beta_c_, self.gamma_ = objective.hyperparameters(R)
        if objective.init_state != "fixed":
            self._update_init_state()
        self._vbm(data, self._stats)

    def _attempt(self, move, data):
        """Run a proposed move and return the bound after it; -inf when the moved
        posterior is numerically degenerate (a matrix that should be positive
        definite is not), so that the caller rejects and restores it."""
        try:
            move()
            return self._explicit_bound(data)
        except (np.linalg.LinAlgError, FloatingPointError):
            return -np.inf

    def _step_rotate(self, data, iteration):
        """Rotation move (Luttinen 2013): maximise the bound over a change of basis
        of the hidden state, accepted only if the bound recomputed after the move
        exceeds the bound before it; a rejected move restores the state exactly."""
        if not self.rotations or self._q_theta is None or getattr(
                self, "_warm_data_changed", False) or iteration < self._rotation_start:
            return
        objective = self._rotation_objective(data, iteration)
        R, gain = optimise_rotation(objective)
        if gain <= 0.0:
            return
        before = self._explicit_bound(data)
        saved = {name: getattr(self, name) for name in (
            "_q_x", "_stats", "_q_theta", "alpha_", "beta_c_", "gamma_",
            "init_state_mean_", "init_state_cov_")}
        after = self._attempt(lambda: self._rotate(data, iteration, R, objective), data)
        if not after > before + bound_round_off(before):
            for name, value in saved.items():
                setattr(self, name, value)

    def _translation_objective(self, data, iteration):
        """The bound of the translated posterior as a function of the shift c (see
        ``sklearn_vb.lds._moves.TranslationObjective``), with the intercept
        precisions and the initial-state prior at their optimum where the schedule
        optimises them at this iteration."""
        ab, cd, rest = self._hyper_groups_started(iteration)
        state_col, output_col = data.Us.shape[1] - 1, data.Uo.shape[1] - 1
        fixed_x0 = not rest or self.init_state_cov == "fixed"
        return TranslationObjective(
            self._q_theta, state_col, output_col, self._q_x["omega0"],
            beta=None if ab else self.beta_c_[state_col],
            delta=None if cd else self.delta_c_[output_col],
            mu0=self.init_state_mean_ if fixed_x0 else None,
            Sigma0=self.init_state_cov_ if fixed_x0 else None, cap=_HYPER_CAP)

    def _translate(self, data, iteration, c, objective):
        """Shift the posterior by c: q(x) exactly, the intercept precisions and the
        initial-state prior to their optimum for the shifted posterior (where
        optimised), then q(theta) to its optimum for them."""
        self._q_x = translate_hidden_posterior(self._q_x, c)
        self._stats = self._hidden_stats(data, self._q_x)
        beta, delta = objective.hyperparameters(c)
        self.beta_c_ = self.beta_c_.copy()
        self.beta_c_[-1] = beta
        self.delta_c_ = self.delta_c_.copy()
        self.delta_c_[-1] = delta
        if not objective.fixed_init_state:
            self._update_init_state()
        self._vbm(data, self._stats)

    def _level_shifts(self):
        """Candidate shifts c of the hidden state for the level move: the one that
        lets ``C c`` take over the output intercept (rho-weighted least squares) and
        the one that moves the state intercept into the outputs
        (``(I - A) c = -b``)."""
        q, k = self._q_theta, self.n_states_
        A, b = q["M_AB"][:, :k], q["M_AB"][:, -1]
        C, d = q["M_CD"][:, :k], q["M_CD"][:, -1]
        w = np.sqrt(q["rho"])
        shifts = [np.linalg.lstsq(C * w[:, None], d * w, rcond=None)[0]]
        try:
            shifts.append(np.linalg.solve(np.eye(k) - A, -b))
        except np.linalg.LinAlgError:
            pass
        return [c for c in shifts if self._shift_allowed(c)]

    def _shift_allowed(self, c):
        """Whether a shift is finite, nonzero and within ten times the scale of the
        states: a shift far beyond it (I - A near singular, C near rank-deficient)
        makes the statistics large enough for the bound to lose its accuracy to
        cancellation, so it is not tried."""
        s = self._stats
        limit = 10.0 * np.sqrt(max(np.trace(s.W_C) / s.T, 1.0))
        return bool(np.all(np.isfinite(c)) and np.any(c != 0.0)
                    and np.linalg.norm(c) <= limit)

    def _shift_and_reoptimise(self, data, iteration, c):
        """Shift q(x) by c, then set the hyperparameters that the schedule optimises
        (but the noise prior) to their joint optimum with q(theta), and q(theta) to
        its optimum: the bound of q(x) shifted, with everything else re-optimised."""
        self._q_x = translate_hidden_posterior(self._q_x, c)
        self._stats = self._hidden_stats(data, self._q_x)
        ab, cd, rest = self._hyper_groups_started(iteration)
        if rest and self.init_state_cov != "fixed":
            self._update_init_state()
        self._exact_hyper_update(data, ab, cd, False)
        self._vbm(data, self._stats)

    def _step_translate(self, data, iteration):
        """Translation moves, each accepted only if the bound recomputed after it
        exceeds the bound before it (a rejected move restores the state exactly):
        the level move (with ``hyperparameter_update="exact"``) tries the shifts of
        :meth:`_level_shifts` with the hyperparameters and q(theta) re-optimised,
        which can switch an intercept column off and the other on at once; then the
        push-forward move shifts by the c that maximises the bound of the shifted
        posterior (``TranslationObjective``)."""
        if not (self.translations and self.fit_intercept) or self._q_theta is None or \
                getattr(self, "_warm_data_changed", False) or \
                iteration < self._rotation_start:
            return
        names = ("_q_x", "_stats", "_q_theta", "alpha_", "beta_c_", "gamma_", "delta_c_",
                 "init_state_mean_", "init_state_cov_")
        if self.hyperparameter_update == "exact":
            before = self._explicit_bound(data)
            saved = {name: getattr(self, name) for name in names}
            best, best_state = before + bound_round_off(before), None
            for c in self._level_shifts():
                value = self._attempt(
                    lambda c=c: self._shift_and_reoptimise(data, iteration, c), data)
                if value > best:
                    best, best_state = value, {name: getattr(self, name) for name in names}
                for name, val in saved.items():
                    setattr(self, name, val)
            if best_state is not None:
                for name, val in best_state.items():
                    setattr(self, name, val)
        objective = self._translation_objective(data, iteration)
        c, gain = optimise_translation(objective)
        if gain <= 0.0 or not self._shift_allowed(c):
            return
        before = self._explicit_bound(data)
        saved = {name: getattr(self, name) for name in names}
        after = self._attempt(lambda: self._translate(data, iteration, c, objective), data)
        if not after > before + bound_round_off(before):
            for name, value in saved.items():
                setattr(self, name, value)

    # ================================================================ pruning
    def _state_strength(self):
        """How much each state dimension j carries: the expected sums over time of
        its contributions to the outputs, in noise units, and to the next state, in
        innovation units: ``<C_j' R^-1 C_j> [W_C]_jj + <A_j' A_j> [W_A]_jj``
        (``C_j``, ``A_j`` the j-th columns).  The pruning move proposes the weakest
        dimension first."""
        q, s = self._q_theta, self._stats
        k = self.n_states_
        return (np.diag(q["E_CD"])[:k] * np.diag(s.W_C)
                + np.diag(q["E_AB"])[:k] * np.diag(s.W_A))

    def _remove_state(self, data, j):
        """Delete state dimension j: its row and column of A, row of B and column of
        C (through q(x), from which the next VBM step rebuilds q(theta)), its ARD
        precisions and its entries of the initial-state prior."""
        keep = np.delete(np.arange(self.n_states_), j)
        qx = self._q_x
        self._q_x = {
            "omega": np.ascontiguousarray(qx["omega"][:, keep]),
            "ups": np.ascontiguousarray(qx["ups"][:, keep][:, :, keep]),
            "cross": np.ascontiguousarray(qx["cross"][:, keep][:, :, keep]),
            "omega0": np.ascontiguousarray(qx["omega0"][:, keep]),
            "ups0": np.ascontiguousarray(qx["ups0"][:, keep][:, :, keep]),
            "entropy": qx["entropy"],
            "ln_z": qx["ln_z"],
        }
        self.n_states_ = keep.size
        self.kept_states_ = self.kept_states_[keep]
        self.alpha_ = self.alpha_[keep]
        self.gamma_ = self.gamma_[keep]
        self.init_state_mean_ = self.init_state_mean_[keep]
        self.init_state_cov_ = self.init_state_cov_[np.ix_(keep, keep)]
        self._stats = self._hidden_stats(data, self._q_x)

    def _step_prune(self, data, iteration):
        """Bound-guided removal of a state dimension, accepted only if it raises F.

        A move removes one dimension (:meth:`_remove_state`), re-converges the
        smaller model for ``prune_iter`` VBEM iterations (hyperparameter update, VBM,
        VBE; the first without the hyperparameter update) and is accepted if the
        bound then exceeds ``F + prune_iter * dF``, the bound before the move
        extrapolated at the current per-iteration gain ``dF`` of the unpruned run
        (so a move is not credited with the climb the unpruned run would have made
        anyway).  The re-convergence stops early, rejecting the move, once even its
        latest per-iteration gain kept up for the rest of the ``prune_iter``
        iterations cannot reach that target (with shrinking gains, as in VBEM, the
        full run would fall short too).  A rejected move restores the saved state exactly.  The bound after
        this step is therefore never below the bound before it, and the recorded
        history holds only accepted states.

        Moves are proposed once every hyperparameter group has started and
        ``prune_interval`` further iterations have passed, then every
        ``prune_interval`` iterations (the weakest dimension by
        :meth:`_state_strength`; straight after an accepted move the next one is
        tried; after consecutive rejections the interval doubles, up to 8 times),
        and whenever the bound has stalled (gain below ``tol``) after the schedule:
        then every dimension is tried, weakest first, before convergence can be
        declared, so a converged fit is one that no single removal improves.
        """
        if self._q_theta is None:
            return
        value = self._explicit_bound(data)
        book = getattr(self, "_prune_book", None)
        if iteration == 1 or book is None:
            sched = self.hyperparameter_schedule
            started = max(sched) if sched is not None else 0
            book = self._prune_book = {
                "next": started + self.prune_interval + 1, "stall_from": started + 1,
                "last": -np.inf, "stalled": False, "rejected": 0,
            }
        rate = max(value - book["last"], 0.0) if np.isfinite(book["last"]) else np.inf
        book["last"] = value
        stalled = rate < self.tol
        if not stalled:
            book["stalled"] = False  # a new stall gets a new round of proposals
        due = iteration >= book["next"] or (
            stalled and not book["stalled"] and iteration >= book["stall_from"])
        if not due or self.n_states_ < 2:
            return
        target = value + self.prune_iter * rate
        order = np.argsort(self._state_strength(), kind="stable")
        accepted = False
        for j in order[: self.n_states_ if stalled else 1]:
            saved = self._get_state()
            self._remove_state(data, int(j))
            self._vbm(data, self._stats)
            self._vbe(data)
            new = self._explicit_bound(data)
            done = 1
            for done in range(2, self.prune_iter + 1):
                self._step_hyper(data, iteration)
                self._vbm(data, self._stats)
                self._vbe(data)
                last, new = new, self._explicit_bound(data)
                # give up once even the current gain kept up to the end of the
                # budget cannot reach the target (gains that shrink, as they do
                # in VBEM, fall further short)
                if new + (self.prune_iter - done) * max(new - last, 0.0) \
                        <= target + bound_round_off(value):
                    break
            accepted = new > target + bound_round_off(value)
            if self.verbose >= 2:
                print(f"  iteration {iteration}: remove state {saved['kept_states_'][j]} "
                      f"of {saved['n_states_']}: bound {value:.6f} -> {new:.6f} after "
                      f"{done} of {self.prune_iter} iterations, needs {target:.6f}: "
                      f"{'accepted' if accepted else 'rejected'}")
            if accepted:
                break
            self._set_state(saved)
        if accepted:
            book["last"] = self._explicit_bound(data)
            book["next"] = iteration + 1
            book["stalled"] = False
            book["rejected"] = 0
        else:
            # a stalled run that no removal improves is left to converge
            book["stalled"] = stalled
            book["rejected"] += 1
            book["next"] = iteration + self.prune_interval * 2 ** min(book["rejected"] - 1, 3)

    def _run_vbem(self, data):
        """One restart; with the ARD check (``ard_check``), when it ends with state
        dimensions switched off, the better of it and the checked run
        (:meth:`_run_checked`) from the same start."""
        check = getattr(self, "_check_ard", False)
        start = self._get_state() if check else None
        bounds, converged = self._run_stage(data, self.max_iter)
        self.ard_check_iter_ = 0
        if not check or np.all(self._active_state_mask()) and self.n_states_ == self._k_max:
            return bounds, converged
        n_eff = int(np.sum(self._active_state_mask()))
        self._checked = (self._get_state(), list(bounds), converged)
        alt_bounds, alt_converged, first = self._run_checked(data, start)
        checked_state, bounds, converged = self._checked
        del self._checked
        check_iter = first + len(alt_bounds)
        if self.verbose:
            print(f"[{type(self).__name__}] ARD check: bound {bounds[-1]:.6f} with "
                  f"{n_eff} of {self._k_max} states; precisions first held fixed: "
                  f"{alt_bounds[-1]:.6f} with {int(np.sum(self._active_state_mask()))} "
                  f"({first} + {len(alt_bounds)} iterations"
                  f"{'' if alt_converged else ', not converged'})")
        loss = alt_bounds[-1] - bounds[-1]
        if loss <= max(self.tol, bound_round_off(bounds[-1])):
            self._set_state(checked_state)
            self.ard_check_iter_ = check_iter
            return bounds, converged
        self.ard_check_iter_ = check_iter
        warnings.warn(
            f"{type(self).__name__}: ARD switched off {self._k_max - n_eff} of "
            f"{self._k_max} state dimensions and lost {loss:.4g} nats of bound against "
            "a fit that first holds the ARD precisions at ard_init and then optimises them "
            f"({int(np.sum(self._active_state_mask()))} effective states); that fit is kept.",
            UserWarning,
        )
        return alt_bounds, alt_converged

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
    def _kl_terms(self):
        q = self._q_theta
        k, ds, do = q["k"], q["ds"], q["do"]
        p = q["M_CD"].shape[0]
        prior_ab = np.concatenate([self.alpha_, self.beta_c_])
        prior_cd = np.concatenate([self.gamma_, self.delta_c_])
        kl_ab = 0.5 * np.sum(prior_ab * np.diag(q["E_AB"])) - 0.5 * k * (
            k + ds + q["logdet_Sigma_AB"] + np.sum(np.log(prior_ab))
        )
        kl_cd = 0.5 * np.sum(prior_cd * np.diag(q["E_CD"])) - 0.5 * p * (
            k + do + q["logdet_Sigma_CD"] + np.sum(np.log(prior_cd))
        )
        # split into the marginal of B (D) and the conditional of A (C)
        if ds:
            Sigma_B = q["Sigma_AB"][k:, k:]
            _, ld_B_inv = _spd_inv_logdet(Sigma_B)
            kl_b = 0.5 * np.sum(self.beta_c_ * np.diag(q["E_AB"])[k:]) - 0.5 * k * (
                ds - ld_B_inv + np.sum(np.log(self.beta_c_))
            )
        else:
            kl_b = 0.0
        if do:
            Sigma_D = q["Sigma_CD"][k:, k:]
            _, ld_D_inv = _spd_inv_logdet(Sigma_D)
            kl_d = 0.5 * np.sum(self.delta_c_ * np.diag(q["E_CD"])[k:]) - 0.5 * p * (
                do - ld_D_inv + np.sum(np.log(self.delta_c_))
            )
        else:
            kl_d = 0.0
        kl_rho = float(np.sum(gamma_kl(q["rho_shape"], q["rho_rate"],
                                       self.noise_prior_shape_, self.noise_prior_rate_)))
        return {
            "KL_B": float(kl_b),
            "KL_A_given_B": float(kl_ab - kl_b),
            "KL_rho": kl_rho,
            "KL_D_given_rho": float(kl_d),
            "KL_C_given_rho_D": float(kl_cd - kl_d),
        }

    def _record_terms(self):
        terms = {"ln_Z": float(np.sum(self._q_x["ln_z"]))}
        terms.update(self._kl_terms())
        self.lower_bound_terms_ = terms

    def _explicit_bound(self, data):
        """F for the stored (q(x), q(theta), hyperparameters), any q(x): the expected
        complete-data log-likelihood plus the entropy of q(x) minus the KL terms of
        q(theta) (thesis Section 5.3.7 gives the form right after a VBE step).

        The moves evaluate F before and after themselves, and an iteration ends with
        it: the value of an unchanged state is reused.  The state is identified by
        the q(x), q(theta) and statistics objects (never changed in place; the memo
        holds them, so their identities cannot be reused) and the hyperparameters'
        values."""
        key = (data, self._q_x, self._q_theta, self._stats)
        values = (self.alpha_, self.beta_c_, self.gamma_, self.delta_c_,
                  self.init_state_mean_, self.init_state_cov_,
                  self.noise_prior_shape_, self.noise_prior_rate_)
        memo = getattr(self, "_bound_memo", None)
        if memo is not None and all(a is b for a, b in zip(memo[0], key)) and all(
                np.array_equal(a, b) for a, b in zip(memo[1], values)):
            return memo[2]
        value = self._evaluate_bound(data)
        self._bound_memo = (key, tuple(np.copy(v) for v in values), value)
        return value

    def _evaluate_bound(self, data):
        """F of the stored state (see :meth:`_explicit_bound`)."""
        q, s, qx = self._q_theta, self._stats, self._q_x
        k = q["k"]
        p = data.X.shape[1]
        T = s.T
        mu0, Sigma0 = self.init_state_mean_, self.init_state_cov_
        Sigma0_inv, ld_Sigma0 = _spd_inv_logdet(Sigma0)
        dev = qx["omega0"] - mu0
        n_seq = dev.shape[0]
        x0_term = -0.5 * n_seq * (k * LOG_2PI + ld_Sigma0) - 0.5 * (
            np.sum(Sigma0_inv * qx["ups0"].sum(axis=0)) + np.sum((dev @ Sigma0_inv) * dev)
        )
        # statistics of the current q(x) (not those q(theta) was computed from).  The
        # expected squared innovations and output residuals are summed as squared
        # residuals of the means plus covariance terms, not as differences of second
        # moments: with explosive dynamics the states grow to many orders of magnitude
        # above the noise, and the differences lose whole nats to cancellation
        W_z = np.block([[s.W_A, s.G_A], [s.G_A.T, data.UUs]])
        W_w = np.block([[s.W_C, s.G_C], [s.G_C.T, data.UUo]])
        M_A, M_B = q["M_AB"][:, :k], q["M_AB"][:, k:]
        innovation = qx["omega"] - s.prev @ M_A.T - data.Us @ M_B.T
        A_cross = M_A @ s.cross_sum
        innovation_cov = (s.ups_sum - A_cross - A_cross.T
                          + M_A @ s.ups_prev_sum @ M_A.T)
        e_dyn = -0.5 * T * k * LOG_2PI - 0.5 * (
            np.sum(innovation * innovation) + np.trace(innovation_cov)
            + k * np.sum(q["Sigma_AB"] * W_z)
        )
        M_C, M_D = q["M_CD"][:, :k], q["M_CD"][:, k:]
        residual = data.X - qx["omega"] @ M_C.T - data.Uo @ M_D.T
        residual_sq = (np.einsum("ts,ts->s", residual, residual)
                       + np.einsum("sj,jl,sl->s", M_C, s.ups_sum, M_C))
        e_obs = -0.5 * T * p * LOG_2PI + 0.5 * T * np.sum(q["log_rho"]) - 0.5 * (
            np.sum(q["rho"] * residual_sq) + p * np.sum(q["Sigma_CD"] * W_w)
        )
        kl = sum(self._kl_terms().values())
        return float(x0_term + np.sum(qx["entropy"]) + e_dyn + e_obs - kl)

    def _lower_bound(self, data):
        if self._point_fitted:
            # the EM objective of the point of the last E step (with
            # bound_check="steps" the M step is therefore not checked on its own)
            return self._point_value
        return self._explicit_bound(data)

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
        continuing = self.warm_start and hasattr(self, "lower_bound_")
        if continuing:
            self._warm_data_changed = True
        # the ARD check runs inside every restart (``_run_vbem``); not when continuing
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
        s = self._stats
        dead_a = self.alpha_ >= self.ard_threshold * np.diag(s.W_A)
        dead_c = self.gamma_ >= self.ard_threshold * np.diag(s.W_C)
        return ~(dead_a & dead_c)

    def _run_checked(self, data, start):
        """The ARD check of one restart, after its run ended with state dimensions
        switched off: from the same ``start``, a run that first holds the ARD
        precisions at ``ard_init`` (every dimension kept) and then optimises them.
        ARD that switches dimensions off in its first iterations, before the
        dynamics are learned, can lose tens of nats (a noisy oscillation fitted with
        one state instead of two).  The first stage only has to learn the dynamics
        before ARD starts: it gets the iterations the checked run needed (its bound,
        with the precisions held, is not comparable with the checked run's, so it
        cannot stop on that); the second gets ``max_iter`` and is abandoned once its
        bound plus the gain still to come, predicted as the convergence test predicts
        it, stays below the checked run's bound.  Returns ``(bounds, converged,
        first)``: the history of the second stage and the length of the first."""
        first_budget = max(1, len(self._checked[1]))
        self._set_state(start)
        self._ard_held = True
        try:
            first, _ = self._run_stage(data, first_budget)
        finally:
            self._ard_held = False
        checked_bound = self._checked[1][-1]
        self._abandon_below = checked_bound + max(self.tol, bound_round_off(checked_bound))
        try:
            second, converged = self._run_stage(data, self.max_iter)
        finally:
            del self._abandon_below
        return list(second), converged, len(first)

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
        self.A_mean_ = q["M_AB"][:, :k].copy()
        self.B_mean_ = np.zeros((k, d))
        self.B_mean_[:, sc] = q["M_AB"][:, k:]
        self.C_mean_ = q["M_CD"][:, :k].copy()
        self.D_mean_ = np.zeros((p, d))
        self.D_mean_[:, oc] = q["M_CD"][:, k:]
        if self._point_fitted:
            self._finalize_point(data)
            return
        self.Sigma_AB_ = q["Sigma_AB"].copy()
        self.Sigma_CD_ = q["Sigma_CD"].copy()
        self.rho_shape_ = float(q["rho_shape"])
        self.rho_rate_ = q["rho_rate"].copy()
        self.noise_precision_mean_ = q["rho"].copy()
        self.beta_ = np.full(d, np.inf)
        self.beta_[sc] = self.beta_c_
        self.delta_ = np.full(d, np.inf)
        self.delta_[oc] = self.delta_c_
        self.hyperparameter_history_ = {
            key: np.asarray(val) for key, val in self._history.items()
        }
        self.active_states_ = self._active_state_mask()
        self.n_effective_states_ = int(np.sum(self.active_states_))
        self.n_features_in_ = p

    def _finalize_point(self, data):
        k, d = self.n_states_, data.U.shape[1]
        for name in ("Sigma_AB_", "Sigma_CD_", "rho_shape_", "rho_rate_"):
            self.__dict__.pop(name, None)
        self.noise_precision_mean_ = self._q_theta["rho"].copy()
        self.beta_ = np.full(d, np.inf)
        self.beta_[self.state_inputs_] = self.beta_c_
        self.delta_ = np.full(d, np.inf)
        self.delta_[self.output_inputs_] = self.delta_c_
        self.hyperparameter_history_ = {}
        self.active_states_ = np.ones(k, dtype=bool)
        self.n_effective_states_ = k
        self.n_features_in_ = data.X.shape[1]
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
        k = self.n_states_
        var_ab = np.diag(self.Sigma_AB_)
        var_cd = np.diag(self.Sigma_CD_)
        inv_rho = self.rho_rate_ / max(self.rho_shape_ - 1.0, 1e-12)
        d = self.n_inputs_
        sd_A = np.broadcast_to(np.sqrt(var_ab[:k]), (k, k)).copy()
        sd_B = np.zeros((k, d))
        sd_B[:, self.state_inputs_] = np.sqrt(var_ab[k:])
        sd_C = np.sqrt(np.outer(inv_rho, var_cd[:k]))
        sd_D = np.zeros((inv_rho.shape[0], d))
        sd_D[:, self.output_inputs_] = np.sqrt(np.outer(inv_rho, var_cd[k:]))
        return {"A": sd_A, "B": sd_B, "C": sd_C, "D": sd_D}

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

    def transform(self, X, *, U=None, lengths=None, sequence_ids=None):
        """Smoothed state means ``E_q[x_t]`` (VBE step with q(theta) fixed)."""
        data = self._check_new_data(X, U, lengths, sequence_ids)
        return self._infer(data, point=False, smooth=True).omega

    def fit_transform(self, X, y=None, *, U=None, lengths=None, sequence_ids=None):
        """Fit, then return the smoothed state means of the training data."""
        return self.fit(X, U=U, lengths=lengths, sequence_ids=sequence_ids).transform(
            X, U=U, lengths=lengths, sequence_ids=sequence_ids)

    def score_samples(self, X, y=None, *, U=None, lengths=None, sequence_ids=None):
        """One-step-ahead predictive log density ``ln p(y_t | y_{1:t-1}, theta_mean)``
        of every row under the posterior-mean parameters (exact Kalman filter)."""
        data = self._check_new_data(X, U, lengths, sequence_ids)
        return self._infer(data, point=True, smooth=False).log_terms

    def score(self, X, y=None, *, U=None, lengths=None, sequence_ids=None):
        """Mean one-step-ahead predictive log-likelihood per time step under the
        posterior-mean parameters.

        A model fitted with ``sequence_ids`` (several sequences) needs ``lengths`` or
        ``sequence_ids`` here too (cross-validation: enable metadata routing)."""
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
        if not isinstance(n_steps, Integral) or n_steps < 1:
            raise ValueError(f"n_steps must be a positive int; got {n_steps!r}.")
        if method not in ("vb", "plugin"):
            raise ValueError(f"method must be 'vb' or 'plugin'; got {method!r}.")
        p = self.n_features_in_
        if X is None:
            X_hist = np.zeros((0, p))
            U_hist = None if U is None else np.zeros((0, np.shape(U)[1]))
        else:
            X_hist = validate_float_data(self, X, reset=False, missing=MISSING_IN_SEQUENCES)
            U_hist = U
        n_hist = X_hist.shape[0]
        if self.n_user_inputs_:
            if U_future is None:
                raise ValueError("U_future is required: the model has inputs.")
            U_future = np.asarray(U_future, dtype=np.float64)
            if U_future.shape != (n_steps, self.n_user_inputs_):
                raise ValueError(
                    f"U_future must have shape ({n_steps}, {self.n_user_inputs_}); got "
                    f"{U_future.shape}."
                )
            if n_hist:
                U_hist = self._inputs(X_hist, U_hist, self.n_user_inputs_)
                U_hist = U_hist[:, : self.n_user_inputs_]
            else:
                U_hist = np.zeros((0, self.n_user_inputs_))
            U_all = np.vstack([U_hist, U_future])
        else:
            U_all = None
        X_all = np.vstack([X_hist, np.zeros((n_steps, p))])
        observed = np.zeros(X_all.shape[0], dtype=np.bool_)
        observed[:n_hist] = True
        Uall = self._inputs(X_all, U_all, self.n_user_inputs_)
        Us = np.ascontiguousarray(Uall[:, self.state_inputs_])
        Uo = np.ascontiguousarray(Uall[:, self.output_inputs_])
        starts = np.array([0], dtype=np.int64)
        ends = np.array([X_all.shape[0]], dtype=np.int64)
        res = self._smooth(X_all, Us, Uo, starts, ends, smooth=False,
                           point=method == "plugin", observed=observed)
        m = res.pred_mean[n_hist:]
        P = res.pred_cov[n_hist:]
        C, D = self.C_mean_, self.D_mean_
        Uf = Uall[n_hist:]
        mean = m @ C.T + Uf @ D.T
        cov = np.einsum("sj,tjl,rl->tsr", C, P, C)
        if method == "plugin":
            cov += np.diag(1.0 / self.noise_precision_mean_)
        else:
            # E[1/rho_s] (1 + tr(Sigma_CD <w w'>)), w = [x_t; u_o,t]
            inv_rho = self.rho_rate_ / max(self.rho_shape_ - 1.0, 1e-12)
            k = self.n_states_
            Uof = Uo[n_hist:]
            S = self.Sigma_CD_
            tr = (
                np.einsum("jl,tlj->t", S[:k, :k], P + m[:, :, None] * m[:, None, :])
                + 2.0 * np.einsum("tj,jc,tc->t", m, S[:k, k:], Uof)
                + np.einsum("tc,cd,td->t", Uof, S[k:, k:], Uof)
            )
            cov += (1.0 + tr)[:, None, None] * np.diag(inv_rho)[None]
        return mean, cov

    def sample(self, n_samples=1, *, U=None, random_state=None):
        """Draw one sequence of ``n_samples`` steps from the posterior-mean model.

        Returns ``(Y, states)`` of shapes (n_samples, p) and (n_samples, k).
        """
        self._check_is_fitted()
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive int; got {n_samples!r}.")
        rng = check_random_state(random_state if random_state is not None
                                 else self.random_state)
        dummy = np.zeros((n_samples, self.n_features_in_))
        Uall = self._inputs(dummy, U, self.n_user_inputs_)
        k, p = self.n_states_, self.n_features_in_
        x0 = rng.multivariate_normal(self.init_state_mean_, self.init_state_cov_)[None]
        w = rng.standard_normal((n_samples, k))
        v = rng.standard_normal((n_samples, p))
        states, Y = simulate_lds(
            np.ascontiguousarray(self.A_mean_), np.ascontiguousarray(Uall @ self.B_mean_.T),
            np.ascontiguousarray(self.C_mean_), np.ascontiguousarray(Uall @ self.D_mean_.T),
            1.0 / np.sqrt(self.noise_precision_mean_), x0, w, v,
            np.array([0], dtype=np.int64), np.array([n_samples], dtype=np.int64),
        )
        return Y, states

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
        return tags
