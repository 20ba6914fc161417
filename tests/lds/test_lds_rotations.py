"""Rotation moves of VBLinearDynamicalSystem: the bound-in-R, its gradient, the
identity with the bound of the rotated posterior, and monotonicity of the fit."""

import copy
import dataclasses
import warnings

import numpy as np
import pytest
from scipy.linalg import block_diag
from scipy.stats import ortho_group
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_vb.lds._move_steps import rotate, rotation_objective
from sklearn_vb.lds._moves import optimise_rotation, rotate_hidden_posterior
from sklearn_vb.lds._vbem import hidden_stats
from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds import VBLinearDynamicalSystem

from tests.lds._lds_steps import count_accepted_moves

# (inputs, ARD, hyperparameter schedule, initial-state covariance)
CASES = [
    pytest.param(2, True, (0, 0, 0), "diag", id="inputs-ard-diag"),
    pytest.param(0, True, (0, 0, 0), "full", id="no-inputs-ard-full"),
    pytest.param(1, False, (0, 0, 0), "spherical", id="input-no-ard-spherical"),
    pytest.param(2, True, (50, 50, 50), "diag", id="inputs-before-the-schedule"),
    pytest.param(0, True, (0, 0, 0), "fixed", id="no-inputs-fixed-init-state"),
]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _problem(seed, d, ard, schedule, cov, n_iter=6, fit_intercept=True):
    """A model driven for a few VBEM iterations (no rotations) and its data."""
    params = make_lds_params(3, 4, d, noise_std=0.5, random_state=seed)
    rng = np.random.default_rng(seed)
    lengths = [50, 30]
    U = rng.standard_normal((sum(lengths), d)) if d else None
    X, _ = make_lds(params, lengths, U, random_state=seed)
    model = VBLinearDynamicalSystem(
        n_states=3, ard=ard, hyperparameter_schedule=schedule, init_state_cov=cov,
        rotations=False, prune_states=False, fit_intercept=fit_intercept)
    model._validate_params()
    data = model._check_fit_data(X, U=U, lengths=lengths)
    model._initialize(data, check_random_state(seed))
    for it in range(1, n_iter + 1):
        for step in model._iteration_steps():
            step.run(data, it)
    return model, data


def _random_invertible(rng, k, scale=0.3):
    R = np.eye(k) + scale * rng.standard_normal((k, k))
    if np.linalg.det(R) < 0:
        R[0] *= -1
    return R


@pytest.mark.parametrize("d, ard, schedule, cov", CASES)
def test_gradient_equals_finite_differences(d, ard, schedule, cov):
    model, data = _problem(1, d, ard, schedule, cov)
    objective = rotation_objective(model, data, 7)
    rng = np.random.default_rng(0)
    for _ in range(2):
        R = _random_invertible(rng, 3)
        _, grad = objective.value_and_grad(R)
        numeric = np.zeros_like(R)
        h = 1e-6
        for i in range(3):
            for j in range(3):
                E = np.zeros_like(R)
                E[i, j] = h
                numeric[i, j] = (objective.value_and_grad(R + E)[0]
                                 - objective.value_and_grad(R - E)[0]) / (2 * h)
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6 * np.abs(grad).max())


def _rotated_state(model, data, objective, R, scale):
    """The push-forward of the whole posterior by the basis change R = scale * O (O
    orthogonal): then the rotated q([A B]) keeps independent rows with one shared
    covariance, so the estimator can hold it and compute its bound from scratch."""
    k = model.n_states_
    rotated = copy.deepcopy(model)
    rotated._q_x = rotate_hidden_posterior(model._q_x, R, data.ends - data.starts)
    rotated._stats = hidden_stats(data, rotated._q_x)
    rotated.alpha_, rotated.beta_c_, rotated.gamma_ = objective.hyperparameters(R)
    if objective.init_state != "fixed":
        rotated._update_init_state()
    q = model._q_theta
    V = np.linalg.inv(R)
    _, logdet_R = np.linalg.slogdet(R)
    S_ab = block_diag(V, np.eye(q.ds))
    M_AB = R @ q.M_AB @ S_ab
    Sigma_AB = scale**2 * S_ab.T @ q.Sigma_AB @ S_ab
    S_cd = block_diag(V.T, np.eye(q.do)).T  # rows c_s -> R^-T c_s
    M_CD = q.M_CD @ S_cd
    Sigma_CD = S_cd.T @ q.Sigma_CD @ S_cd
    p = M_CD.shape[0]
    rotated._q_theta = dataclasses.replace(
        q, M_AB=M_AB, Sigma_AB=Sigma_AB, E_AB=M_AB.T @ M_AB + k * Sigma_AB,
        logdet_Sigma_AB=q.logdet_Sigma_AB + (k + q.ds) * np.log(scale**2)
        - 2 * logdet_R,
        M_CD=M_CD, Sigma_CD=Sigma_CD, E_CD=(M_CD.T * q.rho) @ M_CD + p * Sigma_CD,
        logdet_Sigma_CD=q.logdet_Sigma_CD - 2 * logdet_R,
    )
    return rotated


