"""Generators for mixtures of factor analysers (thesis §4.5)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_mixed_dimension_clusters", "make_noisy_spiral", "make_mfa",
           "make_embedded_clusters", "make_grid_clusters", "make_spaced_clusters"]


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


def _rotation(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])


def make_grid_clusters(n_samples_per_cluster=50, n_clusters=18, width=24.0, height=12.0,
                       min_distance=3.5, axis_sd=(0.5, 1.0), noise_variance=0.04,
                       random_state=None):
    """Elongated Gaussian clusters scattered in a ``width × height`` box of the plane
    (18 by default, as in thesis §4.5.1, Fig 4.3).

    Centres are drawn uniformly, one at a time, redrawing any closer than
    ``min_distance`` to an earlier one (an irregular layout: on a regular grid the
    halves of a split are alike along one axis, a local optimum of any mixture with a
    shared diagonal noise).  Each cluster is a one-factor analyser: elongated in a
    random direction with standard deviation drawn uniformly from ``axis_sd`` along it,
    plus isotropic noise of variance ``noise_variance`` shared by all clusters.
    Returns ``(X, labels)``.

    Examples
    --------
    >>> from sklearn_vb.datasets import make_grid_clusters
    >>> X, labels = make_grid_clusters(50, random_state=0)
    >>> X.shape, int(labels.max()) + 1
    ((900, 2), 18)
    """
    rng = check_random_state(random_state)
    centres = []
    for _ in range(1000 * n_clusters):
        c = rng.uniform(0.0, 1.0, 2) * [width, height]
        if all(np.hypot(*(c - o)) >= min_distance for o in centres):
            centres.append(c)
            if len(centres) == n_clusters:
                break
    else:
        raise ValueError("min_distance too large for the box: could not place "
                         f"{n_clusters} clusters.")
    loadings = [_rotation(rng.uniform(0.0, np.pi))[:, :1] * rng.uniform(*axis_sd)
                for _ in range(n_clusters)]
    return make_mfa([n_samples_per_cluster] * n_clusters, np.array(centres), loadings,
                    noise_variance, rng)


def make_embedded_clusters(n_samples_per_cluster=300, dims=(7, 4, 3, 2, 2, 1), n_features=10,
                           centre_range=3.0, noise_variance=0.01, random_state=None):
    """The embedded clusters of thesis §4.5.2 (Table 4.1): cluster ``c`` is a
    ``dims[c]``-dimensional Gaussian of unit variance in every intrinsic direction,
    embedded at a random orientation (orthonormal loadings) in ``n_features``
    dimensions, with centre uniform on ``[0, centre_range]`` in every dimension and
    sensor noise of variance ``noise_variance``.  Returns ``(X, labels)``.

    Examples
    --------
    >>> from sklearn_vb.datasets import make_embedded_clusters
    >>> X, labels = make_embedded_clusters(64, random_state=0)
    >>> X.shape, int(labels.max()) + 1
    ((384, 10), 6)
    """
    rng = check_random_state(random_state)
    centres = rng.uniform(0.0, centre_range, (len(dims), n_features))
    loadings = [np.linalg.qr(rng.standard_normal((n_features, max(d, 1))))[0][:, :d]
                for d in dims]
    return make_mfa([n_samples_per_cluster] * len(dims), centres, loadings, noise_variance, rng)


#: an irregular quadrilateral of unit sides (on a square the halves of a split are
#: alike along one axis, a local optimum of the shared-noise mixture)
_KITE = np.array([[0.0, 0.0], [1.0, 0.15], [0.25, 1.0], [1.2, 1.1]])


def make_spaced_clusters(n_samples=150, spacing=4.0, random_state=None):
    """Four unit-variance Gaussian clusters in the plane, neighbouring centres about
    ``spacing`` apart on an irregular quadrilateral (thesis §4.7.3, Fig 4.14: "150
    samples from 4 Gaussian clusters, with varying separations of their centres").
    Points are split as evenly as possible between the clusters.  Returns
    ``(X, labels)``.

    Examples
    --------
    >>> from sklearn_vb.datasets import make_spaced_clusters
    >>> X, labels = make_spaced_clusters(150, spacing=5.0, random_state=0)
    >>> X.shape, np.bincount(labels).tolist()
    ((150, 2), [38, 38, 37, 37])
    """
    rng = check_random_state(random_state)
    counts = np.full(4, n_samples // 4)
    counts[: n_samples % 4] += 1
    return make_mfa(counts, spacing * _KITE, [np.eye(2)] * 4, 0.0, rng)
