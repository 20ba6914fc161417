"""Generators for mixtures of factor analysers (thesis §4.5)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_mixed_dimension_clusters", "make_noisy_spiral", "make_mfa"]


def make_mfa(n_samples_per_component, centres, loadings, noise_variance, random_state=None):
    """Draw from a mixture of factor analysers ``y = Λ_s x + μ_s + ε``.

    Parameters
    ----------
    n_samples_per_component : sequence of int
    centres : array (S, p)
    loadings : list of S arrays of shape (p, k_s) (``k_s`` may be 0)
    noise_variance : float or array (p,)

    Returns
    -------
    X : ndarray (N, p)
    labels : ndarray (N,) of int

    Examples
    --------
    Two one-factor analysers in three dimensions, 50 and 30 points:

    >>> import numpy as np
    >>> from sklearn_vb.datasets import make_mfa
    >>> centres = np.array([[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]])
    >>> X, labels = make_mfa([50, 30], centres, np.ones((2, 3, 1)), 0.1, random_state=0)
    >>> X.shape, labels.shape
    ((80, 3), (80,))
    """
    rng = check_random_state(random_state)
    centres = np.asarray(centres, dtype=float)
    S, p = centres.shape
    psi = np.broadcast_to(np.asarray(noise_variance, dtype=float), (p,))
    parts, labels = [], []
    for s, n in enumerate(n_samples_per_component):
        L = np.asarray(loadings[s], dtype=float).reshape(p, -1)
        x = rng.standard_normal((n, L.shape[1]))
        parts.append(x @ L.T + centres[s] + rng.standard_normal((n, p)) * np.sqrt(psi))
        labels.append(np.full(n, s))
    return np.concatenate(parts), np.concatenate(labels)


def make_mixed_dimension_clusters(
    n_samples_per_cluster=200,
    dims=(1, 2, 3),
    n_features=10,
    scale=2.0,
    separation=12.0,
    noise_variance=0.05,
    random_state=None,
):
    """Clusters of different intrinsic dimension embedded in ``n_features`` dimensions.

    Cluster ``c`` is a ``dims[c]``-dimensional linear subspace with random orthonormal
    directions, factor standard deviation ``scale``, isotropic noise and a centre
    drawn at distance ``separation`` from the origin.  Returns ``(X, labels)``.

    Examples
    --------
    >>> from sklearn_vb.datasets import make_mixed_dimension_clusters
    >>> X, labels = make_mixed_dimension_clusters(random_state=0)
    >>> X.shape, labels.shape
    ((600, 10), (600,))
    """
    rng = check_random_state(random_state)
    centres, loadings = [], []
    for d in dims:
        direction = rng.standard_normal(n_features)
        centres.append(separation * direction / np.linalg.norm(direction))
        Q, _ = np.linalg.qr(rng.standard_normal((n_features, max(d, 1))))
        loadings.append(scale * Q[:, :d])
    return make_mfa(
        [n_samples_per_cluster] * len(dims), np.array(centres), loadings, noise_variance, rng
    )


def make_noisy_spiral(n_samples=800, noise_variance=0.5, random_state=None):
    """The shrinking spiral of Ueda et al. (2000), thesis eqs. 4.86–4.87:
    ``y = [(13 - t/2) cos t, -(13 - t/2) sin t, t] + w`` with ``t ~ U[0, 4π]`` and
    ``w ~ N(0, noise_variance I)``.  Returns ``(X, t)``.

    Examples
    --------
    >>> from sklearn_vb.datasets import make_noisy_spiral
    >>> X, t = make_noisy_spiral(800, random_state=0)
    >>> X.shape, t.shape
    ((800, 3), (800,))
    """
    rng = check_random_state(random_state)
    t = rng.uniform(0.0, 4.0 * np.pi, n_samples)
    r = 13.0 - 0.5 * t
    X = np.column_stack([r * np.cos(t), -r * np.sin(t), t])
    X += rng.standard_normal(X.shape) * np.sqrt(noise_variance)
    return X, t
