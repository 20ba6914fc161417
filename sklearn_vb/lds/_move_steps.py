"""The rotation and translation steps of the estimator: a move of the hidden-state
basis (:mod:`sklearn_vb.lds._moves`) proposed for the estimator's stored state and
accepted only if the bound recomputed after it exceeds the bound before it; a rejected
move restores the state exactly.

``est`` is a :class:`~sklearn_vb.lds.VBLinearDynamicalSystem` during its fit and
``data`` its ``_FitData``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core.base import bound_round_off
from ._moves import (
    RotationObjective,
    TranslationObjective,
    optimise_rotation,
    optimise_translation,
    rotate_hidden_posterior,
    translate_hidden_posterior,
)
from ._state import HiddenPosterior, ParameterPosterior
from ._vbem import HYPER_CAP, exact_hyper_update, hidden_stats
from .inference import HiddenStatistics

__all__ = ["rotate_step", "rotation_objective", "rotate", "translate_step",
           "translation_objective", "translate", "hyper_groups_started"]


@dataclass(frozen=True, eq=False)
class _MoveSnapshot:
    """The part of the estimator's state that a rotation or a translation changes
    (each update replaces these objects, never changes them in place, so holding them
    is enough to restore the state exactly)."""

    q_x: HiddenPosterior
    stats: HiddenStatistics
    q_theta: ParameterPosterior
    #: the ARD precisions of the present columns of A, B, C, D
    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray
    delta: np.ndarray
    #: the initial-state prior
    mu0: np.ndarray
    Sigma0: np.ndarray

    @classmethod
    def capture(cls, est):
        return cls(est._q_x, est._stats, est._q_theta, est.alpha_, est.beta_c_, est.gamma_,
                   est.delta_c_, est.init_state_mean_, est.init_state_cov_)

    def restore(self, est):
        est._q_x, est._stats, est._q_theta = self.q_x, self.stats, self.q_theta
        est.alpha_, est.beta_c_, est.gamma_, est.delta_c_ = (self.alpha, self.beta,
                                                             self.gamma, self.delta)
        est.init_state_mean_, est.init_state_cov_ = self.mu0, self.Sigma0


def hyper_groups_started(est, iteration):
    """Which hyperparameter groups the schedule optimises from ``iteration``:
    (alpha and beta, gamma and delta, the rest)."""
    sched = est.hyperparameter_schedule
    if sched is None:
        return False, False, False
    done = iteration - 1
    return (est._ard_on and done >= sched[0], est._ard_on and done >= sched[1],
            done >= sched[2])


def _moves_due(est, iteration):
    return not (est._q_theta is None or getattr(est, "_warm_data_changed", False)
                or iteration < est._rotation_start)


def _attempt(est, move, data):
    """Run a proposed move and return the bound after it; -inf when the moved
    posterior is numerically degenerate (a matrix that should be positive
    definite is not), so that the caller rejects and restores it."""
    try:
        move()
        return est._lower_bound(data)
    except (np.linalg.LinAlgError, FloatingPointError):
        return -np.inf


def _try(est, data, move):
    """Run ``move`` and keep it only if it raises the bound; otherwise restore the
    state exactly."""
    before = est._lower_bound(data)
    saved = _MoveSnapshot.capture(est)
    after = _attempt(est, move, data)
    if not after > before + bound_round_off(before):
        saved.restore(est)


# ================================================================ rotations
def rotation_objective(est, data, iteration):
    """The bound of the rotated posterior as a function of R (see
    ``sklearn_vb.lds._moves``), with the hyperparameter groups that the
    schedule optimises at this iteration at their optimum."""
    ab, cd, rest = hyper_groups_started(est, iteration)
    init_state = est.init_state_cov if rest and est.init_state_cov != "fixed" \
        else "fixed"
    return RotationObjective(
        est._stats, est._q_theta, data.UUs, est._q_x.omega0, est._q_x.ups0,
        data.X.shape[0], data.X.shape[1],
        alpha=None if ab else est.alpha_, beta=None if ab else est.beta_c_,
        gamma=None if cd else est.gamma_, init_state=init_state,
        mu0=est.init_state_mean_, Sigma0=est.init_state_cov_, cap=HYPER_CAP)


def rotate(est, data, R, objective):
    """Transform the posterior by R: q(x) exactly, the ARD precisions and the
    initial-state prior to their optimum for the transformed posterior (where
    optimised), then q(theta) to its optimum for them (which can only raise the
    bound of the transformed q(theta))."""
    est._q_x = rotate_hidden_posterior(est._q_x, R, data.ends - data.starts)
    est._stats = hidden_stats(data, est._q_x)
    est.alpha_, est.beta_c_, est.gamma_ = objective.hyperparameters(R)
    if objective.init_state != "fixed":
        est._update_init_state()
    est._vbm(data, est._stats)


def rotate_step(est, data, iteration):
    """Rotation move (Luttinen 2013): maximise the bound over a change of basis
    of the hidden state, accepted only if the bound recomputed after the move
    exceeds the bound before it; a rejected move restores the state exactly."""
    if not est.rotations or not _moves_due(est, iteration) or data.obs_mask is not None:
        # (their objectives assume the rows of [C D] share one design, which missing
        # outputs break)
        return
    objective = rotation_objective(est, data, iteration)
    R, gain = optimise_rotation(objective)
    if gain <= 0.0:
        return
    _try(est, data, lambda: rotate(est, data, R, objective))


# ================================================================ translations
def translation_objective(est, data, iteration):
    """The bound of the translated posterior as a function of the shift c (see
    ``sklearn_vb.lds._moves.TranslationObjective``), with the intercept
    precisions and the initial-state prior at their optimum where the schedule
    optimises them at this iteration."""
    ab, cd, rest = hyper_groups_started(est, iteration)
    state_col, output_col = data.Us.shape[1] - 1, data.Uo.shape[1] - 1
    fixed_x0 = not rest or est.init_state_cov == "fixed"
    return TranslationObjective(
        est._q_theta, state_col, output_col, est._q_x.omega0,
        beta=None if ab else est.beta_c_[state_col],
        delta=None if cd else est.delta_c_[output_col],
        mu0=est.init_state_mean_ if fixed_x0 else None,
        Sigma0=est.init_state_cov_ if fixed_x0 else None, cap=HYPER_CAP)


def translate(est, data, c, objective):
    """Shift the posterior by c: q(x) exactly, the intercept precisions and the
    initial-state prior to their optimum for the shifted posterior (where
    optimised), then q(theta) to its optimum for them."""
    est._q_x = translate_hidden_posterior(est._q_x, c)
    est._stats = hidden_stats(data, est._q_x)
    beta, delta = objective.hyperparameters(c)
    est.beta_c_ = est.beta_c_.copy()
    est.beta_c_[-1] = beta
    est.delta_c_ = est.delta_c_.copy()
    est.delta_c_[-1] = delta
    if not objective.fixed_init_state:
        est._update_init_state()
    est._vbm(data, est._stats)


def _level_shifts(q, k, stats):
    """Candidate shifts c of the hidden state for the level move: the one that
    lets ``C c`` take over the output intercept (rho-weighted least squares) and
    the one that moves the state intercept into the outputs
    (``(I - A) c = -b``)."""
    A, b = q.M_AB[:, :k], q.M_AB[:, -1]
    C, d = q.M_CD[:, :k], q.M_CD[:, -1]
    w = np.sqrt(q.rho)
    shifts = [np.linalg.lstsq(C * w[:, None], d * w, rcond=None)[0]]
    try:
        shifts.append(np.linalg.solve(np.eye(k) - A, -b))
    except np.linalg.LinAlgError:
        pass
    return [c for c in shifts if _shift_allowed(c, stats)]


def _shift_allowed(c, s):
    """Whether a shift is finite, nonzero and within ten times the scale of the
    states (statistics ``s``): a shift far beyond it (I - A near singular, C near
    rank-deficient) makes the statistics large enough for the bound to lose its
    accuracy to cancellation, so it is not tried."""
    limit = 10.0 * np.sqrt(max(np.trace(s.W_C) / s.T, 1.0))
    return bool(np.all(np.isfinite(c)) and np.any(c != 0.0)
                and np.linalg.norm(c) <= limit)


def _shift_and_reoptimise(est, data, iteration, c):
    """Shift q(x) by c, then set the hyperparameters that the schedule optimises
    (but the noise prior) to their joint optimum with q(theta), and q(theta) to
    its optimum: the bound of q(x) shifted, with everything else re-optimised."""
    est._q_x = translate_hidden_posterior(est._q_x, c)
    est._stats = hidden_stats(data, est._q_x)
    ab, cd, rest = hyper_groups_started(est, iteration)
    if rest and est.init_state_cov != "fixed":
        est._update_init_state()
    (est.alpha_, est.beta_c_, est.gamma_, est.delta_c_, est.noise_prior_shape_,
     est.noise_prior_rate_) = exact_hyper_update(data, est._stats, est._hyper(), ab, cd,
                                                 False)
    est._vbm(data, est._stats)


def translate_step(est, data, iteration):
    """Translation moves, each accepted only if the bound recomputed after it
    exceeds the bound before it (a rejected move restores the state exactly):
    the level move (with ``hyperparameter_update="exact"``) tries the shifts of
    :func:`_level_shifts` with the hyperparameters and q(theta) re-optimised,
    which can switch an intercept column off and the other on at once; then the
    push-forward move shifts by the c that maximises the bound of the shifted
    posterior (``TranslationObjective``)."""
    if (not (est.translations and est.fit_intercept) or not _moves_due(est, iteration)
            or data.obs_mask is not None):  # as the rotations
        return
    if est.hyperparameter_update == "exact":
        before = est._lower_bound(data)
        saved = _MoveSnapshot.capture(est)
        best, best_state = before + bound_round_off(before), None
        for c in _level_shifts(est._q_theta, est.n_states_, est._stats):
            value = _attempt(
                est, lambda c=c: _shift_and_reoptimise(est, data, iteration, c), data)
            if value > best:
                best, best_state = value, _MoveSnapshot.capture(est)
            saved.restore(est)
        if best_state is not None:
            best_state.restore(est)
    objective = translation_objective(est, data, iteration)
    c, gain = optimise_translation(objective)
    if gain <= 0.0 or not _shift_allowed(c, est._stats):
        return
    _try(est, data, lambda: translate(est, data, c, objective))
