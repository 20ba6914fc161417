"""ARD structure recovery (Beal 2003, §5.4).

Measured rates over the fixed seed sets used below (default ``init_params="pca"``):
* 3-state system, p = 8, T = 300, fitted with n_states = 6 for 150 iterations:
  exactly 3 effective states for 6 of 6 seeds (from ``init_params="random"`` the
  same seeds stall on spurious static dimensions in most runs, see the docstring of
  the estimator).
* thesis §5.4.2 input experiment (B = 0, third column of D = 0, T = 100, n_states=4,
  300 iterations): every beta and delta_3 switched off, D columns 1-2 significant and
  no entry of B significant, 4 of 4 seeds.
* 3-state system with 2 N(0, 1) inputs (B, D with N(0, 1) entries) and an intercept,
  p = 8, T = 300, fitted with n_states = 6 for 300 iterations.  ARD alone
  (``prune_states=False``): exactly 3 effective states for 5 of the 6 seeds 0-5 (seed 1
  keeps a fourth dimension alive in C and dead in A, fed by the inputs through B: a
  local optimum, not a plateau of the schedule); at T = 1000 (the benchmark) 3, 4, 5, 4
  effective states for seeds 0-3.  The spurious dimensions route input effects
  (C_j B_j u_t instead of D u_t, or B_j u_{t-1} through A[:, j]) and end with a lower
  bound than a 3-state fit of the same data.  With the bound-guided pruning move
  (default): 3 states, all others removed, for 6 of 6 seeds at T = 300 and 4 of 4 at
  T = 1000, each with a higher bound than a 3-state fit run for the same number of
  iterations (the moves are accepted at iterations 81-83; removing a fourth, true,
  dimension costs about 1000 nats and is rejected).  At T = 1000 and 2000 iterations
  (seeds 0-3; 3-state fit / 6 states pruned / 6 states ARD only): F = -16712.3 /
  -16712.4 / -16765.5, -17098.5 / -17092.4 / -17149.3, -16533.1 / -16532.7 /
  -16580.7, -17486.2 / -17477.0 / -17543.0.
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
                                        prune_states=False, random_state=seed).fit(X)
    assert model.n_effective_states_ == 3
    active = model.active_states_
    # the switched-off dimensions have collapsed prior variances in both A and C
    assert np.max(1 / model.gamma_[~active]) < 1e-2 * np.min(1 / model.gamma_[active])
    assert np.max(1 / model.alpha_[~active]) < 1e-2 * np.min(1 / model.alpha_[active])
    # and the bound history never decreased
    assert np.all(np.diff(model.lower_bounds_) >= -1e-9 * np.abs(model.lower_bounds_[1:]))
    # the pruning move removes the three switched-off dimensions and raises the bound
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pruned = VBLinearDynamicalSystem(n_states=6, fit_intercept=False, max_iter=150,
                                         random_state=seed).fit(X)
    assert pruned.n_states_ == 3 and pruned.n_effective_states_ == 3
    assert pruned.lower_bound_ > model.lower_bound_


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


@pytest.mark.parametrize("seed", range(6))
def test_pruning_recovers_three_states_with_inputs_and_intercept(seed):
    params = make_lds_params(3, 8, 2, random_state=seed)
    U = np.random.default_rng(seed).standard_normal((300, 2))
    X, _ = make_lds(params, [300], U, random_state=seed)
    fits = {}
    for k in (6, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            # without rotation and translation moves, which speed up the 3-state fit
            # more than the 6-state one that spends iterations on the removals, and
            # without the comparison fits of ard_check (tested on their own)
            fits[k] = VBLinearDynamicalSystem(n_states=k, max_iter=300, rotations=False,
                                              translations=False, ard_check=False,
                                              random_state=seed).fit(X, U=U)
    model = fits[6]
    assert model.n_states_ == 3 and model.n_effective_states_ == 3
    assert model.kept_states_.shape == (3,)
    # removing spare dimensions is what the bound asks for: the pruned model ends
    # above a 3-state fit given the same number of iterations
    assert model.lower_bound_ > fits[3].lower_bound_
    assert np.all(np.diff(model.lower_bounds_) >= -1e-9 * np.abs(model.lower_bounds_[1:]))
    # the removed dimensions are NaN in the ARD history from their removal on
    hist = model.hyperparameter_history_["alpha"]
    assert hist.shape == (model.n_iter_, 6)
    assert np.array_equal(np.flatnonzero(np.isfinite(hist[-1])), model.kept_states_)


def test_ard_alone_keeps_spare_input_dimensions():
    # without the pruning move seed 1 keeps a fourth dimension alive in C and dead in
    # A, fed by the inputs through B, with a lower bound than the pruned fit
    params = make_lds_params(3, 8, 2, random_state=1)
    U = np.random.default_rng(1).standard_normal((300, 2))
    X, _ = make_lds(params, [300], U, random_state=1)
    fits = {}
    for prune in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[prune] = VBLinearDynamicalSystem(n_states=6, max_iter=300,
                                                  prune_states=prune, rotations=False,
                                                  ard_check=False,
                                                  random_state=1).fit(X, U=U)
    assert fits[False].n_states_ == 6 and fits[False].n_effective_states_ == 4
    assert fits[True].n_states_ == 3
    assert fits[True].lower_bound_ > fits[False].lower_bound_ + 10.0


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
                                            rotations=False, random_state=3).fit(X, U=U)
        bounds[init] = model.lower_bound_
    assert bounds["scaled-pca"] > bounds["pca"] + 200.0
    # the rotation moves grow the state scale directly: from the unit-variance start
    # they recover most of the difference in the same number of iterations
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        rotated = VBLinearDynamicalSystem(n_states=3, max_iter=100, tol=0.0,
                                          random_state=3).fit(X, U=U)
    assert rotated.lower_bound_ > bounds["pca"] + 1000.0
