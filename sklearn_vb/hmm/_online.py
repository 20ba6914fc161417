"""Online (stochastic natural-gradient) variational Bayes for the HMM: the step sizes,
the minibatches of sequences and the natural-gradient step on q(theta).

Hoffman, Blei, Wang & Paisley (2013), "Stochastic variational inference", Algorithm 1,
with scikit-learn's ``LatentDirichletAllocation`` conventions.  The global variational
parameters are the Dirichlet counts of the initial distribution and of the transition
rows and the emission posterior; the local ones are q(s) of every sequence.  One step:

1. the local step, exact: one forward-backward pass over the minibatch under the
   current exp E[ln theta] (:func:`~sklearn_vb.hmm._vbem.vbe`), whose expected
   sufficient statistics are :func:`~sklearn_vb.hmm._vbem.stats_from_vbe`;
2. the intermediate global parameters, the VBM update as if the data set were
   ``scale = total_samples / n_minibatch_sequences`` copies of the minibatch:
   ``lambda_hat = vbm(prior, scale * stats)`` (:func:`~sklearn_vb.hmm._vbem.vbm`);
3. ``lambda <- (1 - rho) lambda + rho lambda_hat`` in natural parameters, with
   ``rho = (learning_offset + n_batch_iter)^(-learning_decay)``
   (:func:`~sklearn_vb._core.online.step_size`, with the minibatches of
   :func:`~sklearn_vb._core.online.minibatches`, shared by every online estimator).

In natural parameters the Riemannian (Fisher) gradient of the bound of a
conjugate-exponential model is ``lambda_hat - lambda``, so step 3 is a natural-gradient
step of length rho (Hoffman et al. 2013, eq. 25).  The convex combination is taken in
the coordinates of :func:`natural_posterior`: the Dirichlet counts themselves and the
emission family's :meth:`~sklearn_vb.emissions.EmissionFamily.natural` coordinates.
Each is an affine function of the natural parameters, and a convex combination
commutes with affine maps, so the step is the same as in the natural parameters proper.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core.online import minibatches, step_size
from ._state import DirichletHMM, HMMStats
from ._vbem import vbm

__all__ = ["OnlineStep", "minibatches", "natural_posterior", "natural_step",
           "posterior_from_natural", "scale_stats", "sequence_frames", "step_size"]


class OnlineStep(NamedTuple):
    """What one natural-gradient step reports."""

    posterior: DirichletHMM  # q(theta) after the step
    target: DirichletHMM  # lambda_hat = vbm(prior, scale * stats), the step's direction
    rho: float  # the step size used
    scaled_stats: HMMStats  # the minibatch's statistics times scale


def scale_stats(family, stats, factor):
    """The statistics of ``factor`` copies of the data of ``stats``."""
    return HMMStats(start=factor * stats.start, trans=factor * stats.trans,
                    emission=family.scale_stats(stats.emission, factor))


def natural_posterior(family, posterior, prior):
    """q(theta) as one vector of coordinates affine in its natural parameters: the
    initial and transition Dirichlet counts and the family's
    :meth:`~sklearn_vb.emissions.EmissionFamily.natural` coordinates (relative to
    ``prior`` where that keeps rounding small)."""
    return np.concatenate([
        np.asarray(posterior.startprob, dtype=float).ravel(),
        np.asarray(posterior.transmat, dtype=float).ravel(),
        family.natural(posterior.emission, prior.emission),
    ])


def posterior_from_natural(family, vector, prior, like):
    """The q(theta) of the coordinates ``vector`` (inverse of
    :func:`natural_posterior`), shaped like the posterior ``like``; None when they are
    not a valid q(theta)."""
    K = np.shape(like.startprob)[0]
    start = vector[:K].copy()
    trans = vector[K:K + K * K].reshape(K, K).copy()
    emission = family.from_natural(vector[K + K * K:], prior.emission, like.emission)
    if emission is None or not (np.all(np.isfinite(start)) and np.all(np.isfinite(trans))
                                and np.all(start > 0) and np.all(trans > 0)):
        return None
    return DirichletHMM(start, trans, emission)


def natural_step(family, prior, posterior, stats, scale, rho):
    """One natural-gradient step of q(theta) from the statistics ``stats`` of a
    minibatch: ``(1 - rho) lambda + rho vbm(prior, scale * stats)`` in natural
    parameters.  Returns an :class:`OnlineStep`."""
    scaled = scale_stats(family, stats, scale)
    target = vbm(family, prior, scaled)
    mixed = ((1.0 - rho) * natural_posterior(family, posterior, prior)
             + rho * natural_posterior(family, target, prior))
    new = posterior_from_natural(family, mixed, prior, posterior)
    if new is None:  # a convex combination of valid posteriors is valid: only rounding
        raise FloatingPointError(
            "the natural-gradient step left the parameter space (rounding); the data or "
            "the priors are degenerate.")
    return OnlineStep(new, target, rho, scaled)


def sequence_frames(starts, lengths, seq):
    """Frame indices of the sequences ``seq`` (in that order) laid end to end, and
    their lengths: ``X[frames]`` are their frames as a new concatenation."""
    seq = np.asarray(seq, dtype=np.int64)
    lens = np.asarray(lengths, dtype=np.int64)[seq]
    new_starts = np.cumsum(lens) - lens
    frames = (np.repeat(np.asarray(starts, dtype=np.int64)[seq] - new_starts, lens)
              + np.arange(int(lens.sum()), dtype=np.int64))
    return frames, lens
