"""Inference of the hidden states of the LDS given the parameters.

One function, :func:`smooth_states`, runs the Kalman filter (and optionally the RTS
smoother) of :mod:`sklearn_vb.lds.kalman` on all sequences, either under a variational
posterior ``q(A, B) q(C, D, rho)`` (the VBE step: the parameter-averaged potentials,
given the posterior moments) or at a point (the exact posterior ``p(x | y, theta)``).
The estimator's VBE and E steps, its predictions, and the scoring model's E step and
VB refinement all run it.  :func:`hidden_statistics` turns the smoothed marginals into
the expected sufficient statistics of the parameter update, pooled over sequences.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .kalman_batch import vb_kalman_smoother_grouped

__all__ = ["DataMoments", "HiddenStatistics", "OutputRows", "SmootherResult",
           "StatePosterior", "check_missing_outputs", "data_moments", "dynamics_moments", "hidden_statistics",
           "missing_outputs", "output_moments", "output_rows", "smooth_states"]


def missing_outputs(X):
    """``(X0, observed)``: the outputs ``X`` (N, p) with their missing entries (NaN) set
    to 0 and the (N, p) bool mask of the observed ones; ``(X, None)`` when nothing is
    missing.  Missing values are taken as missing at random: the likelihood is that of
    the observed entries."""
    missing = np.isnan(X)
    if not missing.any():
        return X, None
    return np.where(missing, 0.0, X), ~missing


def check_missing_outputs(X):
    """Refuse what the fit cannot do with the missing outputs (NaN) of ``X``: an output
    missing in every row (VB and the point fits marginalise every other pattern)."""
    missing = np.isnan(X)
    if not missing.any():
        return
    never = np.flatnonzero(missing.all(axis=0))
    if never.size:
        raise ValueError(f"X: output {int(never[0])} is missing (NaN) in every row; every "
                         "output needs at least one observed value to fit.")

class SmootherResult(NamedTuple):
    """What :func:`smooth_states` returns: the outputs of
    :func:`~sklearn_vb.lds.kalman.vb_kalman_smoother` by name (its docstring gives their
    shapes and meaning) and the per-sequence log normalisers."""

    #: (N,) ``ln zeta'_t``; at a point, the one-step-ahead predictive log densities
    log_terms: np.ndarray
    #: (N, k), (N, k, k) the belief about ``x_t`` given ``y_{1:t-1}``
    pred_mean: np.ndarray
    pred_cov: np.ndarray
    #: (N, k), (N, k, k) the belief about ``x_t`` given ``y_{1:t}``
    filt_mean: np.ndarray
    filt_cov: np.ndarray
    #: (N, k), (N, k, k) smoothed marginals of ``x_t`` (zeros without smoothing)
    omega: np.ndarray
    ups: np.ndarray
    #: (N, k, k) ``Cov(x_{t-1}, x_t)``
    cross: np.ndarray
    #: (n, k), (n, k, k) smoothed marginal of each sequence's ``x_0``
    omega0: np.ndarray
    ups0: np.ndarray
    #: (n,) entropy of q(x) per sequence (0 without smoothing)
    entropy: np.ndarray
    #: (n,) ``ln Z'`` per sequence, the sums of ``log_terms``
    ln_z: np.ndarray
    #: None, or (N,): ``pred_cov``, ``filt_cov``, ``ups`` and ``cross`` are then tables
    #: (M, k, k) of the distinct covariances, step t's at row ``cov_rows[t]``
    #: (``shared_covariances``)
    cov_rows: np.ndarray | None = None


class StatePosterior(NamedTuple):
    """The filtered and smoothed beliefs about the hidden states of every row of some
    sequences (:meth:`~sklearn_vb.lds.VBLinearDynamicalSystem.state_posterior`)."""

    #: (N, k), (N, k, k) mean and covariance of ``x_t`` given ``y_{1:t}`` of its sequence
    filtered_mean: np.ndarray
    filtered_cov: np.ndarray
    #: (N, k), (N, k, k) mean and covariance of ``x_t`` given its whole sequence
    smoothed_mean: np.ndarray
    smoothed_cov: np.ndarray
    #: (n,) first row and (n,) one past the last row of every sequence
    starts: np.ndarray
    ends: np.ndarray


def smooth_states(X, Us, Uo, starts, ends, M_AB, M_CD, rho, mu0, Sigma0, *, Sigma_AB=None,
                  Sigma_CD=None, log_rho=None, smooth=True,
                  observed=None, shared_covariances=False) -> SmootherResult:
    """Kalman filter and RTS smoother over all sequences.

    ``M_AB`` (k, k + ds) and ``M_CD`` (p, k + do) are the posterior means of the rows of
    ``[A B]`` and ``[C D]``, ``rho`` (p,) the mean noise precisions.  With the row
    covariances ``Sigma_AB``, ``Sigma_CD`` and ``log_rho = <ln rho>`` of q(theta) given,
    the filter runs on the parameter-averaged potentials (the VBE step, Beal 2003,
    eqs. 5.68-5.132); without them, it is the plain filter at the point ``(M_AB, M_CD,
    rho)``.  ``observed`` (N,) bool marks the steps whose observation is used (default:
    all).

    Missing entries (NaN in ``X``): a step updates with its observed outputs only (the
    observed rows of C, D and their noise precisions); a step with nothing observed is
    a step without observation.  ``Sigma_CD`` is then either shared by the rows of
    ``[C D]`` (k + do, k + do) or one per row (p, k + do, k + do), as a q(theta) fitted
    with missing entries has it.

    Groups of equal-length sequences without missing entries or unobserved steps
    share one covariance recursion and run batched
    (:func:`~sklearn_vb.lds.kalman_batch.batch_groups`; the results are those of the
    per-sequence kernel to round-off).  With ``shared_covariances`` their covariances
    are returned once per group and step (``SmootherResult.cov_rows``), not copied to
    every row.
    """
    point = Sigma_AB is None
    if point != (Sigma_CD is None) or point != (log_rho is None):
        raise ValueError("Sigma_AB, Sigma_CD and log_rho are given together or not at all.")
    k = M_AB.shape[0]
    A = np.ascontiguousarray(M_AB[:, :k])
    B = M_AB[:, k:]
    C = np.ascontiguousarray(M_CD[:, :k])
    D = M_CD[:, k:]
    N, p = X.shape
    X, obs_mask = missing_outputs(X)
    if obs_mask is not None:
        observed = (np.ones(N, dtype=np.bool_) if observed is None
                    else np.array(observed, dtype=np.bool_))
        observed &= obs_mask.any(axis=1)  # nothing observed: a step without observation
    y_res = np.ascontiguousarray(X - Uo @ D.T)
    bu = np.ascontiguousarray(Us @ B.T)
    S_C_d = np.zeros((0, k, k))
    gap_d = np.zeros(0)
    if point:
        S_A = np.zeros((k, k))
        S_C = np.zeros((k, k))
        h_ab = np.zeros((N, k))
        h_cd = np.zeros((N, k))
        c_ab = np.zeros(N)
        c_cd = np.zeros(N)
        gap = 0.0
        if obs_mask is not None:
            S_C_d = np.zeros((p, k, k))
            gap_d = np.zeros(p)
    else:
        # the penalties are the posterior-covariance parts of <[A B]'[A B]> (k rows, each
        # with covariance Sigma_AB) and of <[C D]' diag(rho) [C D]> (row s has covariance
        # Sigma_CD / rho_s)
        K_AB = k * Sigma_AB
        per_row = np.ndim(Sigma_CD) == 3
        K_CD = Sigma_CD.sum(axis=0) if per_row else p * Sigma_CD
        S_A = np.ascontiguousarray(K_AB[:k, :k])
        S_C = np.ascontiguousarray(K_CD[:k, :k])
        h_ab = np.ascontiguousarray(Us @ K_AB[:k, k:].T)
        c_ab = 0.5 * np.einsum("tc,cd,td->t", Us, K_AB[k:, k:], Us)
        gap = 0.5 * float(np.sum(log_rho - np.log(rho)))
        if obs_mask is None:
            h_cd = np.ascontiguousarray(Uo @ K_CD[:k, k:].T)
            c_cd = 0.5 * np.einsum("tc,cd,td->t", Uo, K_CD[k:, k:], Uo)
        else:
            # every step's penalty sums over its observed outputs only
            rows = Sigma_CD if per_row else np.broadcast_to(Sigma_CD, (p,) + Sigma_CD.shape)
            m = obs_mask.astype(float)
            S_C_d = np.ascontiguousarray(rows[:, :k, :k])
            h_cd = np.ascontiguousarray(np.einsum("ts,tc,sjc->tj", m, Uo, rows[:, :k, k:]))
            c_cd = 0.5 * np.einsum("ts,tc,scd,td->t", m, Uo, rows[:, k:, k:], Uo)
            gap_d = 0.5 * (log_rho - np.log(rho))
    if observed is None:
        observed = np.ones(N, dtype=np.bool_)
    mask = np.zeros((0, p), dtype=np.bool_) if obs_mask is None else obs_mask
    # groups of equal-length, fully observed sequences share one covariance
    # recursion (kalman_batch); every other sequence runs on its own
    out = vb_kalman_smoother_grouped(
        y_res, bu, h_ab, c_ab, h_cd, c_cd, observed, np.ascontiguousarray(mask),
        starts.astype(np.int64), ends.astype(np.int64),
        A, C, np.ascontiguousarray(rho), S_A, S_C, S_C_d, gap,
        np.ascontiguousarray(gap_d, dtype=np.float64),
        np.ascontiguousarray(mu0, dtype=np.float64),
        np.ascontiguousarray(Sigma0, dtype=np.float64), smooth, shared=shared_covariances,
    )
    # the kernel returns a plain tuple (numba); it is named here, in its one caller
    ln_z = np.add.reduceat(out[0], starts) if N else np.zeros(0)
    return SmootherResult(*out[:11], ln_z, out[11])


class HiddenStatistics(NamedTuple):
    """Expected sufficient statistics of a q(x), pooled over sequences (Beal 2003,
    eqs. 5.126-5.132, pooled as eqs. 5.148-5.149).  ``prev_t`` is ``<x_{t-1}>``, the
    sequence's ``<x_0>`` at its first step; sums run over all time steps."""

    #: sum_t <x_{t-1} x_{t-1}'>, (k, k)
    W_A: np.ndarray
    #: sum_t <x_{t-1} x_t'>, (k, k)
    S_A: np.ndarray
    #: sum_t <x_{t-1}> us_t', (k, ds)
    G_A: np.ndarray
    #: sum_t us_t <x_t>', (ds, k)
    M: np.ndarray
    #: sum_t <x_t x_t'>, (k, k)
    W_C: np.ndarray
    #: sum_t <x_t> y_t', (k, p)
    S_C: np.ndarray
    #: sum_t <x_t> uo_t', (k, do)
    G_C: np.ndarray
    #: sum_t Cov(x_t), (k, k)
    ups_sum: np.ndarray
    #: (N, k) the means prev_t
    prev: np.ndarray
    #: sum_t Cov(x_{t-1}), (k, k)
    ups_prev_sum: np.ndarray
    #: sum_t Cov(x_{t-1}, x_t), (k, k)
    cross_sum: np.ndarray
    #: number of time steps
    T: int
    #: number of sequences
    n_seq: int
    #: (p, k, k) sum_t Cov(x_t) over the steps where output s is observed; None when
    #: no output is missing
    ups_sum_d: np.ndarray | None = None


