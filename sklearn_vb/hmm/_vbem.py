"""The VBEM updates of the initial-state and transition Dirichlets of an HMM, the
statistics and expectations that feed them, and the terms of the bound F.

``prior`` and ``posterior`` are :class:`~sklearn_vb.hmm._state.DirichletHMM` triples:
the Dirichlet counts of the initial distribution (K,) and of the transition rows (K, K),
and the emission family's hyperparameters (its ``prior_type`` / ``posterior_type``).
``data`` is the estimator's ``_FitData``.  With categorical transition inputs
(:mod:`._inputs`) the transition counts, statistics and expectations have a leading
level axis, (L, K, K), and every function here works on that form unchanged.  With
continuous inputs the transition parts are those of :mod:`._logistic_transitions`
(q(W) a ``LogisticCoefficients``, its statistics ``LogisticStats``, E[ln A] replaced
by the ``CoefficientMoments`` of q(W)); the functions here hand them to that module.  Statistics are
:class:`~sklearn_vb.hmm._state.HMMStats` (``start`` and ``trans`` counts and the family's
statistics).  Nothing here keeps state: the estimator stores what these functions return.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, polygamma

from .._core.distributions import dirichlet_expected_log, dirichlet_kl, log_multivariate_beta
from ._clamp import clamp_table, fold_counts
from . import _logistic_transitions as lt
from ._inputs import forward_backward_inputs, transition_counts_from_resp
from ._state import DirichletHMM, HMMStats

__all__ = [
    "DirichletHMM", "expected_complete_loglik", "expected_log_params", "frame_marginals",
    "kl_terms", "lower_bound_after_vbm", "optimize_dirichlet_scale", "pack_posterior",
    "stats_from_resp", "stats_from_vbe", "unpack_posterior", "vbe", "vbe_statistics", "vbm",
    "add_results", "add_stats",
]


# ---------------------------------------------------------------------------
# Dirichlet strength optimisation (empirical Bayes for the prior strengths)
# ---------------------------------------------------------------------------


def _strength_objective(lam, base, sum_elog):
    """G(lam) = sum_r -ln B(lam base_r) + lam sum_j base_rj S_rj  (the u-dependent part of -KL)."""
    u = lam * base
    return float(-np.sum(log_multivariate_beta(u)) + np.sum(u * sum_elog))


def optimize_dirichlet_scale(base, elog):
    """Scale factor lam > 0 maximising sum_r -KL(Dir(w_r) || Dir(lam base_r)).

    ``base`` (R, K) are the current prior rows, ``elog`` (R, K) the posterior E[ln theta].
    Only the part of -KL that depends on the prior matters, G(lam) above; it is concave
    in lam (ln B is convex), so its derivative is decreasing and the root is found by a
    bracketed Newton iteration in ln lam.  Returns 1.0 when G does not improve.
    """
    base = np.atleast_2d(base)
    elog = np.atleast_2d(elog)
    b0 = base.sum(axis=-1)
    c = np.sum(base * elog)

    def grad(lam):
        return float(np.sum(b0 * digamma(lam * b0)) - np.sum(base * digamma(lam * base)) + c)

    def hess(lam):
        return float(
            np.sum(b0**2 * polygamma(1, lam * b0)) - np.sum(base**2 * polygamma(1, lam * base))
        )

    lo, hi = 1.0, 1.0
    while grad(lo) < 0 and lo > 1e-12:
        lo *= 0.25
    while grad(hi) > 0 and hi < 1e12:
        hi *= 4.0
    x_lo, x_hi = np.log(lo), np.log(hi)
    x = 0.0 if x_lo <= 0.0 <= x_hi else 0.5 * (x_lo + x_hi)
    for _ in range(100):
        lam = np.exp(x)
        g = grad(lam)
        if g > 0:
            x_lo = x
        else:
            x_hi = x
        h = hess(lam)
        # Newton in x = ln lam: dG/dx = lam g, d2G/dx2 = lam g + lam^2 h
        d2 = lam * g + lam * lam * h
        step = -(lam * g) / d2 if d2 < 0 else np.inf
        x_new = x + step
        if not (x_lo < x_new < x_hi):
            x_new = 0.5 * (x_lo + x_hi)
        if abs(x_new - x) < 1e-13:
            x = x_new
            break
        x = x_new
    lam = float(np.exp(x))
    if _strength_objective(lam, base, elog) < _strength_objective(1.0, base, elog):
        return 1.0
    return lam


# ---------------------------------------------------------------------------
# statistics and the VBM step
# ---------------------------------------------------------------------------


def stats_from_resp(family, resp, data, emission_prior):
    """Sufficient statistics of a hard or soft labelling ``resp`` (n_frames, K) (used
    for initialisation)."""
    starts = data.starts
    trans = transition_counts_from_resp(resp, starts, getattr(data, "inputs", None),
                                        getattr(data, "n_levels", None))
    return HMMStats(start=resp[starts].sum(axis=0), trans=trans,
                    emission=family.stats(resp, data.X, emission_prior))


def vbm(family, prior, stats):
    """The VBM step: q(theta) given the statistics of q(s)."""
    if isinstance(prior.transmat, lt.LogisticCoefficients):
        trans = lt.vbm(prior.transmat, stats.trans)
    else:
        trans = prior.transmat + stats.trans
    return DirichletHMM(prior.startprob + stats.start, trans,
                        family.vbm(prior.emission, stats.emission))


# ---------------------------------------------------------------------------
# expectations, the VBE step and the bound
# ---------------------------------------------------------------------------


def expected_log_params(family, posterior):
    """E[ln pi], E[ln A] (with continuous inputs the moments of q(W)) and the family's
    emission quantities under q(theta)."""
    Lpi = dirichlet_expected_log(posterior.startprob)
    if isinstance(posterior.transmat, lt.LogisticCoefficients):
        LA = lt.expected_moments(posterior.transmat)
    else:
        LA = dirichlet_expected_log(posterior.transmat)
    return Lpi, LA, family.expected_log_params(posterior.emission)


def expected_complete_loglik(family, stats, Lpi, LA, LE, emission_prior):
    """E_{q(s) q(theta)} ln p(s, X | theta) from the statistics of q(s) (with
    continuous inputs, of the bound's lower joint, up to the terms of q(s) and xi
    alone: see :func:`~._logistic_transitions.expected_loglik`)."""
    if isinstance(LA, lt.CoefficientMoments):
        value = float(np.dot(stats.start, Lpi) + lt.expected_loglik(stats.trans, LA))
    else:
        value = float(np.dot(stats.start, Lpi) + np.sum(stats.trans * LA))
    return value + family.expected_log_likelihood(stats.emission, LE, emission_prior)


def kl_terms(family, posterior, prior):
    """KL[q || p] of the initial distribution, of the transition rows (summed) and of
    the emission parameters."""
    kl_start = float(dirichlet_kl(posterior.startprob, prior.startprob))
    if isinstance(posterior.transmat, lt.LogisticCoefficients):
        kl_trans = lt.kl(posterior.transmat, prior.transmat)
    else:
        kl_trans = float(np.sum(dirichlet_kl(posterior.transmat, prior.transmat)))
    kl_emis = family.kl(posterior.emission, prior.emission)
    return kl_start, kl_trans, kl_emis


def vbe(family, posterior, data, want_posteriors=True):
    """The forward-backward pass at exp E[ln theta]; returns its output and the
    expectations (Lpi, LA, LE) that produced it."""
    Lpi, LA, LE = expected_log_params(family, posterior)
    known = getattr(data, "known_states", None)
    table, index, n_shared = clamp_table(family.log_table(LE, data.X), data.index, known)
    out = forward_backward_inputs(Lpi, LA, getattr(data, "inputs", None), table, index,
                                  data.starts, data.ends, want_posteriors)
    if n_shared is not None and want_posteriors:
        out = out[:4] + (fold_counts(out[4], data.index, known, n_shared),)
    return out, (Lpi, LA, LE)


def stats_from_vbe(family, out, data, emission_prior, expected=None):
    """The statistics of q(s) from the output of :func:`vbe`; ``expected`` the emission
    quantities of that VBE step (its ``LE``), which a family whose missing entries are
    latent needs (see ``EmissionFamily.stats``)."""
    log_norm, _, start, trans, emis_counts = out
    return HMMStats(start=start, trans=trans,
                    emission=family.stats_from_table_counts(emis_counts, data.X,
                                                            emission_prior, expected))


def vbe_statistics(data, family, posterior, emission_prior):
    """The VBE step on ``data`` (all sequences, or one chunk of them): sum ln Z and the
    statistics of q(s) under exp E[ln theta] of ``posterior``.  Both are sums over
    sequences, so those of chunks of whole sequences add up to those of the data."""
    out, (_, _, LE) = vbe(family, posterior, data)
    return float(out[0].sum()), stats_from_vbe(family, out, data, emission_prior, LE)


def add_stats(family, a, b):
    """The statistics of the data of ``a`` and of ``b`` together."""
    trans = (lt.add_stats(a.trans, b.trans) if isinstance(a.trans, lt.LogisticStats)
             else a.trans + b.trans)
    return HMMStats(start=a.start + b.start, trans=trans,
                    emission=family.add_stats(a.emission, b.emission))


def add_results(family, a, b):
    """The results of one function of the data (statistics, a float, or a tuple of
    them, e.g. :func:`vbe_statistics`) on two parts of the data, for both together."""
    if isinstance(a, tuple):
        return tuple(add_results(family, x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a + b
    return add_stats(family, a, b)


def frame_marginals(family, posterior, data):
    """q(s_t) of every frame under q(theta), (n_frames, K)."""
    Lpi, LA, LE = expected_log_params(family, posterior)
    # one table row per frame, so that the kernel's emission counts are the marginals
    frames = np.arange(data.n_frames, dtype=np.int64)
    table, index, _ = clamp_table(family.frame_log_table(LE, data.X), frames,
                                  getattr(data, "known_states", None))
    out = forward_backward_inputs(Lpi, LA, getattr(data, "inputs", None), table, index,
                                  data.starts, data.ends, True)
    # a known frame's marginals are on its own appended row
    return out[4] if out[4].shape[0] == data.n_frames else out[4][index]


def lower_bound_after_vbm(family, posterior, prior, stats, vbe_log_norm, vbe_expected_log):
    """F of the q(s) of the last VBE step with a new q(theta): the entropy of q(s),
    ln Z - E_vbe ln p(s, X | theta), is kept and only the expected complete
    log-likelihood and the KL change."""
    kl = sum(kl_terms(family, posterior, prior))
    elogp = expected_complete_loglik(family, stats, *expected_log_params(family, posterior),
                                     prior.emission)
    elogp_vbe = expected_complete_loglik(family, stats, *vbe_expected_log, prior.emission)
    return vbe_log_norm + (elogp - elogp_vbe) - kl


# ---------------------------------------------------------------------------
# coordinates of the acceleration
# ---------------------------------------------------------------------------


def pack_posterior(family, posterior):
    """q(theta) as log Dirichlet counts of the initial and transition rows (of every
    input level; with continuous inputs the natural parameters of q(W)) followed by the
    emission family's coordinates (:meth:`EmissionFamily.pack`)."""
    if isinstance(posterior.transmat, lt.LogisticCoefficients):
        trans = lt.pack(posterior.transmat)
    else:
        trans = np.log(posterior.transmat).ravel()
    return np.concatenate([np.log(posterior.startprob), trans,
                           family.pack(posterior.emission)])


def unpack_posterior(family, vector, K, posterior):
    """The q(theta) of the coordinates ``vector`` (the inverse of :func:`pack_posterior`),
    or None when they leave the parameter space."""
    logistic = isinstance(posterior.transmat, lt.LogisticCoefficients)
    n_trans = (posterior.transmat.precision.size + posterior.transmat.mean.size if logistic
               else posterior.transmat.size)
    emission = family.unpack(vector[K + n_trans:], posterior.emission)
    start = np.exp(vector[:K])
    if logistic:
        trans = lt.unpack(vector[K:K + n_trans], posterior.transmat)
        valid = trans is not None
    else:
        trans = np.exp(vector[K:K + n_trans]).reshape(posterior.transmat.shape)
        valid = np.all(trans > 0) and np.all(np.isfinite(trans))
    if emission is None or not (np.all(start > 0) and valid and np.all(np.isfinite(start))):
        return None
    return DirichletHMM(start, trans, emission)
