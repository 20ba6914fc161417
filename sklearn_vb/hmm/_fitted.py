"""The fitted attributes of :class:`~sklearn_vb.hmm.VBHiddenMarkov` that follow from
its q(theta) and expected statistics: the terms of the bound, the posterior means and
the state occupancies.
"""

from __future__ import annotations

import numpy as np

from . import _logistic_transitions as lt
from ._vbem import kl_terms

__all__ = ["hyper_arrays", "set_fitted_posterior"]


def hyper_arrays(est):
    """The stored arrays of the prior and of q(theta) themselves (not copies), to tell
    whether either was replaced since a quantity was computed from them."""
    names = ("startprob", "transmat") + tuple(est._family.hyper_names)
    return tuple(getattr(est, f"{name}_{kind}_") for kind in ("prior", "posterior")
                 for name in names)


def _kl_terms(est):
    """:func:`kl_terms` of the stored q(theta) and prior; those of the last VBE step
    when it evaluated these very arrays (the fitted state after VBEM)."""
    cached = getattr(est, "_vbe_kl", None)
    if cached is not None:
        arrays = hyper_arrays(est)
        if len(arrays) == len(cached[0]) and all(a is b for a, b in zip(arrays, cached[0])):
            return cached[1]
    return kl_terms(est._family, est._hyper("posterior"), est._hyper("prior"))


def set_fitted_posterior(est, log_normaliser):
    """The attributes derived from q(theta) and the statistics ``_stats_``: the bound
    terms (with ``log_normaliser`` their sum ln Z), posterior means, occupancies."""
    kl_start, kl_trans, kl_emis = _kl_terms(est)
    est.lower_bound_terms_ = {
        "log_normaliser": log_normaliser,
        "kl_startprob": kl_start,
        "kl_transmat": kl_trans,
        "kl_emission": kl_emis,
    }
    est.startprob_ = est.startprob_posterior_ / est.startprob_posterior_.sum()
    _set_transition_means(est)
    family = est._family
    for name, value in family.point_estimates(est._emission("posterior")).items():
        setattr(est, name, value)
    est.occupancy_ = family.occupancy(est._stats_.emission)
    est.n_effective_components_ = int(np.sum(est.occupancy_ >= 1.0))


def _set_transition_means(est):
    """``transmat_``, the posterior-mean rows ((L, K, K) with categorical inputs: every
    level's rows), or with continuous inputs ``transition_coef_`` and
    ``transition_coef_covariance_``, the means and covariances of q(W) (the
    transition matrices then differ from frame to frame); the attributes of the other
    kind are removed (a refit may change ``transition_inputs``)."""
    post = est.transmat_posterior_
    if isinstance(post, lt.LogisticCoefficients):
        est.__dict__.pop("transmat_", None)
        est.transition_coef_ = post.mean
        est.transition_coef_covariance_ = np.linalg.inv(post.precision)
        return
    for name in ("transition_coef_", "transition_coef_covariance_"):
        est.__dict__.pop(name, None)
    est.transmat_ = post / post.sum(axis=-1, keepdims=True)
