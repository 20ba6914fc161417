"""The reuse of the bound of an unchanged state and the early end of the ARD check's
second stage in VBLinearDynamicalSystem."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds import VBLinearDynamicalSystem
from sklearn_vb.lds._vbem import kl_terms, lower_bound


def _fresh_bound(model, data):
    """The bound of the model's stored state, computed from scratch."""
    return lower_bound(data, model._q_theta, model._stats, model._q_x,
                       model.init_state_mean_, model.init_state_cov_,
                       kl_terms(model._q_theta, *model._hyper()))


class _CheckedMemo(VBLinearDynamicalSystem):
    """Every reused bound is compared with a fresh evaluation of the same state."""

    def _lower_bound(self, data):
        value = super()._lower_bound(data)
        fresh = _fresh_bound(self, data)
        self._n_compared = getattr(self, "_n_compared", 0) + 1
        assert value == fresh, (value, fresh)
        return value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reused_bound_equals_a_fresh_evaluation_and_never_decreases(seed):
    params = make_lds_params(2, 4, 0, random_state=seed)
    X, _ = make_lds(params, [80], random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = _CheckedMemo(n_states=3, max_iter=70, random_state=seed,
                             bound_check="steps", prune_interval=10, prune_iter=5).fit(X)
    assert model._n_compared > 2 * model.n_iter_
    bounds = np.asarray(model.lower_bounds_)
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert not hasattr(model, "_bound_memo")  # the fitted model does not hold the data


def test_memo_notices_a_changed_hyperparameter():
    params = make_lds_params(2, 3, 0, random_state=0)
    X, _ = make_lds(params, [60], random_state=0)
    model = VBLinearDynamicalSystem(n_states=2, max_iter=5, random_state=0)
    data = model._check_fit_data(X)
    model._initialize(data, np.random.RandomState(0))
    model._vbm(data, model._stats)
    before = model._lower_bound(data)
    model.gamma_ = model.gamma_ * 3.0
    assert model._lower_bound(data) == _fresh_bound(model, data) != before
    model.gamma_[0] = 7.0  # changed in place
    assert model._lower_bound(data) == _fresh_bound(model, data)


def test_ard_check_second_stage_stops_only_when_it_cannot_win():
    model = VBLinearDynamicalSystem(n_states=2)
    model._abandon_below = 10.0
    rising = list(10.2 - 2.0 * 0.9 ** np.arange(1, 12))  # below 10 now, tends to 10.2
    converging_low = list(5.0 - 0.5 ** np.arange(1, 12))  # tends to 5
    assert model._watch_trace(40, converging_low, False) is False
    assert rising[-1] < 10.0
    assert model._watch_trace(40, rising, False) is None
    # not before the schedule has started every group, nor after a restart
    assert model._watch_trace(20, converging_low, False) is None
    assert model._watch_trace(40, converging_low, True) is None
    del model._abandon_below
    assert model._watch_trace(40, converging_low, False) is None
