"""The check of VBLinearDynamicalSystem against bound lost by ARD switching states off."""

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.lds import VBLinearDynamicalSystem


def _oscillation(T=200, seed=0):
    """A noisy sinusoid: one output, two states needed for the oscillation."""
    rng = np.random.default_rng(seed)
    t = np.arange(T)
    return (np.sin(2 * np.pi * t / 25) + 0.3 * rng.standard_normal(T))[:, None]


def _fit(X, **kwargs):
    # from random starts ARD switches the states of the oscillation off in its first
    # iterations, before the dynamics are learned
    kwargs.setdefault("init_params", "random")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBLinearDynamicalSystem(n_states=2, max_iter=300, random_state=0,
                                       **kwargs).fit(X)


def test_switched_off_state_losing_bound_is_reported_and_replaced():
    X = _oscillation()
    unchecked = _fit(X, ard_check=False)
    assert unchecked.n_effective_states_ < 2  # ARD alone loses states
    with pytest.warns(UserWarning, match="ARD switched off") as record:
        checked = _fit(X)
    lost = float(re.search(r"lost ([0-9.e+]+) nats", str(record[-1].message)).group(1))
    # the kept fit is the better one, by the amount the warning names
    assert checked.n_effective_states_ > unchecked.n_effective_states_
    assert checked.lower_bound_ == pytest.approx(unchecked.lower_bound_ + lost, rel=1e-3)
    assert lost > 10.0
    # the kept fit is a complete fitted state: its bound history never decreased
    assert np.all(np.diff(checked.lower_bounds_) >= -1e-9 * np.abs(checked.lower_bounds_[1:]))
    assert checked.transform(X).shape == (len(X), checked.n_states_)
    assert checked.n_iter_ == len(checked.lower_bounds_)


def test_no_check_when_nothing_is_switched_off():
    X = _oscillation()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model = _fit(X, ard=False, init_params="pca")
    assert model.n_effective_states_ == 2


def test_check_counts_within_max_iter_and_runs_in_every_restart():
    X = _oscillation()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        model = VBLinearDynamicalSystem(n_states=2, max_iter=300, n_init=2,
                                        init_params="random", keep_restarts=True,
                                        random_state=0).fit(X)
    # the check's refit is reported on its own, not added to n_iter_
    assert model.n_iter_ <= model.max_iter
    assert model.n_iter_ == len(model.lower_bounds_)
    assert model.ard_check_iter_ > 0
    # every restart ran its own check and kept the better of its two fits
    assert len(model.restarts_) == 2
    assert all(r.state["ard_check_iter_"] > 0 for r in model.restarts_)
    assert model.lower_bound_ == max(r.lower_bound for r in model.restarts_)