class DataMoments(NamedTuple):
    """The statistics of the observed sequences that do not depend on q(x)."""

    #: (ds, ds) ``sum_t us_t us_t'``
    UUs: np.ndarray
    #: (do, do) ``sum_t uo_t uo_t'``
    UUo: np.ndarray
    #: (do, p) ``sum_t uo_t y_t'``
    UY: np.ndarray
    #: (p,) ``sum_t y_ts^2`` per output
    YY: np.ndarray


def data_moments(Y, Us, Uo):
    """The :class:`DataMoments` of outputs ``Y`` (N, p), state inputs ``Us`` (N, ds)
    and output inputs ``Uo`` (N, do)."""
    return DataMoments(UUs=Us.T @ Us, UUo=Uo.T @ Uo, UY=Uo.T @ Y,
                       YY=np.einsum("ts,ts->s", Y, Y))


def dynamics_moments(s, UUs):
    """``(W_z, R_AB)`` of the regression of ``x_t`` on ``z_t = [x_{t-1}; us_t]`` for the
    :class:`HiddenStatistics` ``s`` and ``UUs = sum_t us_t us_t'``:
    ``W_z = sum_t <z_t z_t'> = [[W_A, G_A], [G_A', UUs]]`` (k + ds, k + ds) and
    ``R_AB = sum_t <z_t x_t'> = [S_A; M]`` (k + ds, k), whose column j is the target
    of row j of ``[A B]``."""
    return np.block([[s.W_A, s.G_A], [s.G_A.T, UUs]]), np.vstack([s.S_A, s.M])


