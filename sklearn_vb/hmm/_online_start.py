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
"""

from __future__ import annotations

import numpy as np

from ._init import initial_posterior
from ._online import scale_stats
from ._vbem import kl_terms, vbe_statistics, vbm

__all__ = ["local_vbem", "online_start"]

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
    one with the highest bound."""
    family, prior = est._family, est._hyper("prior")
    best, best_bound = None, -np.inf
    for how in starts:
        start = initial_posterior(how, family, est.n_components, prior, data, random_state,
                                  est.init_posterior)
        posterior, bound = local_vbem(family, prior, start, data, scale)
        if best is None or bound > best_bound:
            best, best_bound = posterior, bound
    return best
