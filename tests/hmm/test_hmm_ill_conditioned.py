"""VBHiddenMarkov with Gaussian emissions on rank-deficient data and ill-conditioned
Wishart scales: the bound must be evaluated accurately enough that no VBEM step appears
to lower it by more than round-off.

With fewer samples than features, the default scale prior (the data covariance plus a
small floor) has a condition number of about 1e6; a Wishart KL or a precision factor
computed through explicit inverses then loses about 1e-4 nats and the bound jitters.
"""

import warnings

import numpy as np
import pytest
from scipy.stats import special_ortho_group
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.base import bound_round_off
from sklearn_vb.hmm import VBHiddenMarkov


def two_level_data(seed, n_samples, n_features):
    """Gaussian noise around one of two levels, as in the monotonicity property test."""
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n_samples, n_features))
            + 3.0 * rng.integers(0, 2, size=(n_samples, 1)))


def fit_bounds(X, lengths, **params):
    """Bound history of a fit that raises as soon as one VBEM step lowers the bound."""
    model = VBHiddenMarkov(emission="gaussian", init_params="random", max_iter=30, tol=0.0,
                           bound_check="steps", **params)
    with warnings.catch_warnings():
        # tol=0 runs all max_iter iterations by design
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, lengths=lengths)
    return model.lower_bounds_


def assert_never_decreases(bounds):
    assert np.all(np.isfinite(bounds))
    assert np.all(np.diff(bounds) >= -bound_round_off(bounds[1:])), np.diff(bounds)


@pytest.mark.parametrize("n_samples, n_features, seed", [(2, 3, 1), (3, 4, 4)])
def test_full_covariance_fewer_samples_than_features(n_samples, n_features, seed):
    # the default scale prior is rank-deficient data covariance + floor: cond ~ 1e6
    X = two_level_data(seed, n_samples, n_features)
    assert_never_decreases(
        fit_bounds(X, [n_samples], n_components=2, covariance_type="full", random_state=seed)
    )


@pytest.mark.parametrize("covariance_type", ["diag", "full"])
def test_constant_feature(covariance_type):
    # a constant feature has zero variance: only the floor keeps its prior scale positive
    X = two_level_data(0, 30, 3)
    X[:, 1] = 0.1
    assert_never_decreases(
        fit_bounds(X, [30], n_components=3, covariance_type=covariance_type, random_state=0)
    )


def test_user_scale_prior_with_condition_number_1e12():
    Q = special_ortho_group.rvs(3, random_state=0)
    scale_prior = (Q * np.array([1.0, 1e-6, 1e-12])) @ Q.T
    scale_prior = 0.5 * (scale_prior + scale_prior.T)
    X = two_level_data(2, 40, 3)
    assert_never_decreases(
        fit_bounds(X, [20, 20], n_components=3, covariance_type="full", random_state=3,
                   scale_prior=scale_prior)
    )