def output_moments(s, UUo, UY):
    """``(W_w, R_CD)`` of the regression of ``y_t`` on ``w_t = [x_t; uo_t]`` for the
    :class:`HiddenStatistics` ``s``, ``UUo = sum_t uo_t uo_t'`` and ``UY = sum_t uo_t
    y_t'``: ``W_w = sum_t <w_t w_t'> = [[W_C, G_C], [G_C', UUo]]`` (k + do, k + do) and
    ``R_CD = sum_t <w_t> y_t' = [S_C; UY]`` (k + do, p)."""
    return np.block([[s.W_C, s.G_C], [s.G_C.T, UUo]]), np.vstack([s.S_C, UY])


def hidden_statistics(omega, ups, cross, omega0, ups0, starts, ends, Y, Us, Uo,
                      obs_mask=None, cov_rows=None):
    """The :class:`HiddenStatistics` of the marginals of a q(x).

    ``omega, ups`` (N, k), (N, k, k): means and covariances of ``x_t``; ``cross``
    (N, k, k): ``Cov(x_{t-1}, x_t)``; ``omega0, ups0`` (n, k), (n, k, k): moments of
    each sequence's ``x_0``; ``starts, ends``: the sequences' row offsets (end
    exclusive); ``Y, Us, Uo``: outputs (missing entries as 0), state inputs and output
    inputs; ``obs_mask`` (N, p) the observed outputs (None: all).  With ``cov_rows``
    (N,) ``ups`` and ``cross`` are tables, row t's at ``cov_rows[t]``
    (:class:`SmootherResult`).
    """
    prev = np.empty_like(omega)
    prev[1:] = omega[:-1]
    prev[starts] = omega0
    if cov_rows is None:
        ups_sum = ups.sum(axis=0)
        ups_last = ups[ends - 1].sum(axis=0)
        cross_sum = cross.sum(axis=0)
    else:  # each distinct covariance times the number of rows that have it
        count = np.bincount(cov_rows, minlength=ups.shape[0]).astype(float)
        ups_sum = np.tensordot(count, ups, axes=1)
        ups_last = ups[cov_rows[ends - 1]].sum(axis=0)
        cross_sum = np.tensordot(count, cross, axes=1)
        if obs_mask is not None:
            ups = ups[cov_rows]
    ups_prev_sum = ups_sum - ups_last + ups0.sum(axis=0)
    return HiddenStatistics(
        W_A=ups_prev_sum + prev.T @ prev,
        S_A=cross_sum + prev.T @ omega,
        G_A=prev.T @ Us,
        M=Us.T @ omega,
        W_C=ups_sum + omega.T @ omega,
        S_C=omega.T @ Y,
        G_C=omega.T @ Uo,
        ups_sum=ups_sum,
        prev=prev,
        ups_prev_sum=ups_prev_sum,
        cross_sum=cross_sum,
        T=int(Y.shape[0]),
        n_seq=int(starts.shape[0]),
        ups_sum_d=(None if obs_mask is None
                   else np.einsum("ts,tij->sij", obs_mask.astype(float), ups)),
    )


