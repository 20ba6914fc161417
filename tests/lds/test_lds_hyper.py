"""VBLinearDynamicalSystem: exact joint hyperparameter updates, the initial-state
prior update and the remaining-gain stopping rule."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_vb.lds._hyper import (
    _messages,
    dynamics_evidence,
    init_state_evidence,
    noise_gamma_optimum,
    optimal_init_state,
    output_evidence,
    update_dynamics_precisions,
    update_output_hyperparameters,
)
from sklearn_vb.base import predicted_remaining_gain
from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds import VBLinearDynamicalSystem

CAP = 1e12


def _data(seed=0, k=2, p=4, d=2, lengths=(40, 30)):
    params = make_lds_params(k, p, d, noise_std=0.5, random_state=seed)
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((sum(lengths), d))
    X, _ = make_lds(params, list(lengths), U, random_state=seed)
    return X, U, np.asarray(lengths)


def _regression(seed, n_coef=4, n_targets=3, n=60, dead=(1,)):
    """Second and cross moments of a regression with some coefficients exactly zero."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, n_coef))
    coef = rng.standard_normal((n_coef, n_targets))
    coef[list(dead)] = 0.0
    Y = Z @ coef + 0.7 * rng.standard_normal((n, n_targets))
    return Z.T @ Z, Z.T @ Y, np.einsum("ts,ts->s", Y, Y), n


def _coordinate_max(fun, lam, i):
    """Maximiser of ``fun`` along coordinate i (bounded search in ln lam, and the cap)."""
    def neg(x):
        moved = lam.copy()
        moved[i] = np.exp(x)
        return -fun(moved)
    res = minimize_scalar(neg, bounds=(np.log(1e-8), np.log(CAP)), method="bounded",
                          options={"xatol": 1e-10})
    return np.exp(res.x), -res.fun


@pytest.mark.parametrize("seed", range(3))
def test_dynamics_coordinate_update_is_the_exact_optimum(seed):
    W, R, _, _ = _regression(seed)
    lam = np.exp(np.random.default_rng(seed).standard_normal(W.shape[0]))
    fun = lambda x: dynamics_evidence(W, R, x)  # noqa: E731
    for i in range(lam.size):
        free = np.zeros(lam.size, bool)
        free[i] = True
        new = update_dynamics_precisions(W, R, lam, free, CAP, sweeps=1)
        _, best = _coordinate_max(fun, lam, i)
        assert fun(new) >= best - 1e-9 * abs(best)
        assert np.all(new[~free] == lam[~free])


@pytest.mark.parametrize("seed", range(3))
def test_dynamics_sweeps_reach_the_joint_optimum(seed):
    W, R, _, _ = _regression(seed, dead=(1, 3))
    lam = np.ones(W.shape[0])
    new = update_dynamics_precisions(W, R, lam, np.ones(lam.size, bool), CAP, sweeps=200)
    # a finite optimum has zero gradient; a switched-off coefficient sits at the cap
    res = minimize(lambda x: -dynamics_evidence(W, R, np.exp(x)), np.zeros(lam.size),
                   method="L-BFGS-B", bounds=[(np.log(1e-8), np.log(CAP))] * lam.size)
    assert dynamics_evidence(W, R, new) >= -res.fun - 1e-7
    assert dynamics_evidence(W, R, new) >= dynamics_evidence(W, R, lam)


@pytest.mark.parametrize("seed", range(3))
def test_output_coordinate_update_is_the_exact_optimum(seed):
    W, R, YY, T = _regression(seed)
    lam = np.exp(np.random.default_rng(seed).standard_normal(W.shape[0]))
    a, b = 2.0, 0.5
    fun = lambda x: output_evidence(W, R, YY, x, a, b, T)  # noqa: E731
    for i in range(lam.size):
        free = np.zeros(lam.size, bool)
        free[i] = True
        new, a1, b1 = update_output_hyperparameters(W, R, YY, lam, a, b, T, free, False,
                                                    CAP, 1e8, sweeps=1)
        assert (a1, b1) == (a, b)
        _, best = _coordinate_max(fun, lam, i)
        assert fun(new) >= best - 1e-9 * abs(best)


