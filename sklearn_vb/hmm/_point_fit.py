"""The point EM of :class:`~sklearn_vb.hmm.VBHiddenMarkov` (``method="ml"`` or
``"map"``): its E and M steps, the objective of the stored point and the fitted
attributes of the point.

The maths is that of :mod:`sklearn_vb.hmm._point`; these functions run it on the
estimator (``est``), whose ``_theta_`` holds the point (a
:class:`~sklearn_vb.hmm._state.PointParameters`) and ``_stats_`` the expected
statistics of the last E step.
"""

from __future__ import annotations

import numpy as np

from ._point import complete_log_likelihood, point_e_step, point_log_prior, point_m_step

__all__ = ["e_step", "m_step", "objective", "set_fitted_point"]


def _log_prior(est, params):
    """The prior term of the EM objective (0 for ML; the softmax-basis MAP term) at
    ``params``, the point's blocks (:meth:`PointParameters.blocks`)."""
    if est.method == "ml":
        return 0.0
    prior = est._emission("prior")
    density = est._family.param_density(prior, est.n_components)
    return point_log_prior(est._family, est.startprob_prior_, est.transmat_prior_,
                           density, params)


def _complete_loglik(est, params):
    return float(complete_log_likelihood(est._family, est._emission("prior"), params,
                                         est._stats_, est.n_components)[0])


def m_step(est):
    """The M step from the statistics of the last E step (none before the starting
    point has been evaluated)."""
    if getattr(est, "_fresh", False):
        return  # the starting point is evaluated first
    est._theta_ = point_m_step(est._family, est.startprob_prior_, est.transmat_prior_,
                               est._emission("prior"), est._stats_, est.method)
    est._at_vbe = False


def e_step(est, data):
    """The E step at the stored point: ln p(X | theta), the expected statistics, and
    the objective, which it records in the run's bounds."""
    est._fresh = False
    params = est._theta_.blocks()
    est._loglik_, est._stats_ = point_e_step(
        est._family, est._emission("prior"), params, data.X, data.starts, data.ends,
        est.n_components, data.known_states)
    # H[p(s | X, theta)] = ln p(X | theta) - E ln p(s, X | theta), kept for the bound
    # of the M step (the EM lower bound of the objective at a new theta)
    est._path_entropy = est._loglik_ - _complete_loglik(est, params)
    est._vbe_bound = est._loglik_ + _log_prior(est, params)
    est._at_vbe = True
    if not hasattr(est, "_run_bounds"):
        est._run_bounds = []
    est._run_bounds.append(est._vbe_bound)


def objective(est):
    """The EM lower bound of the objective at the stored point after an M step: the
    path entropy of the last E step plus E ln p(s, X | theta) and the prior term."""
    params = est._theta_.blocks()
    return est._path_entropy + _complete_loglik(est, params) + _log_prior(est, params)


def set_fitted_point(est):
    """The fitted attributes of the point: parameters, occupancies and objectives."""
    point = est._theta_
    with_transitions = point.startprob is not None  # K > 1
    est.startprob_ = point.startprob.copy() if with_transitions else np.ones(1)
    est.transmat_ = point.transmat.copy() if with_transitions else np.ones((1, 1))
    for name, value in est._family.point_attributes(point.emission).items():
        setattr(est, name, value)
    est.occupancy_ = est._family.occupancy(est._stats_.emission)
    est.n_effective_components_ = int(np.sum(est.occupancy_ >= 1.0))
    est.log_likelihood_ = float(est._loglik_)
    est.objective_ = est.lower_bound_
    est.objectives_ = est.lower_bounds_