class OutputRows(NamedTuple):
    """The regression of every output on ``w_t = [x_t; uo_t]`` over the steps where it
    is observed (outputs with missing entries): each row of ``[C D]`` has its own
    design."""

    #: (p, k + do, k + do) ``sum_{t: y_ts observed} <w_t w_t'>``
    W: np.ndarray
    #: (p, k + do) ``sum_{t: y_ts observed} <w_t> y_ts``
    R: np.ndarray
    #: (p,) ``sum_{t: y_ts observed} y_ts^2``
    YY: np.ndarray
    #: (p,) the number of steps where output s is observed
    T: np.ndarray


def output_rows(s, omega, Y0, Uo, obs_mask):
    """The :class:`OutputRows` of the :class:`HiddenStatistics` ``s`` (with
    ``ups_sum_d``), the state means ``omega``, the outputs ``Y0`` (missing entries 0),
    the output inputs ``Uo`` and the mask ``obs_mask`` (N, p) of the observed outputs."""
    k = omega.shape[1]
    w = np.hstack([omega, Uo])
    m = obs_mask.astype(float)
    W = np.einsum("ts,ti,tj->sij", m, w, w)
    W[:, :k, :k] += s.ups_sum_d
    return OutputRows(W=W, R=(m * Y0).T @ w, YY=np.einsum("ts,ts->s", m, Y0 * Y0),
                      T=m.sum(axis=0))
