"""The steps of one iteration of :class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers`: the
VBEM updates of Beal (2003), Section 4.2, with the selected hyperparameters, the deaths
of the search, the rotations and shifts of the factors and the pruning of switched-off
columns; or the E and M steps of a point fit (``method="ml"``/``"map"``).

Each step reads the estimator's state (``est._vb_``) when it runs, so that a restore
(which replaces the state) is followed.  What a step may do depends on the stage of the
run (:class:`~sklearn_vb.mfa._birth_death.RunControl`).
"""

from __future__ import annotations

from .._core.base import Step
from ._birth_death import RunControl
from ._hyper import (selected_hyperparameters, update_alpha_prior, update_ard_prior,
                     update_ard_rate, update_mean_prior)
from ._point import em_e_step, em_m_step
from ._structure import (decouple_dead_factors, kill_components, prune_dead_factors,
                         rotate_factors, translate_factors)
from ._vbem import (update_ard, update_factors, update_loadings, update_noise,
                    update_responsibilities, update_weights)

__all__ = ["iteration_steps", "point_e_step", "run_control"]


def run_control(est):
    """The :class:`~sklearn_vb.mfa._birth_death.RunControl` of the current run; a step
    run on its own (between fits) gets the defaults: no deaths, pruning and decoupling
    allowed, the plain ``tol`` test."""
    return est.__dict__.get("_control") or RunControl()


def point_e_step(est, data):
    """The E step of a point fit at the stored point."""
    em_e_step(est._vb_, data, est.method)


def _point_m_step(est, data):
    noise = "noise" in selected_hyperparameters(est.optimize_hyperparameters)
    em_m_step(est._vb_, data, est.method, noise)


def _responsibilities(est, data):
    """q(s), then the deaths the run allows; True when a component died."""
    update_responsibilities(est._vb_, data)
    if run_control(est).deaths_allowed:
        return kill_components(est._vb_, data, est.death_threshold,
                               est.shrinking_death_threshold)
    return False


def _rotate(est, data, iteration):
    # (the moves' optima assume every row observes every dimension: with entries
    # missing they are not made)
    if iteration % est.rotation_interval == 0 and data.missing is None:
        rotate_factors(est._vb_, data)
        translate_factors(est._vb_, data)


def _prune(est, data):
    # a birth epoch must not be credited with the gain of removing columns its
    # parent state could lose as well: the search prunes before each proposal
    control = run_control(est)
    if not control.in_birth_epoch:
        if est.compress_factors and not control.searching:
            # (not in the search: a child must be able to use a column its
            # parent had switched off)
            decouple_dead_factors(est._vb_, data, est.prune_threshold)
        prune_dead_factors(est._vb_, data, est.prune_threshold)


def iteration_steps(est):
    """The steps of one iteration of ``est``, in order."""
    if est.method != "vb":
        return (Step("m", lambda data, it: _point_m_step(est, data)),
                Step("e", lambda data, it: point_e_step(est, data)))
    steps = [
        Step("factors", lambda data, it: update_factors(est._vb_, data)),
        Step("loadings", lambda data, it: update_loadings(est._vb_, data)),
        Step("responsibilities", lambda data, it: _responsibilities(est, data)),
        Step("weights", lambda data, it: update_weights(est._vb_)),
        Step("ard", lambda data, it: update_ard(est._vb_, data)),
    ]
    hyper = selected_hyperparameters(est.optimize_hyperparameters)
    hyper_steps = (  # in the order of HYPER_NAMES
        Step("noise", lambda data, it: update_noise(est._vb_, data)),
        Step("mean_prior", lambda data, it: update_mean_prior(est._vb_, data)),
        Step("ard_rate", lambda data, it: update_ard_rate(est._vb_, est.ard_rate_min,
                                                          est.ard_rate_update)),
        Step("ard_prior", lambda data, it: update_ard_prior(est._vb_, est.ard_rate_min)),
        Step("alpha_prior", lambda data, it: update_alpha_prior(est._vb_)),
    )
    steps += [step for step in hyper_steps if step.name in hyper]
    if est.rotations:
        steps.append(Step("rotate", lambda data, it: _rotate(est, data, it)))
    if est.prune_factors:
        steps.append(Step("prune", lambda data, it: _prune(est, data)))
    return tuple(steps)