@pytest.mark.parametrize("d, ard, schedule, cov", CASES)
def test_bound_in_R_equals_the_bound_of_the_rotated_posterior(d, ard, schedule, cov):
    """For R a scaled orthogonal matrix the rotated posterior is in the estimator's
    family: its bound computed from scratch changes by exactly what the closed form
    predicts."""
    model, data = _problem(2, d, ard, schedule, cov)
    objective = rotation_objective(model, data, 7)
    eye = np.eye(3)
    base = _rotated_state(model, data, objective, eye, 1.0)._lower_bound(data)
    f_eye = objective.value_and_grad(eye)[0]
    for seed, scale in [(0, 1.0), (1, 1.7), (2, 0.6)]:
        O = ortho_group.rvs(3, random_state=seed)
        if np.linalg.det(O) < 0:
            O[0] *= -1
        R = scale * O
        rotated = _rotated_state(model, data, objective, R, scale)
        predicted = base + objective.value_and_grad(R)[0] - f_eye
        assert rotated._lower_bound(data) == pytest.approx(predicted, abs=1e-8)
    # and the change is not trivially zero
    assert abs(predicted - base) > 1e-3


@pytest.mark.parametrize("d, ard, schedule, cov", CASES)
def test_accepted_move_reaches_at_least_the_predicted_bound(d, ard, schedule, cov):
    """For a general R the estimator re-optimises q(theta) after the move: its bound
    from scratch is at least the closed-form value of the rotated posterior."""
    model, data = _problem(3, d, ard, schedule, cov)
    objective = rotation_objective(model, data, 7)
    eye = np.eye(3)
    base = _rotated_state(model, data, objective, eye, 1.0)._lower_bound(data)
    R, gain = optimise_rotation(objective)
    assert gain > 0
    moved = copy.deepcopy(model)
    rotate(moved, data, R, objective)
    assert moved._lower_bound(data) >= base + gain - 1e-8 * abs(base)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("d, ard, schedule, cov", CASES)
def test_rotation_steps_never_lower_the_bound(seed, d, ard, schedule, cov):
    """Every step of every iteration, rotations included, checked from scratch."""
    model, data = _problem(seed, d, ard, schedule, cov, n_iter=0)
    model.rotations = True
    assert count_accepted_moves(model, data, max(schedule) + 24, "rotate") > 0


def test_fit_with_rotations_checks_every_step_and_gains():
    """A whole fit with per-step checks; rotations reach a higher bound in the same
    number of iterations on a problem whose PCA start has the wrong state scale."""
    params = make_lds_params(3, 6, 0, noise_std=0.3, random_state=5)
    X, _ = make_lds(params, [200], random_state=5)
    kwargs = dict(n_states=3, max_iter=60, tol=0.0, random_state=0)
    with_rot = VBLinearDynamicalSystem(**kwargs, bound_check="steps").fit(X)
    without = VBLinearDynamicalSystem(**kwargs, rotations=False).fit(X)
    assert with_rot.lower_bound_ > without.lower_bound_ + 1.0


def test_rotations_option_is_validated():
    with pytest.raises(ValueError, match="rotations"):
        VBLinearDynamicalSystem(rotations="yes").fit(np.zeros((10, 2)))


def _explosive_fit(seed, max_iter):
    """Hyperparameters held fixed, moves at their defaults, 40 steps of explosive
    dynamics (outputs near 1e8): the states grow nearly collinear, ``<x x'>`` has a
    condition number near 1e12."""
    params = make_lds_params(2, 3, 0, eigenvalues=[1.07, 1.59], noise_std=2.0,
                             random_state=seed)
    X, _ = make_lds(params, [40], random_state=seed)
    model = VBLinearDynamicalSystem(
        2, fit_intercept=False, ard=False, ard_init=1.0, hyperparameter_schedule=None,
        noise_rate=1.0, prune_states=False, init_state_cov="fixed", max_iter=max_iter,
        bound_check="steps", random_state=0)
    return model, X


def test_explosive_dynamics_with_fixed_hyperparameters_never_lower_the_bound():
    """Every step of the fit is checked (``bound_check="steps"``); with q(theta)
    solved from the normal equations the VBM step lowered the bound by nats once the
    rotations had grown the states to the scale of the outputs."""
    model, X = _explosive_fit(0, 40)
    model.fit(X)
    bounds = model.lower_bounds_
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert np.abs(model._q_x.omega).max() > 1e6  # the regime the check is about


def test_ridge_regression_matches_an_svd_solution_on_collinear_designs():
    """The VBM solve against SVD least squares of the same augmented system, on
    two nearly collinear columns of scale 1e7 (condition of Z'Z about 1e13)."""
    from sklearn_vb.lds._vbem import ridge_regression

    rng = np.random.default_rng(0)
    growth = 1.6 ** np.arange(40)
    Z = np.column_stack([growth, growth * (1 + 1e-6 * rng.standard_normal(40))])
    Z[:, 1] += rng.standard_normal(40)
    coef = np.array([[84.4, 1.97], [-17.1, -0.4]])
    Y = Z @ coef.T + rng.standard_normal((40, 2))
    prior = np.array([1.0, 1.0])
    M, Sigma, logdet_inv = ridge_regression([Z], [Y], prior)
    aug = np.vstack([Z, np.diag(np.sqrt(prior))])
    exact = np.linalg.lstsq(aug, np.vstack([Y, np.zeros((2, 2))]), rcond=None)[0].T
    np.testing.assert_allclose(M, exact, rtol=1e-6)
    _, sv, Vt = np.linalg.svd(aug, full_matrices=False)
    np.testing.assert_allclose(Sigma, (Vt.T / sv**2) @ Vt, rtol=1e-6, atol=0)
    assert logdet_inv == pytest.approx(2.0 * np.sum(np.log(sv)), rel=1e-12)
    Lam = Z.T @ Z + np.diag(prior)
    # and the normal equations are far off: the failure mode the QR form avoids
    naive = np.linalg.solve(Lam, Z.T @ Y).T
    assert np.max(np.abs(naive - exact)) > 100 * np.max(np.abs(M - exact))
