"""k-means in one thread: k-means++ seeding, then Lloyd's iterations.

The starts of HMM fits label the frames by one k-means run.  scikit-learn's ``KMeans``
runs this algorithm too, but on the small data of one fit its cost is all fixed
overhead (input validation, thread-pool control, and OpenMP threads that wait on each
other when the cores are busy), paid by every fit of a structure search.  Here the
whole run is one compiled call.

It is the same algorithm as ``KMeans(n_clusters=K, n_init=1, random_state=seed)``:
greedy k-means++ with ``2 + int(ln K)`` candidates per centre on the centred data,
Lloyd's iterations until the labels stop changing or the squared centre shift falls to
``tol`` times the mean variance of the columns (at most ``max_iter``), an empty
cluster moved to the frame farthest from its centre, and the random numbers drawn from
``RandomState(seed)`` in the same order.  Away from exact ties (the order of equally
far frames, rounding in the last bit of a distance) it gives scikit-learn's labels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["kmeans"]


@njit(cache=True, nogil=True)
def _distances_to_frame(X, xx, p, out):
    """Squared distances (n,) of every frame to frame ``p``, as ``-2 x.y + |y|^2 +
    |x|^2`` clipped at zero (``xx`` the squared norms of the frames)."""
    n, D = X.shape
    for i in range(n):
        dot = 0.0
        for d in range(D):
            dot += X[i, d] * X[p, d]
        v = -2.0 * dot + xx[p] + xx[i]
        out[i] = v if v > 0.0 else 0.0


@njit(cache=True, nogil=True)
def _seed_indices(X, xx, first, uniforms):
    """Frames chosen as the initial centres by greedy k-means++: ``first``, then for
    every further centre the candidate (of those drawn with probability proportional to
    the squared distance to the nearest centre so far, by the rows of ``uniforms``)
    that leaves the smallest sum of squared distances."""
    n = X.shape[0]
    K = uniforms.shape[0] + 1
    L = uniforms.shape[1]
    chosen = np.empty(K, dtype=np.int64)
    chosen[0] = first
    closest = np.empty(n)
    _distances_to_frame(X, xx, first, closest)
    potential = 0.0
    for i in range(n):
        potential += closest[i]
    cumulative = np.empty(n)
    trial = np.empty((L, n))
    candidates = np.empty(L, dtype=np.int64)
    for c in range(1, K):
        total = 0.0
        for i in range(n):
            total += closest[i]
            cumulative[i] = total
        best, best_potential = 0, np.inf
        for t in range(L):
            j = np.searchsorted(cumulative, uniforms[c - 1, t] * potential)
            candidates[t] = min(j, n - 1)
            _distances_to_frame(X, xx, candidates[t], trial[t])
            p = 0.0
            for i in range(n):
                if closest[i] < trial[t, i]:
                    trial[t, i] = closest[i]
                p += trial[t, i]
            if p < best_potential:
                best, best_potential = t, p
        potential = best_potential
        closest[:] = trial[best]
        chosen[c] = candidates[best]
    return chosen


@njit(cache=True, nogil=True)
def _assign(X, centres, labels):
    """Index of the nearest centre of every frame (the first of equally near ones)."""
    n, D = X.shape
    K = centres.shape[0]
    cc = np.zeros(K)
    for j in range(K):
        for d in range(D):
            cc[j] += centres[j, d] * centres[j, d]
    for i in range(n):
        best, best_d = 0, np.inf
        for j in range(K):
            dot = 0.0
            for d in range(D):
                dot += X[i, d] * centres[j, d]
            v = -2.0 * dot + cc[j]
            if v < best_d:
                best, best_d = j, v
        labels[i] = best


@njit(cache=True, nogil=True)
def _move_to_far_frames(X, centres, sums, counts, labels):
    """Give every empty cluster the frame farthest from its centre (``sums`` and
    ``counts`` the per-cluster sums and sizes, updated in place); nothing when every
    frame sits on its centre (fewer distinct frames than clusters)."""
    n, D = X.shape
    empty = np.flatnonzero(counts == 0)
    if empty.shape[0] == 0:
        return
    dist = np.zeros(n)
    for i in range(n):
        for d in range(D):
            diff = X[i, d] - centres[labels[i], d]
            dist[i] += diff * diff
    if dist.max() == 0.0:
        return
    far = np.argsort(-dist, kind="mergesort")
    for e in range(empty.shape[0]):
        i = far[e]
        old = labels[i]
        for d in range(D):
            sums[old, d] -= X[i, d]
            sums[empty[e], d] = X[i, d]
        counts[empty[e]] = 1.0
        counts[old] -= 1.0


@njit(cache=True, nogil=True)
def _update(X, centres, labels, out):
    """New centres ``out`` (means of the clusters of ``labels``; an empty one at the
    largest cluster's centre); returns the summed squared shift from ``centres``."""
    n, D = X.shape
    K = centres.shape[0]
    out[:] = 0.0
    counts = np.zeros(K)
    for i in range(n):
        counts[labels[i]] += 1.0
        for d in range(D):
            out[labels[i], d] += X[i, d]
    _move_to_far_frames(X, centres, out, counts, labels)
    largest = np.argmax(counts)
    for j in range(K):
        if counts[j] > 0:
            alpha = 1.0 / counts[j]
            for d in range(D):
                out[j, d] *= alpha
    for j in range(K):
        if counts[j] <= 0:
            out[j] = out[largest]
    shift = 0.0
    for j in range(K):
        for d in range(D):
            diff = out[j, d] - centres[j, d]
            shift += diff * diff
    return shift


@njit(cache=True, nogil=True)
def _lloyd(X, centres, max_iter, tol):
    """Lloyd's iterations from ``centres`` (K, D): labels (n,) and final centres."""
    n = X.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    previous = labels.copy()
    centres = centres.copy()
    new = np.empty_like(centres)
    stable = False
    for _ in range(max_iter):
        _assign(X, centres, labels)
        shift = _update(X, centres, labels, new)
        centres, new = new, centres
        if np.array_equal(labels, previous):
            stable = True
            break
        if shift <= tol:
            break
        previous[:] = labels
    if not stable:
        # the labels of the final centres
        _assign(X, centres, labels)
    return labels, centres


def kmeans(X, n_clusters, seed, max_iter=300, tol=1e-4):
    """One k-means run on the rows of ``X`` (n, D), at least ``n_clusters`` of them.

    Parameters
    ----------
    X : ndarray of shape (n, D)
        Finite values.
    n_clusters : int
    seed : int
        Seed of the ``numpy.random.RandomState`` that draws the k-means++ seeding.
    max_iter : int
        Largest number of Lloyd iterations.
    tol : float
        The run stops when the summed squared shift of the centres is at most ``tol``
        times the mean variance of the columns of ``X``.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
    centres : ndarray of shape (n_clusters, D)
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    K = int(n_clusters)
    tolerance = float(np.mean(np.var(X, axis=0))) * tol
    # centred frames give more accurate distances from norms and dot products
    mean = X.mean(axis=0)
    Xc = np.ascontiguousarray(X - mean)
    xx = np.einsum("ij,ij->i", Xc, Xc)
    rng = np.random.RandomState(seed)
    first = rng.choice(n, p=np.full(n, 1.0 / n))
    n_trials = 2 + int(np.log(K))
    uniforms = np.empty((K - 1, n_trials))
    for c in range(K - 1):
        uniforms[c] = rng.uniform(size=n_trials)
    seeds = _seed_indices(Xc, xx, int(first), uniforms)
    labels, centres = _lloyd(Xc, Xc[seeds], int(max_iter), tolerance)
    return labels, centres + mean
