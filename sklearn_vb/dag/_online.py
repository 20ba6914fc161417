"""Online (stochastic natural-gradient) variational Bayes for the discrete DAG: the
statistics of a minibatch of rows and the natural-gradient step on q(theta).

Hoffman, Blei, Wang & Paisley (2013), "Stochastic variational inference", Algorithm 1,
with scikit-learn's ``LatentDirichletAllocation`` conventions (step sizes and minibatches
from :mod:`sklearn_vb._core.online`).  The global variational parameters are the
Dirichlet counts ``alpha`` of every CPT row; the local ones are q(hidden) of every row,
the exact posterior over the joint configurations of its unobserved nodes.  One step:

1. the local step, exact: the VBE step of the batch fit on the minibatch's rows
   (:func:`~sklearn_vb.dag.kernels.enumerate_posterior` under the current
   ``E[ln theta]``), giving its expected family counts ``N_b`` and ``sum_i ln Z_i``
   (:func:`minibatch_statistics`);
2. the intermediate global parameters, the VBM update as if the data set were
   ``scale = total_samples / n_b`` copies of the minibatch (``n_b`` its rows, or their
   total weight): ``alpha_hat = lambda + scale * N_b``;
3. ``alpha <- (1 - rho) alpha + rho alpha_hat``, with
   ``rho = (learning_offset + n_batch_iter)^(-learning_decay)``.

The natural parameters of a Dirichlet are ``alpha - 1``, so step 3 is the convex
combination of the natural parameters, which for a conjugate-exponential model is a
natural-gradient step of length rho (Hoffman et al. 2013, eq. 25).  It is written as
``alpha = lambda + N_eff`` with effective counts
``N_eff = (1 - rho) (alpha - lambda) + rho scale N_b``, and the new q(theta), its
``E[ln theta]`` and its KL from the prior are the batch VBM step
(:func:`~sklearn_vb.dag.kernels.dirichlet_update`) of those counts: with rho = 1 and
scale = 1 the step is that VBM step exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kernels import dirichlet_update, enumerate_posterior
from .structure import prepare_patterns

__all__ = ["MinibatchStatistics", "OnlineStep", "minibatch_statistics", "natural_step"]


class MinibatchStatistics(NamedTuple):
    """What the local (VBE) step of one minibatch reports."""

    counts: np.ndarray  # expected family counts N_b, flat (P,)
    log_normaliser: float  # sum over its rows of w_i ln Z_i
    weight: float  # its number of rows (total weight with sample weights)


class OnlineStep(NamedTuple):
    """What one natural-gradient step reports."""

    alpha: np.ndarray  # Dirichlet counts of q(theta) after the step
    expected_log: np.ndarray  # E[ln theta] under them
    kl: float  # KL(q(theta) || p(theta)) after the step
    rho: float  # the step size used
    scaled_counts: np.ndarray  # the minibatch's expected counts times scale


def minibatch_statistics(expected_log, codes, weights, layout, max_configurations):
    """The exact VBE step on the rows ``codes`` (integer codes, -1 missing) with
    positive ``weights`` under the sub-normalised tables ``expected_log``: the rows are
    compressed to patterns (:func:`~sklearn_vb.dag.structure.prepare_patterns`) and
    every pattern's unobserved configurations enumerated."""
    pdata = prepare_patterns(codes, weights, layout, max_configurations=max_configurations)
    counts = np.empty(layout.size)
    post = np.empty(pdata.idx.shape[0])
    log_z = np.empty(pdata.n_patterns)
    entropy = np.empty(pdata.n_patterns)
    enumerate_posterior(expected_log, pdata.idx, pdata.row_start, pdata.weights, counts,
                        post, log_z, entropy)
    return MinibatchStatistics(counts, float(np.dot(pdata.weights, log_z)),
                               float(pdata.weights.sum()))


def natural_step(prior, alpha, counts, scale, rho, row_ptr):
    """One natural-gradient step of q(theta) (Dirichlet counts ``alpha``, prior
    ``prior``, flat) from a minibatch's expected counts ``counts``:
    ``(1 - rho) alpha + rho (prior + scale * counts)``, through the VBM step of the
    effective counts.  Returns an :class:`OnlineStep`."""
    scaled = scale * counts
    effective = (1.0 - rho) * (alpha - prior) + rho * scaled
    # a convex combination of non-negative counts; only rounding of alpha - prior can
    # dip below zero, by far less than the prior
    np.maximum(effective, 0.0, out=effective)
    new_alpha = np.empty_like(alpha)
    expected_log = np.empty_like(alpha)
    kl = dirichlet_update(prior, effective, row_ptr, new_alpha, expected_log)
    return OnlineStep(new_alpha, expected_log, float(kl), float(rho), scaled)
