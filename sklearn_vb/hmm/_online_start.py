"""The start of online learning with ``init_params="auto"``: the starts of batch VBEM,
each run to convergence by VBEM on the first minibatch, the best kept by its bound.

Why: the natural-gradient steps shrink as they accumulate (their lengths sum to about
``((tau0 + t)^(1 - kappa)) / (1 - kappa)`` full VBEM iterations after t steps), while
from a start near the symmetric point, where states are still copies of one another,
batch VBEM needs tens of full iterations to separate them.  Online learning from such
a start therefore spends its early steps, the long ones, on the plateau and is left
with steps too short to cross it.  VBEM on one minibatch crosses the plateau at the
cost of a few passes over that minibatch, and with its statistics scaled to
``total_samples`` sequences (VBEM on as many copies of the minibatch) the prior
weighs on q(theta) as it will on the whole stream, so states the minibatch shows
rarely are not switched off for lack of data.

The steps that follow are unchanged; the schedule starts at ``n_batch_iter_ = 1``.
``partial_fit``'s first call starts so from its first minibatch (scaled to
``total_samples``); every restart of an online ``fit`` of sequences starts so from a
minibatch of ``batch_size`` sequences drawn at random (scaled to the sequences of
``X``): :func:`restart_starts` names that start ``"auto"`` and :func:`start_posterior`
runs it.  An online fit over subchains (``subchain_length``) runs the starts of
``"auto"`` on all of ``X``, each followed by its own epochs, as batch VBEM does.
"""

from __future__ import annotations

import numpy as np

from ._data import _FitData
from ._init import initial_posterior
from ._online import scale_stats
from ._vbem import kl_terms, vbe_statistics, vbm
from ._working_set import check_start_memory

__all__ = ["MINIBATCH_START", "local_vbem", "online_start", "restart_starts",
           "start_posterior"]

#: the one start of each restart of an online fit of sequences with ``init_params="auto"``
MINIBATCH_START = "auto"

#: VBEM iterations on the first minibatch per start, at most
LOCAL_MAX_ITER = 100
#: they stop once the bound changed by less than this per (scaled) frame ...
LOCAL_TOL = 1e-5


def local_vbem(family, prior, posterior, data, scale, max_iter=LOCAL_MAX_ITER,
               tol=LOCAL_TOL):
    """VBEM from ``posterior`` on ``data`` with its statistics times ``scale``.

    Returns the last q(theta) and its bound on ``scale`` copies of ``data``
    (``scale * ln Z - KL``, exact: the q(s) of the bound is that of this q(theta)).
    Stops after ``max_iter`` iterations or once the bound changed by less than
    ``tol`` per scaled frame and its increments are not growing (a run leaving the
    symmetric point shows tiny but growing increments and goes on).
    """
    n = scale * data.n_frames
    bounds = []
    for _ in range(max_iter + 1):
        log_norm, stats = vbe_statistics(data, family, posterior, prior.emission)
        bounds.append(scale * log_norm - sum(kl_terms(family, posterior, prior)))
        if len(bounds) == max_iter + 1:
            break
        if (len(bounds) >= 3 and bounds[-1] - bounds[-2] < tol * n
                and bounds[-1] - bounds[-2] <= bounds[-2] - bounds[-3]):
            break
        posterior = vbm(family, prior, scale_stats(family, stats, scale))
    return posterior, bounds[-1]


def online_start(est, data, random_state, scale, starts):
    """The q(theta) online learning starts from: each start kind of ``starts``
    (:func:`~sklearn_vb.hmm._init.initial_posterior` on ``data``, drawn in turn from
    ``random_state``) run by :func:`local_vbem` on ``data`` scaled by ``scale``; the
    one with the highest bound.  The largest start's arrays on ``data`` are checked
    first (:func:`~sklearn_vb.hmm._working_set.check_start_memory`)."""
    family, prior = est._family, est._hyper("prior")
    check_start_memory(est, starts, data.X)
    best, best_bound = None, -np.inf
    for how in starts:
        start = initial_posterior(how, family, est.n_components, prior, data, random_state,
                                  est.init_posterior)
        posterior, bound = local_vbem(family, prior, start, data, scale)
        if best is None or bound > best_bound:
            best, best_bound = posterior, bound
    return best


def restart_starts(est):
    """The start kinds of one restart of ``est.fit``: ``init_params`` itself, or for
    ``"auto"`` the family's starts (batch VBEM, and online learning over subchains) or
    :data:`MINIBATCH_START` (online learning from minibatches of sequences)."""
    if est.init_params != "auto":
        return (est.init_params,)
    if est.learning_method == "online" and est.subchain_length is None:
        return (MINIBATCH_START,)
    return est._family.default_inits


def start_posterior(est, how, data, random_state):
    """The initial q(theta) of the start kind ``how`` on the fit data ``data`` (priors
    resolved): for :data:`MINIBATCH_START`, :func:`online_start` on ``batch_size``
    sequences of ``data`` drawn by ``random_state`` (all of them when there are no
    more), scaled to the sequences of ``data``.  Any other start on data in memory
    first checks that the largest start of the fit can allocate its arrays
    (:func:`~sklearn_vb.hmm._working_set.check_start_memory`)."""
    if how != MINIBATCH_START:
        if isinstance(data, _FitData):  # (the starts of a dask fit run chunk by chunk)
            check_start_memory(est, (how,) + tuple(restart_starts(est)), data.X)
        return initial_posterior(how, est._family, est.n_components, est._hyper("prior"),
                                 data, random_state, est.init_posterior)
    first = data
    if data.n_sequences > est.batch_size:
        seq = np.sort(random_state.choice(data.n_sequences, est.batch_size, replace=False))
        first = data.sequences(seq, est._family)
    return online_start(est, first, random_state,
                        float(data.n_sequences) / first.n_sequences,
                        est._family.default_inits)
