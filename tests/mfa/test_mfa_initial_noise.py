"""The initial sensor noise of a fit: what the initial loadings leave unexplained, not
the data's total variance, so that a fit at the true number of analysers finds the
clusters' own noise."""

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

from sklearn_vb import VBMixtureFactorAnalysers
from sklearn_vb.datasets import make_grid_clusters


@pytest.mark.parametrize("seed", [0, 1])
def test_fit_at_the_true_size_matches_a_full_covariance_mixture(seed):
    # six one-factor analysers with a shared noise: the model's own structure, so a fit
    # at K = 6 does as well per point as a full-covariance mixture fitted by EM; started
    # from the data's total variance the noise stayed several times too large and the
    # fit lost about half a nat per point
    X, _ = make_grid_clusters(50, n_clusters=6, width=24.0 / np.sqrt(3), height=12.0 / np.sqrt(3),
                              random_state=seed)
    ours = VBMixtureFactorAnalysers(n_components=6, search=False, random_state=seed).fit(X)
    gmm = GaussianMixture(6, covariance_type="full", random_state=seed).fit(X)
    assert ours.score(X) > gmm.score(X) - 0.1


def test_initial_noise_is_the_residual_of_the_initial_loadings():
    X, _ = make_grid_clusters(50, n_clusters=6, width=24.0 / np.sqrt(3), height=12.0 / np.sqrt(3),
                              random_state=0)
    est = VBMixtureFactorAnalysers(n_components=6, search=False, max_iter=1, random_state=0)
    est.fit(X)
    # standardised data have unit variance per column; the clusters' own noise is far less
    assert np.all(est.noise_variance_ < 0.1 * X.var(axis=0))
