"""ARD structure recovery (thesis §5.4; spec/lds.md §13 item 8).

Measured rates over the fixed seed sets used below (default ``init_params="pca"``):
* 3-state system, p = 8, T = 300, fitted with n_states = 6 for 150 iterations:
  exactly 3 effective states for 6 of 6 seeds (from ``init_params="random"`` the
  same seeds stall on spurious static dimensions in most runs, see the docstring of
  the estimator).
* thesis §5.4.2 input experiment (B = 0, third column of D = 0, T = 100, n_states=4,
  300 iterations): every beta and delta_3 switched off, D columns 1-2 significant and
  no entry of B significant, 4 of 4 seeds.
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