@pytest.mark.parametrize("seed", range(3))
def test_noise_gamma_update_is_the_exact_optimum(seed):
    rng = np.random.default_rng(seed)
    g, T = rng.gamma(1.0, 2.0, size=8), 50  # dispersed: a finite optimum

    def value(a, b):
        return output_evidence(np.eye(1), np.zeros((1, g.size)), g, np.ones(1), a, b, T)

    a, b = noise_gamma_optimum(g, T, 1.0, 1.0, 1e8)
    assert a < 1e3
    # zero gradient by central finite differences in (ln a, ln b)
    h = 1e-5
    for da, db in ((h, 0.0), (0.0, h)):
        up = value(a * np.exp(da), b * np.exp(db))
        down = value(a * np.exp(-da), b * np.exp(-db))
        assert abs(up - down) / (2 * h) < 1e-5
    res = minimize(lambda x: -value(*np.exp(x)), [0.0, 0.0], method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 5000})
    assert value(a, b) >= -res.fun - 1e-9


def test_noise_gamma_update_goes_to_the_cap_for_equal_precisions():
    # equal residual sums: the noise levels are tied, the optimum shape is infinite
    g = np.full(5, 40.0)
    a, b = noise_gamma_optimum(g, 100, 1.0, 1.0, 1e8)
    assert a == pytest.approx(1e8)
    assert a / b == pytest.approx(100 / 40.0, rel=1e-6)


def _fitted_steps(model, X, U, lengths, n_iter):
    model._validate_params()
    data = model._check_fit_data(X, U=U, lengths=lengths)
    model._initialize(data, check_random_state(0))
    model._step_vbm(data, 1)
    model._step_vbe(data, 1)
    for it in range(2, n_iter):
        for step in model._iteration_steps():
            step.run(data, it)
    return data


@pytest.mark.parametrize("seed", range(2))
def test_collapsed_bounds_equal_the_bound_after_the_vbm_step(seed):
    """``dynamics_evidence + output_evidence`` is the bound maximised over q(theta):
    differences between two hyperparameter settings match the explicit bound."""
    X, U, lengths = _data(seed)
    model = VBLinearDynamicalSystem(2, hyperparameter_schedule=None, rotations=False,
                                    prune_states=False)
    data = _fitted_steps(model, X, U, lengths, 4)
    s, k = model._stats, model.n_states_
    W_z = np.block([[s.W_A, s.G_A], [s.G_A.T, data.UUs]])
    R_AB = np.vstack([s.S_A, s.M])
    W_w = np.block([[s.W_C, s.G_C], [s.G_C.T, data.UUo]])
    R_CD = np.vstack([s.S_C, data.UY])

    def both(alpha, beta, gamma, delta, a, b):
        model.alpha_, model.beta_c_, model.gamma_, model.delta_c_ = alpha, beta, gamma, delta
        model.noise_prior_shape_, model.noise_prior_rate_ = a, b
        model._vbm(data, model._stats)
        collapsed = (dynamics_evidence(W_z, R_AB, np.concatenate([alpha, beta]))
                     + output_evidence(W_w, R_CD, data.YY, np.concatenate([gamma, delta]),
                                       a, b, s.T))
        return model._lower_bound(data), collapsed

    rng = np.random.default_rng(seed)
    first = both(np.ones(k), np.ones(3), np.ones(k), np.ones(3), 1.0, 1.0)
    second = both(np.exp(rng.standard_normal(k)), np.exp(rng.standard_normal(3)),
                  np.exp(rng.standard_normal(k)), np.exp(rng.standard_normal(3)), 3.0, 0.2)
    assert second[0] - first[0] == pytest.approx(second[1] - first[1], rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("lengths", [(60,), (40, 30, 25)])
def test_init_state_evidence_is_the_change_of_ln_z(lengths):
    """The initial-state prior's part of ln Z from the messages equals the change of
    the smoother's ln Z when the prior changes (q(theta) fixed), and the jump
    raises it."""
    X, U, lengths = _data(1, lengths=lengths)
    model = VBLinearDynamicalSystem(3, hyperparameter_schedule=None, rotations=False,
                                    prune_states=False, init_state_cov="full")
    data = _fitted_steps(model, X, U, lengths, 6)
    mu0, S0 = model.init_state_mean_.copy(), model.init_state_cov_.copy()
    lnz0 = np.sum(model._q_x.ln_z)
    P, h = _messages(model._q_x.omega0, model._q_x.ups0, mu0, S0)
    rng = np.random.default_rng(0)
    B = rng.standard_normal((3, 3))
    mu1, S1 = rng.standard_normal(3), B @ B.T + 0.1 * np.eye(3)
    model.init_state_mean_, model.init_state_cov_ = mu1, S1
    model._vbe(data)
    assert np.sum(model._q_x.ln_z) - lnz0 == pytest.approx(
        init_state_evidence(P, h, mu1, S1) - init_state_evidence(P, h, mu0, S0), abs=1e-7)
    model.init_state_mean_, model.init_state_cov_ = mu0, S0
    model._vbe(data)
    mu2, S2, gain = optimal_init_state(model._q_x.omega0, model._q_x.ups0, mu0, S0,
                                       "full", 1e-6)
    assert gain > 0
    model.init_state_mean_, model.init_state_cov_ = mu2, S2
    model._vbe(data)
    assert np.sum(model._q_x.ln_z) - lnz0 == pytest.approx(gain, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_bound_never_decreases_at_any_step_with_the_exact_updates(seed):
    rng = np.random.default_rng(seed)
    X, U, lengths = _data(seed, k=int(rng.integers(1, 4)), p=int(rng.integers(2, 6)),
                          d=int(rng.integers(0, 3)),
                          lengths=(50,) if seed == 0 else (40, 30))
    model = VBLinearDynamicalSystem(3, hyperparameter_schedule=(0, 2, 4), max_iter=40,
                                    bound_check="steps", random_state=seed,
                                    ard_check=False, prune_interval=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, U=U if U.shape[1] else None, lengths=lengths)
    bounds = model.lower_bounds_
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))


