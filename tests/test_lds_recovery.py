"""ARD structure recovery (thesis §5.4; spec/lds.md §13 item 8).

Measured rates over the fixed seed sets used below (default ``init_params="pca"``):
* 3-state system, p = 8, T = 300, fitted with n_states = 6 for 150 iterations:
  exactly 3 effective states for 6 of 6 seeds (from ``init_params="random"`` the
  same seeds stall on spurious static dimensions in most runs, see the docstring of
  the estimator).
* thesis §5.4.2 input experiment (B = 0, third column of D = 0, T = 100, n_states=4,
  300 iterations): every beta and delta_3 switched off, D columns 1-2 significant and
  no entry of B significant, 4 of 4 seeds.
* 3-state system with 2 N(0, 1) inputs (B, D with N(0, 1) entries) and an intercept,
  p = 8, T = 300, fitted with n_states = 6 for 300 iterations: exactly 3 effective
  states for 5 of the 6 seeds 0-5 (seed 1 keeps a fourth dimension alive in C and dead
  in A, fed by the inputs through B: a local optimum, not a plateau of the schedule).
  At T = 1000 (the benchmark) the same set-up recovers 3 states less often within
  300 iterations (seeds 0-3: 3, 4, 5, 4 effective states); the spurious dimensions
  route input effects (C_j B_j u_t instead of D u_t, or B_j u_{t-1} through A[:, j])
  and end with a lower bound than a 3-state fit of the same data.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.datasets import make_lds, make_lds_input_experiment, make_lds_params
from sklearn_vb.lds import VBLinearDynamicalSystem


@pytest.mark.parametrize("seed", range(6))
def test_ard_recovers_three_states_out_of_six(seed):
    params = make_lds_params(3, 8, 0, random_state=seed)
    X, _ = make_lds(params, [300], random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = VBLinearDynamicalSystem(n_states=6, fit_intercept=False, max_iter=150,
                                        random_state=seed).fit(X)
    assert model.n_effective_states_ == 3
    active = model.active_states_
    # the switched-off dimensions have collapsed prior variances in both A and C
    assert np.max(1 / model.gamma_[~active]) < 1e-2 * np.min(1 / model.gamma_[active])
    assert np.max(1 / model.alpha_[~active]) < 1e-2 * np.min(1 / model.alpha_[active])
    # and the bound history never decreased
    assert np.all(np.diff(model.lower_bounds_) >= -1e-9 * np.abs(model.lower_bounds_[1:]))


@pytest.mark.parametrize("seed", range(4))
def test_ard_switches_off_irrelevant_inputs(seed):
    X, U, _, params = make_lds_input_experiment(100, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = VBLinearDynamicalSystem(n_states=4, fit_intercept=False, max_iter=300,
                                        random_state=seed).fit(X, U=U)
    used = min(1 / model.delta_[0], 1 / model.delta_[1])
    assert np.all(1 / model.beta_ < 1e-2 * used)  # inputs do not drive the states
    assert 1 / model.delta_[2] < 1e-3 * used  # the noise input is ignored
    sig = model.significant_inputs()
    assert not sig["B"].any()
    assert not sig["D"][:, 2].any()
    assert sig["D"][:, :2].sum() >= 7  # nearly every true D entry is significant
    # the sign pattern of the used columns of D is recovered where the effect is large
    big = np.abs(params["D"][:, :2]) > 3
    assert np.all(np.sign(model.D_mean_[:, :2][big]) == np.sign(params["D"][:, :2][big]))


def test_ard_recovers_three_states_with_inputs_and_intercept():
    recovered = []
    for seed in range(6):
        params = make_lds_params(3, 8, 2, random_state=seed)
        U = np.random.default_rng(seed).standard_normal((300, 2))
        X, _ = make_lds(params, [300], U, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = VBLinearDynamicalSystem(n_states=6, max_iter=300,
                                            random_state=seed).fit(X, U=U)
        recovered.append(model.n_effective_states_ == 3)
        assert 3 <= model.n_effective_states_ <= 4
        assert np.all(np.diff(model.lower_bounds_)
                      >= -1e-9 * np.abs(model.lower_bounds_[1:]))
    assert sum(recovered) >= 5


def test_scaled_pca_start_reaches_a_higher_bound_sooner():
    # persistent input-driven states: the unit-variance PCA start spends hundreds of
    # iterations growing the state scale (Q = I fixes it at 1 / (1 - a^2))
    params = make_lds_params(3, 8, 2, random_state=3)
    U = np.random.default_rng(3).standard_normal((1000, 2))
    X, _ = make_lds(params, [1000], U, random_state=3)
    bounds = {}
    for init in ("pca", "scaled-pca"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = VBLinearDynamicalSystem(n_states=3, max_iter=100, tol=0.0,
                                            init_params=init, bound_check="steps",
                                            random_state=3).fit(X, U=U)
        bounds[init] = model.lower_bound_
    assert bounds["scaled-pca"] > bounds["pca"] + 200.0
