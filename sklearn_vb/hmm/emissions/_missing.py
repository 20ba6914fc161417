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

__all__ = ["observed_parts", "impute_column_means"]


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


def check_observed_columns(X, family_name):
    """Refuse a fit data set in which some feature is never observed: its data-dependent
    default prior (and its parameters) would have no data at all."""
    never = np.flatnonzero(np.all(np.isnan(X), axis=0))
    if never.size:
        raise ValueError(
            f"X: feature {int(never[0])} is missing (NaN) in every row; {family_name} "
            "emissions need at least one observed value of every feature to fit.")
