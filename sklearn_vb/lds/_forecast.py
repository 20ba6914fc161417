"""Forecasts, samples and posterior summaries of a fitted linear dynamical system.

``est`` is a fitted :class:`~sklearn_vb.lds.VBLinearDynamicalSystem`; these functions
read its public fitted attributes and its smoother, and change nothing.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils import check_random_state

from .._core.validation import MISSING_IN_SEQUENCES, validate_float_data
from ._inputs import full_inputs
from .kalman import simulate_lds

__all__ = ["forecast", "posterior_std", "sample"]


def posterior_std(est):
    """Posterior standard deviations of (A, B, C, D) of ``est``, shaped like the
    means (see :meth:`~sklearn_vb.lds.VBLinearDynamicalSystem.posterior_std`)."""
    k = est.n_states_
    var_ab = np.diag(est.Sigma_AB_)
    # (k + do,) shared by the rows of [C D], or (p, k + do) one per row (missing outputs)
    var_cd = np.diagonal(est.Sigma_CD_, axis1=-2, axis2=-1)
    inv_rho = est.rho_rate_ / np.maximum(est.rho_shape_ - 1.0, 1e-12)
    d = est.n_inputs_
    sd_A = np.broadcast_to(np.sqrt(var_ab[:k]), (k, k)).copy()
    sd_B = np.zeros((k, d))
    sd_B[:, est.state_inputs_] = np.sqrt(var_ab[k:])
    sd_C = np.sqrt(inv_rho[:, None] * var_cd[..., :k])
    sd_D = np.zeros((inv_rho.shape[0], d))
    sd_D[:, est.output_inputs_] = np.sqrt(inv_rho[:, None] * var_cd[..., k:])
    return {"A": sd_A, "B": sd_B, "C": sd_C, "D": sd_D}


def _forecast_inputs(est, n_steps, X_hist, U_hist, U_future):
    """The user inputs of the history and the forecast horizon stacked (None for a
    model without inputs)."""
    if not est.n_user_inputs_:
        return None
    if U_future is None:
        raise ValueError("U_future is required: the model has inputs.")
    U_future = np.asarray(U_future, dtype=np.float64)
    if U_future.shape != (n_steps, est.n_user_inputs_):
        raise ValueError(
            f"U_future must have shape ({n_steps}, {est.n_user_inputs_}); got "
            f"{U_future.shape}."
        )
    if X_hist.shape[0]:
        U_hist = full_inputs(X_hist, U_hist, est.n_user_inputs_, est.fit_intercept)
        U_hist = U_hist[:, : est.n_user_inputs_]
    else:
        U_hist = np.zeros((0, est.n_user_inputs_))
    return np.vstack([U_hist, U_future])


def forecast(est, n_steps, X, U, U_future, method):
    """The forecast of :meth:`~sklearn_vb.lds.VBLinearDynamicalSystem.forecast`:
    ``(mean (n_steps, p), cov (n_steps, p, p))`` of the ``n_steps`` outputs after the
    history ``X`` (None: from the initial-state prior)."""
    if not isinstance(n_steps, Integral) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive int; got {n_steps!r}.")
    if method not in ("vb", "plugin"):
        raise ValueError(f"method must be 'vb' or 'plugin'; got {method!r}.")
    p = est.n_features_in_
    if X is None:
        X_hist = np.zeros((0, p))
        U_hist = None if U is None else np.zeros((0, np.shape(U)[1]))
    else:
        # NaN in the history: a missing output, marginalised (missing at random)
        X_hist = validate_float_data(est, X, reset=False, missing=MISSING_IN_SEQUENCES,
                                     allow_nan=True)
        U_hist = U
    n_hist = X_hist.shape[0]
    U_all = _forecast_inputs(est, n_steps, X_hist, U_hist, U_future)
    X_all = np.vstack([X_hist, np.zeros((n_steps, p))])
    observed = np.zeros(X_all.shape[0], dtype=np.bool_)
    observed[:n_hist] = True
    Uall = full_inputs(X_all, U_all, est.n_user_inputs_, est.fit_intercept)
    Us = np.ascontiguousarray(Uall[:, est.state_inputs_])
    Uo = np.ascontiguousarray(Uall[:, est.output_inputs_])
    starts = np.array([0], dtype=np.int64)
    ends = np.array([X_all.shape[0]], dtype=np.int64)
    res = est._smooth(X_all, Us, Uo, starts, ends, smooth=False,
                      point=method == "plugin", observed=observed)
    m = res.pred_mean[n_hist:]
    P = res.pred_cov[n_hist:]
    C, D = est.C_mean_, est.D_mean_
    Uf = Uall[n_hist:]
    mean = m @ C.T + Uf @ D.T
    cov = np.einsum("sj,tjl,rl->tsr", C, P, C)
    if method == "plugin":
        cov += np.diag(1.0 / est.noise_precision_mean_)
    else:
        # E[1/rho_s] (1 + tr(Sigma_CD <w w'>)), w = [x_t; u_o,t]
        inv_rho = est.rho_rate_ / np.maximum(est.rho_shape_ - 1.0, 1e-12)
        k = est.n_states_
        Uof = Uo[n_hist:]
        S = est.Sigma_CD_
        if S.ndim == 2:  # one covariance for every row of [C D]
            tr = (
                np.einsum("jl,tlj->t", S[:k, :k], P + m[:, :, None] * m[:, None, :])
                + 2.0 * np.einsum("tj,jc,tc->t", m, S[:k, k:], Uof)
                + np.einsum("tc,cd,td->t", Uof, S[k:, k:], Uof)
            )
            cov += (1.0 + tr)[:, None, None] * np.diag(inv_rho)[None]
        else:  # one per row (fitted with missing outputs): tr per output, (n_steps, p)
            tr = (
                np.einsum("sjl,tlj->ts", S[:, :k, :k], P + m[:, :, None] * m[:, None, :])
                + 2.0 * np.einsum("tj,sjc,tc->ts", m, S[:, :k, k:], Uof)
                + np.einsum("tc,scd,td->ts", Uof, S[:, k:, k:], Uof)
            )
            cov += (1.0 + tr)[:, :, None] * np.diag(inv_rho)[None]
    return mean, cov


def sample(est, n_samples, U, random_state):
    """One sequence of ``n_samples`` steps drawn from the posterior-mean model of
    ``est`` (see :meth:`~sklearn_vb.lds.VBLinearDynamicalSystem.sample`)."""
    if not isinstance(n_samples, Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int; got {n_samples!r}.")
    rng = check_random_state(random_state)
    dummy = np.zeros((n_samples, est.n_features_in_))
    Uall = full_inputs(dummy, U, est.n_user_inputs_, est.fit_intercept)
    k, p = est.n_states_, est.n_features_in_
    x0 = rng.multivariate_normal(est.init_state_mean_, est.init_state_cov_)[None]
    w = rng.standard_normal((n_samples, k))
    v = rng.standard_normal((n_samples, p))
    states, Y = simulate_lds(
        np.ascontiguousarray(est.A_mean_), np.ascontiguousarray(Uall @ est.B_mean_.T),
        np.ascontiguousarray(est.C_mean_), np.ascontiguousarray(Uall @ est.D_mean_.T),
        1.0 / np.sqrt(est.noise_precision_mean_), x0, w, v,
        np.array([0], dtype=np.int64), np.array([n_samples], dtype=np.int64),
    )
    return Y, states
