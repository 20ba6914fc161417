"""The VBE step of a discrete DAG on compressed rows, and what it adds up.

:func:`vbe_patterns` is the exact inference of every pattern under the sub-normalised
tables ``exp E[ln theta]`` (:func:`~sklearn_vb.dag.kernels.enumerate_posterior`, the
kernel the compiled VBEM run calls at every iteration); :func:`vbe_statistics` reduces it
to what the VBM step and the bound need, each a sum over rows: the expected family
counts, ``sum_i w_i ln Z_i`` and the entropy ``sum_i w_i H_i`` of q(hidden).  Those of
chunks of rows therefore add up to those of all rows, which is how a fit on a dask array
runs the step (one task per chunk, :mod:`sklearn_vb.dag._distributed`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kernels import enumerate_posterior, pattern_log_normalisers

__all__ = ["VBEStatistics", "log_likelihood", "vbe_patterns", "vbe_statistics"]


class VBEStatistics(NamedTuple):
    """The VBE step of some rows, as sums over them."""

    counts: np.ndarray  # expected family counts, flat (P,)
    log_normaliser: float  # sum_i w_i ln Z_i
    entropy: float  # sum_i w_i H[q(hidden_i)]

    def __add__(self, other):
        return VBEStatistics(self.counts + other.counts,
                             self.log_normaliser + other.log_normaliser,
                             self.entropy + other.entropy)


def vbe_patterns(pdata, expected_log, post=None):
    """Exact inference of the patterns ``pdata`` under ``expected_log`` (flat
    ``E[ln theta]``, or ``ln theta`` of a point): the expected counts and every
    pattern's ``ln Z`` and posterior entropy.  ``post`` is a work buffer (one entry per
    configuration row)."""
    counts = np.empty(expected_log.shape[0])
    log_z = np.empty(pdata.n_patterns)
    entropy = np.empty(pdata.n_patterns)
    if post is None:
        post = np.empty(pdata.idx.shape[0])
    enumerate_posterior(expected_log, pdata.idx, pdata.row_start, pdata.weights, counts, post,
                        log_z, entropy)
    return counts, log_z, entropy


def vbe_statistics(pdata, expected_log):
    """:func:`vbe_patterns` summed over the patterns (with their weights)."""
    counts, log_z, entropy = vbe_patterns(pdata, expected_log)
    return VBEStatistics(counts, float(np.dot(pdata.weights, log_z)),
                         float(np.dot(pdata.weights, entropy)))


def log_likelihood(pdata, log_theta):
    """``sum_i w_i ln p(x_i | theta)`` over the patterns ``pdata``."""
    log_z = np.empty(pdata.n_patterns)
    pattern_log_normalisers(log_theta, pdata.idx, pdata.row_start, log_z)
    return float(np.dot(pdata.weights, log_z))
