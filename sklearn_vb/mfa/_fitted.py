"""The fitted attributes of a mixture-of-factor-analysers state, in the units of the
data as given.

The state (:mod:`sklearn_vb.mfa._vbem`, or a point fit of
:mod:`sklearn_vb.mfa._point`) is in fitting units: the data less ``data.shift``,
divided by ``data.scale``.  Each function returns ``{attribute name: value}``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.special import logsumexp

from ._state import MFAPointState
from ._vbem import (bound_terms, component_scores, local_updates, log_weights, lower_bound,
                    plugin_log_densities)

__all__ = ["VB_ONLY_ATTRIBUTES", "fitted_attributes", "log_densities", "plugin_sample", "point_attributes",
           "set_fitted", "vb_attributes"]

#: attributes of a variational fit that a point fit does not have
VB_ONLY_ATTRIBUTES = ("dirichlet_concentration_", "loading_means_", "loading_covariances_",
                      "ard_shape_", "ard_rate_", "ard_precisions_", "mean_prior_",
                      "alpha_prior_", "ard_prior_", "bound_terms_", "component_scores_")


def _shared(st, data, S, K):
    scale, shift = data.scale, data.shift
    return {
        "feature_shift_": shift.copy(),
        "feature_scale_": scale.copy(),
        "n_components_": S,
        "means_": st.lam_mean[:, :, K] * scale + shift,
        "loadings_": st.lam_mean[:, :, :K] * scale[None, :, None],
        "noise_variance_": st.psi * scale**2,
        "n_factors_max_": K,
        "labels_": np.argmax(st.resp, axis=1),
    }


def point_attributes(st, data):
    """The attributes of a point fit (``method="ml"`` or ``"map"``)."""
    K = st.lam_mean.shape[-1] - 1
    S = st.weights.shape[0]
    out = _shared(st, data, S, K)
    out.update(
        weights_=st.weights.copy(),
        active_factors_=np.ones((S, K), dtype=bool),
        n_factors_per_component_=np.full(S, K, dtype=int),
        log_likelihood_=float(st.loglik),
    )
    return out


def vb_attributes(st, data, ard_threshold):
    """The attributes of a variational fit; a loading column is active when its
    ``||E Λ^s_{·j}||² / Σ_q ψ_q`` exceeds ``ard_threshold``."""
    K = st.sigma.shape[-1]
    S = st.resp.shape[1]
    scale, shift = data.scale, data.shift
    out = _shared(st, data, S, K)
    col = np.sum(st.lam_mean[:, :, :K] ** 2, axis=1) / np.sum(st.psi)
    active = col > ard_threshold
    terms = bound_terms(st, data).as_dict()
    terms.update(jacobian=data.log_jacobian)
    out.update(
        dirichlet_concentration_=st.alpha_hat.copy(),
        weights_=st.alpha_hat / st.alpha_hat.sum(),
        loading_means_=st.lam_mean.copy(),
        loading_covariances_=st.lam_cov.copy(),
        ard_shape_=float(st.a_tilde),
        ard_rate_=st.b_tilde.copy(),
        ard_precisions_=st.a_tilde / st.b_tilde,
        mean_prior_=(st.mu_star * scale + shift, st.nu_star / scale**2),
        alpha_prior_=float(st.alpha_star),
        ard_prior_=(float(st.a_star), float(st.b_star)),
        active_factors_=active,
        n_factors_per_component_=active.sum(axis=1).astype(int),
        bound_terms_=terms,
        component_scores_=component_scores(st, data),
    )
    return out


def fitted_attributes(st, data, ard_threshold):
    """The attributes of a fit of either kind (:func:`point_attributes`,
    :func:`vb_attributes`); the state then lets go of what it holds of the training
    data: the statistics and the search's bookkeeping are not part of the model."""
    if isinstance(st, MFAPointState):
        fitted = point_attributes(st, data)
        st.stats = None
    else:
        fitted = vb_attributes(st, data, ard_threshold)
        st.stats_cache = None
        st.prev_mass = None
    return fitted


def plugin_sample(rng, n_samples, weights, means, loadings, noise_variance):
    """``(X, labels)``: ``n_samples`` draws from the mixture with the given proportions
    (S,), centres (S, p), loadings (S, p, K) and noise variances (p,), grouped by
    component."""
    S, p, K = loadings.shape
    counts = rng.multinomial(n_samples, weights)
    labels = np.repeat(np.arange(S), counts)
    x = rng.standard_normal((n_samples, K))
    X = (
        np.einsum("nqk,nk->nq", loadings[labels], x)
        + means[labels]
        + rng.standard_normal((n_samples, p)) * np.sqrt(noise_variance)
    )
    return X, labels


def set_fitted(est, data):
    """Set the fitted attributes of the estimator ``est`` from its state after a fit on
    ``data`` (or a ``partial_fit`` call), and drop what only the fit needed."""
    if not est._point_fitted and est.learning_method == "online":
        # the history holds estimates; the bound of the final q(θ) is exact
        local_updates(est._vb_, data)
        est.lower_bound_ = float(lower_bound(est._vb_, data))
    est._shift_, est._scale_ = data.shift, data.scale
    # the fitting units without the data, for partial_fit's later chunks
    est._units_ = replace(data, Z=data.Z[:0], missing=None, rows=None, n_given=None)
    fitted = fitted_attributes(est._vb_, data, est.ard_threshold)
    if data.rows is not None and "labels_" in fitted:
        # a row observing nothing: the component of largest E[ln π_s] (of largest
        # weight at a point)
        prior = est._vb_.weights if est._point_fitted else est._vb_.alpha_hat
        labels = np.full(data.n_given, int(np.argmax(prior)))
        labels[data.rows] = fitted["labels_"]
        fitted["labels_"] = labels
    if est._point_fitted:
        fitted.update(objective_=est.lower_bound_, objectives_=est.lower_bounds_)
        for name in VB_ONLY_ATTRIBUTES:
            est.__dict__.pop(name, None)
    if est.search:
        est.n_iter_ = int(est._search_total_iter_)
    else:
        est.search_history_ = None
        est.n_births_proposed_ = est.n_births_accepted_ = est.n_partial_iter_ = 0
        est.n_epochs_ = 1
    for name, value in fitted.items():
        setattr(est, name, value)
    for name in ("_search_rng", "_control", "_principal_split_tried"):
        est.__dict__.pop(name, None)


def log_densities(est, Z, method):
    """:meth:`~sklearn_vb.mfa.VBMixtureFactorAnalysers.score_samples` of the rows ``Z``
    in fitting units: ``method="plugin"`` at the posterior-mean parameters,
    ``"bound"`` the variational lower bound on the predictive density."""
    if np.isnan(Z).any():  # only the observed entries are transformed
        jac = -((~np.isnan(Z)) @ np.log(est._scale_))
    else:
        jac = -float(np.sum(np.log(est._scale_)))
    if method == "bound":
        return logsumexp(log_weights(est._vb_, Z), axis=1) + jac
    if method != "plugin":
        raise ValueError(f"method must be 'plugin' or 'bound'; got {method!r}.")
    return plugin_log_densities(est._vb_, Z, est.weights_) + jac
