"""Annealing schedules beta_0 = 0 < beta_1 < ... < beta_K = 1."""

from __future__ import annotations

import numpy as np

__all__ = ["make_schedule", "linear_schedule", "sigmoid_schedule", "beal_schedule",
           "geometric_schedule", "check_schedule"]


def linear_schedule(K):
    return np.linspace(0.0, 1.0, int(K) + 1)


def sigmoid_schedule(K, delta=4.0):
    """Grosse et al.: ``b_t = sigma(delta (2t/T - 1))``, t = 1..T, T = K+1, rescaled to [0, 1]."""
    T = int(K) + 1
    t = np.arange(1, T + 1)
    b = 1.0 / (1.0 + np.exp(-delta * (2.0 * t / T - 1.0)))
    return (b - b[0]) / (b[-1] - b[0])


def beal_schedule(K, e_tau=0.2):
    """Beal's ``tau(k) = e (k/K) / (1 - k/K + e)``: lingers at high temperature (small tau)."""
    if not e_tau > 0:
        raise ValueError(f"e_tau must be positive, got {e_tau}.")
    x = np.arange(int(K) + 1) / int(K)
    return e_tau * x / (1.0 - x + e_tau)


def geometric_schedule(K, beta_min=1e-4):
    if not 0 < beta_min < 1:
        raise ValueError(f"beta_min must be in (0, 1), got {beta_min}.")
    return np.concatenate([[0.0], np.geomspace(beta_min, 1.0, int(K))])


def check_schedule(betas):
    betas = np.asarray(betas, dtype=float)
    if betas.ndim != 1 or betas.size < 2:
        raise ValueError("schedule must be a 1-d array of at least 2 inverse temperatures.")
    if betas[0] != 0.0 or betas[-1] != 1.0:
        raise ValueError("schedule must start at 0 and end at 1.")
    if np.any(np.diff(betas) <= 0):
        raise ValueError("schedule must be strictly increasing.")
    return betas


def make_schedule(schedule, K, delta=4.0, e_tau=0.2, beta_min=1e-4):
    """An inverse-temperature array from a name or a custom array (validated)."""
    if not isinstance(schedule, str):
        return check_schedule(schedule)
    K = int(K)
    if K < 1:
        raise ValueError(f"n_temperatures must be >= 1, got {K}.")
    if schedule == "linear":
        b = linear_schedule(K)
    elif schedule == "sigmoid":
        b = sigmoid_schedule(K, delta)
    elif schedule == "beal":
        b = beal_schedule(K, e_tau)
    elif schedule == "geometric":
        b = geometric_schedule(K, beta_min)
    else:
        raise ValueError(
            f"schedule must be 'linear', 'sigmoid', 'beal', 'geometric' or an array, got {schedule!r}."
        )
    b[0], b[-1] = 0.0, 1.0
    return check_schedule(b)
