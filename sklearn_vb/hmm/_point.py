"""Point-estimate (ML and MAP) EM for hidden Markov models: the E step, the M step and
the objective, for any emission family of :mod:`sklearn_vb.emissions`.

:class:`~sklearn_vb.hmm.VBHiddenMarkov` with ``method="ml"`` or ``"map"`` runs these
steps in its EM loop, and the HMM scoring adapter
(:mod:`sklearn_vb.hmm._scoring_family`) runs them for its ``fit_point``, so each
piece exists once.

The M step returns a :class:`~sklearn_vb.hmm._state.PointParameters` (the estimator's
state).  The other pieces evaluate parameter batches ``params``, dicts of blocks with a
leading batch axis of parameter sets (the scoring layer's convention, which the
estimator reaches through :meth:`~sklearn_vb.hmm._state.PointParameters.blocks`):
``startprob`` (C, K), ``transmat`` (C, K, K) and the family's emission blocks
(:meth:`~sklearn_vb.emissions.EmissionFamily.param_blocks`).  With one state (K = 1) the
initial and transition blocks are constants and may be absent.  Expected statistics
are :class:`~sklearn_vb.hmm._state.HMMStats`.

* E step (Beal 2003, eqs 3.19-3.35): ordinary forward-backward at the normalised
  parameters gives ln p(X | theta) and the expected statistics.
* M step (eqs 3.16-3.18 for ML; the softmax-basis MAP of section 3.3.2, rows
  ``(u + N) / sum(u + N)``, which is also the mean of the VBM posterior): expected counts
  normalised, with the family's emission M step.
* MAP objective: ``ln p(X | theta) + ln p(theta)`` plus, in the softmax basis, the
  Jacobian terms that make ``(u + N)`` rows the mode (``sum ln theta`` over every row)
  and the family's coordinate terms; EM never decreases it.
"""

from __future__ import annotations

import numpy as np

from .._core.distributions import dirichlet_log_pdf
from ._state import HMMStats, PointParameters
from ._blas_threads import forward_backward_blas
from .forward_backward import forward_backward

__all__ = ["point_m_step", "point_log_prior", "point_e_step", "complete_log_likelihood",
           "log_start_transitions"]


def log_start_transitions(params, n_components, batch):
    """``ln startprob`` (C, K) and ``ln transmat`` (C, K, K) (zeros when K = 1)."""
    if n_components == 1:
        return np.zeros((batch, 1)), np.zeros((batch, 1, 1))
    with np.errstate(divide="ignore"):
        return (np.log(np.asarray(params["startprob"], dtype=float)),
                np.log(np.asarray(params["transmat"], dtype=float)))


def point_m_step(family, startprob_prior, transmat_prior, emission_prior, stats, kind="map",
                 basis="softmax"):
    """The M step from expected statistics, a
    :class:`~sklearn_vb.hmm._state.PointParameters`.

    ``kind="ml"``: normalised counts and the family's maximum-likelihood emission point.
    ``"map"`` with ``basis="softmax"`` (default): ``(u + N)`` rows, the posterior mean of
    the conjugate posterior (the VBM arithmetic followed by the plug-in);
    ``basis="natural"``: the joint mode, ``(u + N - 1)`` rows and the family's mode.
    The initial and transition rows are None when K = 1.
    """
    if kind not in ("map", "ml"):
        raise ValueError(f"kind must be 'map' or 'ml', got {kind!r}.")
    if basis not in ("softmax", "natural"):
        raise ValueError(f"basis must be 'softmax' or 'natural', got {basis!r}.")
    tiny = 1e-300
    w_pi = startprob_prior + stats.start
    w_A = transmat_prior + stats.trans
    if kind == "ml":
        rows = (stats.start + tiny, stats.trans + tiny)
    elif basis == "softmax":
        rows = (w_pi, w_A)
    else:
        rows = (np.maximum(w_pi - 1.0, tiny), np.maximum(w_A - 1.0, tiny))
    startprob = transmat = None
    if np.shape(startprob_prior)[-1] > 1:
        startprob = rows[0] / rows[0].sum()
        transmat = rows[1] / rows[1].sum(axis=1, keepdims=True)
    return PointParameters(startprob=startprob, transmat=transmat,
                           emission=family.point_from_stats(emission_prior, stats.emission,
                                                            kind, basis))


