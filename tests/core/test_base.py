"""The VBEM template loop, exercised on the VB mixture of Bernoullis.

The Bernoulli mixture has an exact log evidence by enumerating assignments, so the
loop's bound can be checked against the truth, not only for monotonicity.
"""

import pickle
import warnings

import numpy as np
import pytest
from scipy.special import betaln
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb._commands.bernoulli_mixture import (
    VBBernoulliMixture,
    bernoulli_mixture_log_evidence,
)
from sklearn_vb.base import BoundDecreaseError, BoundDecreaseWarning, bound_round_off


def binary_data(n=60, d=6, seed=0):
    rng = np.random.default_rng(seed)
    means = np.array([[0.9] * (d // 2) + [0.1] * (d - d // 2), [0.1] * (d // 2) + [0.9] * (d - d // 2)])
    z = rng.integers(0, 2, size=n)
    return (rng.random((n, d)) < means[z]).astype(float)


def test_bound_history_never_decreases_over_many_problems():
    for seed in range(15):
        X = binary_data(n=40, d=5, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = VBBernoulliMixture(n_components=3, random_state=seed, max_iter=100, tol=0).fit(X)
        assert np.all(np.diff(model.lower_bounds_) >= -bound_round_off(model.lower_bound_))
        assert model.lower_bound_ == model.lower_bounds_[-1]


def test_step_by_step_check_passes_on_a_correct_model():
    X = binary_data(seed=3)
    VBBernoulliMixture(n_components=3, bound_check="steps", random_state=0, max_iter=50).fit(X)


def test_one_component_bound_equals_exact_evidence():
    # With one component there is no latent uncertainty: q(θ) is the exact posterior
    # and the bound is the Beta-Bernoulli evidence.
    X = binary_data(n=25, d=4, seed=1)
    model = VBBernoulliMixture(n_components=1, max_iter=5, tol=1e-12).fit(X)
    ones = X.sum(axis=0)
    exact = np.sum(betaln(1 + ones, 1 + X.shape[0] - ones) - betaln(1, 1))
    assert model.lower_bound_ == pytest.approx(exact, abs=1e-9)
    assert bernoulli_mixture_log_evidence(X[:8], 1) == pytest.approx(
        np.sum(betaln(1 + X[:8].sum(0), 1 + 8 - X[:8].sum(0)) - betaln(1, 1)), abs=1e-10
    )


def test_bound_is_below_enumerated_exact_evidence():
    X = binary_data(n=9, d=3, seed=4)
    exact = bernoulli_mixture_log_evidence(X, 2)
    for seed in range(5):
        model = VBBernoulliMixture(n_components=2, random_state=seed, max_iter=500, tol=1e-10).fit(X)
        assert model.lower_bound_ <= exact + 1e-9
        # the bound is not vacuous: it is within a few nats of the truth
        assert model.lower_bound_ > exact - 3.0


def test_n_init_keeps_the_best_restart():
    # five overlapping clusters fitted with six components: many local optima
    rng = np.random.default_rng(5)
    z = rng.integers(0, 5, 80)
    X = (rng.random((80, 10)) < rng.random((5, 10))[z]).astype(float)
    improved = 0
    for seed in range(6):
        single = VBBernoulliMixture(n_components=6, n_init=1, random_state=seed, max_iter=200).fit(X)
        best = VBBernoulliMixture(n_components=6, n_init=5, random_state=seed, max_iter=200).fit(X)
        # the first restart of `best` is `single` (same random stream), so keeping the best
        # can never do worse, and the stored state is the one whose bound is reported
        assert best.lower_bound_ >= single.lower_bound_ - 1e-12
        assert best.lower_bound_ == best.lower_bounds_[-1]
        improved += best.lower_bound_ > single.lower_bound_ + 1e-6
    # with several local optima, later restarts must sometimes win
    assert improved >= 1


def test_warm_start_continues_from_the_fitted_state():
    X = binary_data(n=50, seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = VBBernoulliMixture(n_components=3, max_iter=3, tol=0, random_state=0, warm_start=True)
        model.fit(X)
        first = model.lower_bounds_.copy()
        model.fit(X)
    assert len(model.lower_bounds_) == 6
    np.testing.assert_array_equal(model.lower_bounds_[:3], first)
    # continuing cannot lower the bound
    assert model.lower_bounds_[3] >= first[-1] - 1e-9
    # and equals running 6 iterations straight
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        straight = VBBernoulliMixture(n_components=3, max_iter=6, tol=0, random_state=0).fit(X)
    np.testing.assert_allclose(model.lower_bounds_, straight.lower_bounds_, rtol=1e-12)


def test_convergence_warning_when_max_iter_is_hit():
    X = binary_data(seed=8)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = VBBernoulliMixture(n_components=3, max_iter=2, tol=0, random_state=0).fit(X)
    assert not model.converged_
    assert model.n_iter_ == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = VBBernoulliMixture(n_components=2, max_iter=500, random_state=0).fit(X)
    assert model.converged_


def test_results_repeat_with_random_state_and_pickle():
    X = binary_data(seed=9)
    a = VBBernoulliMixture(n_components=3, random_state=11, n_init=2).fit(X)
    b = VBBernoulliMixture(n_components=3, random_state=11, n_init=2).fit(X)
    np.testing.assert_array_equal(a.lower_bounds_, b.lower_bounds_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.predict_proba(X), c.predict_proba(X))
    d = clone(a).fit(X)
    np.testing.assert_array_equal(a.lower_bounds_, d.lower_bounds_)


def test_input_is_not_modified():
    X = binary_data(seed=10)
    before = X.copy()
    VBBernoulliMixture(n_components=2, random_state=0).fit(X)
    np.testing.assert_array_equal(X, before)


class _BrokenMixture(VBBernoulliMixture):
    """A wrong VBM step from the second iteration on: the Beta posteriors are
    distorted, so the bound drops and the loop must notice."""

    def _step_vbm(self, X, iteration):
        super()._step_vbm(X, iteration)
        if iteration >= 2:
            # a wrong update: shrink the posterior counts towards zero
            self.beta_a_ = 0.5 * self.beta_a_ + 0.01
            self.beta_b_ = 2.0 * self.beta_b_


def test_decreasing_bound_raises_and_names_the_step():
    X = binary_data(seed=12)
    with pytest.raises(BoundDecreaseError, match="decreased"):
        _BrokenMixture(n_components=2, random_state=0, max_iter=20, tol=0).fit(X)
    with pytest.raises(BoundDecreaseError, match="step 'vbm'"):
        _BrokenMixture(n_components=2, random_state=0, max_iter=20, tol=0, bound_check="steps").fit(X)
    with pytest.warns(BoundDecreaseWarning):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _BrokenMixture(n_components=2, random_state=0, max_iter=20, tol=0, bound_check="warn").fit(X)


def test_invalid_parameters_are_named():
    X = binary_data(seed=13)
    with pytest.raises(ValueError, match="max_iter"):
        VBBernoulliMixture(max_iter=0).fit(X)
    with pytest.raises(ValueError, match="bound_check"):
        VBBernoulliMixture(bound_check="sometimes").fit(X)
    with pytest.raises(ValueError, match="binary"):
        VBBernoulliMixture().fit(X + 0.5)