def test_converged_is_honest():
    X, _, _ = _data(1, k=2, p=3, d=0, lengths=(80,))
    common = dict(n_states=2, random_state=0, hyperparameter_schedule=(2, 4, 6),
                  fit_intercept=False)
    with pytest.warns(ConvergenceWarning):
        short = VBLinearDynamicalSystem(max_iter=15, **common).fit(X)
    assert not short.converged_
    # stopped by max_iter with the increments still shrinking: gain left above tol
    assert predicted_remaining_gain(list(short.lower_bounds_)) > short.tol
    fit = VBLinearDynamicalSystem(**common).fit(X)
    assert fit.converged_ and fit.n_iter_ < fit.max_iter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        long = VBLinearDynamicalSystem(max_iter=2000, tol=1e-10, **common).fit(X)
    assert long.n_iter_ > fit.n_iter_
    assert fit.lower_bound_ >= long.lower_bound_ - 1e-6 * abs(long.lower_bound_)
    assert short.lower_bound_ < long.lower_bound_ - 1e-6 * abs(long.lower_bound_)


def test_predicted_remaining_gain_on_a_geometric_sequence():
    r = 0.8
    trace = list(np.cumsum(0.5 * r ** np.arange(12)))
    assert predicted_remaining_gain(trace) == pytest.approx(0.5 * r**11 * r / (1 - r))
    # the exact tail of the geometric series
    assert predicted_remaining_gain(trace) == pytest.approx(0.5 / (1 - r) - trace[-1])
    assert predicted_remaining_gain(trace[:4]) == np.inf
    assert predicted_remaining_gain(list(np.cumsum(1.1 ** np.arange(12)))) == np.inf
    # a sublinear creep (increments 1/n^2) has ratios tending to 1: still finite but
    # larger than the last increment by the factor r/(1-r)
    creep = list(np.cumsum(1.0 / np.arange(1, 200) ** 2))
    assert predicted_remaining_gain(creep) > 50 * (creep[-1] - creep[-2])
    assert predicted_remaining_gain([-100.0] * 3) == 0.0
    steps = 0.3 ** np.repeat(np.arange(8), 3)
    gain = predicted_remaining_gain(list(np.cumsum(steps)), window=3, block=3)
    assert gain == pytest.approx(3 * 0.3**7 * 0.3 / 0.7)
