"""The compiled k-means of the HMM starts (:mod:`sklearn_vb._core.kernels.kmeans`).

Oracle: scikit-learn's ``KMeans(n_init=1, random_state=seed)``, the start it replaces.
It is the same algorithm drawing the same random numbers, so on continuous data (no
ties between distances) the labels must be scikit-learn's, in the same order; a
different seeding rule, random stream or stopping rule gives other labels on most of
these problems.  Near-ties decided by the last bit of a distance (BLAS kernels sum in
other orders) may differ on a rare problem, hence the allowance of one in twenty.
"""

import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from sklearn_vb._core.kernels.kmeans import kmeans


def _problems(count=20, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        D, K = int(rng.integers(1, 4)), int(rng.integers(1, 11))
        n = int(rng.integers(max(K, 20), 600))
        centres = 3.0 * rng.normal(size=(K, D))
        yield rng.normal(size=(n, D)) + centres[rng.integers(0, K, n)], K, int(rng.integers(2**31 - 1))


def test_labels_are_scikit_learns_on_continuous_data():
    same = 0
    for X, K, seed in _problems():
        ours = kmeans(X, K, seed)[0]
        theirs = KMeans(n_clusters=K, n_init=1, random_state=seed).fit_predict(X)
        same += np.array_equal(ours, theirs)
    assert same >= 19


def test_centres_are_the_means_of_their_clusters_and_labels_the_nearest():
    for X, K, seed in _problems(8, seed=1):
        labels, centres = kmeans(X, K, seed)
        assert labels.shape == (X.shape[0],) and centres.shape == (K, X.shape[1])
        d2 = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
        assert np.all(d2[np.arange(len(X)), labels] <= d2.min(axis=1) + 1e-9)
        for k in np.unique(labels):
            # the final labels are those of the final centres: at most a tolerance step apart
            np.testing.assert_allclose(centres[k], X[labels == k].mean(axis=0), atol=0.05)


def test_separated_clusters_are_found():
    rng = np.random.default_rng(3)
    truth = np.repeat(np.arange(4), 50)
    X = 20.0 * np.eye(4)[truth][:, :3] + rng.normal(scale=0.5, size=(200, 3))
    labels = kmeans(X, 4, 0)[0]
    assert adjusted_rand_score(truth, labels) == 1.0


def test_fewer_distinct_frames_than_clusters():
    X = np.repeat(np.array([[0.0], [1.0], [5.0]]), 10, axis=0)
    labels, centres = kmeans(X, 5, 0)
    assert labels.min() >= 0 and labels.max() < 5 and np.all(np.isfinite(centres))
    # frames with one value share a label, and the three values are told apart
    assert len({tuple(np.unique(labels[X[:, 0] == v])) for v in (0.0, 1.0, 5.0)}) == 3
    for v in (0.0, 1.0, 5.0):
        assert np.unique(labels[X[:, 0] == v]).size == 1


def test_reproducible_and_input_untouched():
    X = np.random.default_rng(4).normal(size=(100, 2))
    before = X.copy()
    a, b = kmeans(X, 3, 7), kmeans(X, 3, 7)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize("emission", ["gaussian", "poisson", "categorical"])
def test_hmm_starts_do_not_run_scikit_learns_kmeans(emission, monkeypatch):
    """The k-means start (Gaussian, Poisson) and the context start (third start of the
    categorical default) run the compiled k-means, not ``sklearn.cluster.KMeans``,
    whose fixed cost dominated small fits."""
    import sklearn.cluster

    from sklearn_vb import VBHiddenMarkov

    def refuse(*args, **kwargs):
        raise AssertionError("sklearn.cluster.KMeans was called")

    monkeypatch.setattr(sklearn.cluster, "KMeans", refuse)
    rng = np.random.default_rng(0)
    if emission == "categorical":
        X, params = rng.integers(0, 4, size=(200, 1)), {"n_symbols": 4}
    elif emission == "poisson":
        X, params = rng.poisson(3.0, size=(200, 2)), {}
    else:
        X, params = rng.normal(size=(200, 2)), {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = VBHiddenMarkov(3, emission=emission, max_iter=3, random_state=0, **params)
        m.fit(X, lengths=[100, 100])
    assert np.isfinite(m.lower_bound_)
