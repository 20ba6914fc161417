"""Small two-cluster data and a short MFA fit shared by the tests of the MFA's
hyperparameter updates and rotation moves."""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb.mfa import VBMixtureFactorAnalysers


def two_cluster_data(seed, n=120, p=7, k=2):
    """Two clusters of ``n`` rows in ``p`` dimensions, each on its own ``k``-dimensional
    subspace with a different scale, plus isotropic noise."""
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(2):
        A = rng.normal(size=(p, k)) * (1.0 + c)
        parts.append(rng.normal(size=(n, k)) @ A.T + 0.3 * rng.normal(size=(n, p)) + 5 * c)
    return np.vstack(parts)


def short_fit(X, **kw):
    """A two-component, four-factor fit without search (``kw`` override), quiet about
    convergence."""
    params = dict(search=False, n_components=2, n_factors=4, random_state=0, max_iter=30)
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return VBMixtureFactorAnalysers(**params).fit(X)
