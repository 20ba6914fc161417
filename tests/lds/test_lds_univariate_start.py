"""The start of a fit with more state dimensions than outputs (``init_params="pca"``)."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.lds import VBLinearDynamicalSystem
from sklearn_vb.lds._vbem import delay_embedding


def _noisy_sinusoid(T=200, period=25, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(T)
    return (np.sin(2 * np.pi * t / period) + 0.3 * rng.standard_normal(T))[:, None]


def test_default_fit_of_one_oscillating_output_keeps_the_oscillating_pair():
    # With one output the principal components of the outputs alone give the extra
    # state dimensions no signal; the fit then stays at the saddle where they are
    # dead and ARD switches them off: one decaying state, far below the cycle.
    X = _noisy_sinusoid()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = VBLinearDynamicalSystem(max_iter=100, random_state=0).fit(X)
    assert model.n_effective_states_ == 2
    active = model.active_states_
    eig = np.linalg.eigvals(model.A_mean_[np.ix_(active, active)])
    assert np.all(np.abs(eig.imag) > 0.1)  # a rotation, not two decays
    period = 2 * np.pi / np.abs(np.angle(eig[0]))
    assert abs(period - 25) < 2.5


def test_fixed_two_state_fit_without_ard_finds_the_cycle_from_every_start():
    X = _noisy_sinusoid()
    for seed in (0, 1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = VBLinearDynamicalSystem(n_states=2, ard=False, max_iter=60,
                                            random_state=seed).fit(X)
        # not the saddle where the second state stays dead (one real eigenvalue
        # near 0.9, the other near 0)
        assert np.all(np.abs(np.linalg.eigvals(model.A_mean_).imag) > 0.1)


def test_delay_embedding_lags_within_sequences():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 3))
    starts, ends = np.array([0, 5]), np.array([5, 12])
    Z = delay_embedding(X[:, :1], 4, starts, ends)
    L = Z.shape[1]
    assert L >= 4
    np.testing.assert_array_equal(Z[:, 0], X[:, 0])
    # a lag never reaches into the previous sequence: the first row stands in
    np.testing.assert_array_equal(Z[5, 1:], np.full(L - 1, X[5, 0]))
    np.testing.assert_array_equal(Z[7, 1], X[6, 0])
    np.testing.assert_array_equal(Z[7, 2], X[5, 0])