def point_log_prior(family, startprob_prior, transmat_prior, emission_density, params,
                    basis="softmax"):
    """The log prior term of the MAP objective at one parameter set ``params`` (a batch
    of 1; a float): the prior density of the blocks (Dirichlet rows,
    ``emission_density`` the family's prior density,
    :meth:`~sklearn_vb.emissions.EmissionFamily.param_density`), the family's
    coordinate terms, and in the softmax basis ``sum ln theta`` over the initial and
    transition rows."""
    with_transitions = np.shape(startprob_prior)[-1] > 1
    out = emission_density.log_pdf(params)
    if with_transitions:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = out + dirichlet_log_pdf(params["startprob"], startprob_prior) + np.sum(
                dirichlet_log_pdf(params["transmat"], transmat_prior), axis=-1)
    lp = float(np.asarray(out, dtype=float)[0])
    for term in family.point_log_prior_terms(params, basis):
        lp += term
    if basis == "softmax" and with_transitions:
        lp += float(np.sum(np.log(params["startprob"])) + np.sum(np.log(params["transmat"])))
    return lp


def complete_log_likelihood(family, emission_prior, params, stats, n_components):
    """(C,) ``E_{q(s)} ln p(s, X | theta_c)`` from expected statistics ``stats``."""
    C = np.shape(next(iter(params.values())))[0]
    out = np.zeros(C)
    if n_components > 1:
        lp, la = log_start_transitions(params, n_components, C)
        out += np.sum(np.where(stats.start > 0, stats.start * lp, 0.0), axis=1)
        out += np.sum(np.where(stats.trans > 0, stats.trans * la, 0.0), axis=(1, 2))
    out += family.complete_log_likelihood(params, stats.emission, emission_prior)
    return out


def forward_backward_stats(family, emission_prior, log_pi, log_A, table, X, frames, starts, ends,
                           params=None):
    """ln Z (summed over sequences) and the expected statistics of one forward-backward
    pass over the per-frame log emission table (n_frames, K); ``frames`` is
    ``arange(n_frames)``, ``params`` the emission quantities that made the table (see
    ``EmissionFamily.stats``)."""
    table = np.ascontiguousarray(table)
    with forward_backward_blas(table, frames, starts, ends):
        log_norm, _, start, trans, gamma = forward_backward(
            np.ascontiguousarray(log_pi), np.ascontiguousarray(log_A), table, frames, starts,
            ends, True)
    stats = HMMStats(start=start, trans=trans,
                     emission=family.stats(gamma, X, emission_prior, params))
    return float(log_norm.sum()), stats


def point_e_step(family, emission_prior, params, X, starts, ends, n_components,
                 known_states=None):
    """ln p(X | theta) and the expected statistics of the exact posterior over state
    paths at the single parameter set ``params`` (a batch of 1; one forward-backward
    pass); with ``known_states`` (-1: unknown) ln p(X, known states | theta) and the
    posterior given them."""
    lp, la = log_start_transitions(params, n_components, 1)
    table = family.log_likelihood_tables(params, X)[0]
    if known_states is not None:
        known = np.flatnonzero(known_states >= 0)
        # one row per frame: the other states of a known frame are impossible
        allowed = table[known, known_states[known]]
        table = np.array(table, copy=True)
        table[known] = -np.inf
        table[known, known_states[known]] = allowed
    frames = np.arange(table.shape[0], dtype=np.int64)
    return forward_backward_stats(family, emission_prior, lp[0], la[0], table, X, frames,
                                  starts, ends, params)

