"""The birth/death search of VBMixtureFactorAnalysers returns the best state it reached:
never below a fixed-size fit at its final number of components or at the number before
its last accepted birth, nor below a state it passed through; and its restarts
(``n_init``) explore different structures."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa import VBMixtureFactorAnalysers


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(random_state=0, **kw).fit(X)


def _wine(subset):
    # standardised wine, 120 of its 178 rows: small data on which the greedy search
    # used to stop 5-15 nats below a fixed-size fit at its own number of components
    X = load_wine().data
    X = (X - X.mean(0)) / X.std(0)
    return X[np.random.RandomState(subset).permutation(len(X))[:120]]


@pytest.mark.parametrize("subset", [1, 3])
def test_search_not_below_fixed_size_fit_or_its_history(subset):
    X = _wine(subset)
    m = _fit(X)
    fixed = _fit(X, n_components=m.n_components_, search=False)
    # a fixed-size fit from the same seed converges to its own optimum: the search's
    # refit of its final size starts there, so it can only be higher (up to the tol
    # of either run's stopping rule)
    assert m.lower_bound_ >= fixed.lower_bound_ - 1.0
    # every state the search passed through (its iterations, before any death) is
    # at most the returned bound
    assert m.lower_bound_ >= np.max(m.search_history_["bound"]) - 1e-6 * abs(m.lower_bound_)
    assert m.lower_bounds_[-1] == pytest.approx(m.lower_bound_)


def _two_lines(n_per_cluster, seed):
    # two one-factor clusters far apart in five dimensions
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(size=(n_per_cluster, 1)) @ rng.normal(size=(1, 5))
                           + rng.normal(scale=0.1, size=(n_per_cluster, 5)) + centre
                           for centre in (0, 10)])


def test_search_not_below_fixed_size_fit_before_its_last_birth():
    # here the birth to two components is accepted before the two-component state has
    # converged; the next birth beats that unconverged state and the search used to end
    # with three analysers about 20 nats below a fixed two-component fit
    X = _two_lines(100, seed=0)
    m = _fit(X)
    births = [move for move in m.search_history_["moves"] if move[2]]
    assert births, "the search accepted no birth: the case tests nothing"
    fixed_two = _fit(X, n_components=2, search=False)
    assert m.lower_bound_ >= fixed_two.lower_bound_ - 1.0
    assert m.n_components_ == 2


def test_restarts_of_the_search_differ_and_the_best_is_kept():
    X = _wine(0)
    one = _fit(X)
    three = _fit(X, n_init=3)
    bounds = three.restart_lower_bounds_
    assert bounds.shape == (3,)
    assert three.lower_bound_ == pytest.approx(bounds.max())
    # the first restart is the n_init=1 fit; the others start their births elsewhere
    assert bounds[0] == pytest.approx(one.lower_bound_, abs=1e-6 * abs(one.lower_bound_))
    assert np.ptp(bounds) > 1e-3
    assert three.lower_bound_ >= one.lower_bound_ - 1e-6 * abs(one.lower_bound_)
