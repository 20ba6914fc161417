"""Missing entries (NaN) of vector-valued frames, marginalised by the emission families.

Under the missing-at-random assumption the likelihood of a frame is that of its observed
entries; for emission densities that factorise over the dimensions given the state
(Poisson counts, diagonal Gaussians) a missing entry drops out of the frame's
log-likelihood and of every sufficient statistic.  The families compute with the frames
with their missing entries set to 0 and a mask of the observed ones, so that a product
with the mask removes every missing entry without a NaN reaching an arithmetic operation.
"""

from __future__ import annotations

import numpy as np

__all__ = ["observed_parts", "impute_column_means", "observed_counts_and_means",
           "check_observed_counts", "fill_missing", "missing_patterns"]


def observed_parts(X):
    """``(X0, observed)``: ``X`` with its missing entries set to 0 and the float mask
    (1.0 observed, 0.0 missing) of its entries; ``(X, None)`` when nothing is missing."""
    missing = np.isnan(X)
    if not missing.any():
        return X, None
    return np.where(missing, 0.0, X), (~missing).astype(float)


def impute_column_means(X):
    """``X`` with every missing entry replaced by the mean of the observed entries of
    its column (for the heuristics that start a fit, e.g. k-means); ``X`` itself when
    nothing is missing.  A column with no observed entry gets 0."""
    missing = np.isnan(X)
    if not missing.any():
        return X
    counts = (~missing).sum(axis=0)
    means = np.where(missing, 0.0, X).sum(axis=0) / np.maximum(counts, 1)
    return np.where(missing, means[None, :], X)


def fill_missing(X, values):
    """``X`` with the missing entries of every column replaced by ``values`` (D,) (the
    whole data's column means, for a start computed chunk by chunk); ``X`` itself when
    nothing is missing or ``values`` is None."""
    if values is None or X.dtype.kind != "f":
        return X
    missing = np.isnan(X)
    if not missing.any():
        return X
    return np.where(missing, np.asarray(values)[None, :], X)


def observed_counts_and_means(X):
    """``(counts, means)`` (D,) of the observed entries of every column of ``X`` (which
    holds some NaN); a column with no observed entry has mean 0 (so that merging it
    with other chunks' moments, weighted by its count 0, adds nothing)."""
    missing = np.isnan(X)
    counts = (~missing).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(missing, 0.0, X).sum(axis=0) / counts
    return counts, np.where(counts > 0, means, 0.0)


def check_observed_counts(counts, family_name):
    """Refuse a fit data set in which some feature is never observed (``counts`` (D,)
    the observed entries of every feature): its data-dependent default prior (and its
    parameters) would have no data at all."""
    never = np.flatnonzero(np.asarray(counts) == 0)
    if never.size:
        raise ValueError(
            f"X: feature {int(never[0])} is missing (NaN) in every row; {family_name} "
            "emissions need at least one observed value of every feature to fit.")


def missing_patterns(X):
    """The distinct patterns of observed entries of the frames ``X`` (n, D), with their
    frames: a list of ``(observed, rows)``, ``observed`` a (D,) bool mask and ``rows``
    the indices of the frames with that pattern.  Families whose frame density couples
    the dimensions compute once per pattern (at most ``min(n, 2^D)`` of them), never
    once per frame."""
    observed = ~np.isnan(X)
    patterns, inverse = np.unique(observed, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(patterns.shape[0] + 1))
    return [(patterns[p], order[bounds[p]:bounds[p + 1]]) for p in range(patterns.shape[0])]
