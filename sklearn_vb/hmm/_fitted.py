"""The fitted attributes of :class:`~sklearn_vb.hmm.VBHiddenMarkov` that follow from
its q(theta) and expected statistics: the terms of the bound, the posterior means and
the state occupancies.
"""

from __future__ import annotations

import numpy as np

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
    # (L, K, K) with transition inputs: normalise every level's rows
    est.transmat_ = est.transmat_posterior_ / est.transmat_posterior_.sum(axis=-1, keepdims=True)
    family = est._family
    for name, value in family.point_estimates(est._emission("posterior")).items():
        setattr(est, name, value)
    est.occupancy_ = family.occupancy(est._stats_.emission)
    est.n_effective_components_ = int(np.sum(est.occupancy_ >= 1.0))
