"""Checks of prior arguments and of ``init_posterior`` arrays shared by the families
(and by the estimator's own Dirichlet priors)."""

from __future__ import annotations

import numpy as np

__all__ = ["check_dirichlet_prior", "check_positive_prior", "init_posterior_array"]


def check_dirichlet_prior(value, name, shape, default):
    """Per-entry Dirichlet concentrations of ``shape``: ``default`` everywhere when
    ``value`` is None, else ``value`` broadcast (positive and finite)."""
    if value is None:
        return np.full(shape, default)
    return check_positive_prior(value, name, shape)


def check_positive_prior(value, name, shape):
    """``value`` broadcast to ``shape`` as a float array of positive finite entries."""
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must contain positive finite values; got {value!r}.")
    try:
        return np.broadcast_to(arr, shape).copy()
    except ValueError:
        raise ValueError(
            f"{name} has shape {arr.shape}, which does not broadcast to {shape}."
        ) from None


def init_posterior_array(init, key, shape, positive=False):
    """``init[key]`` as a finite float array of ``shape`` (positive if asked)."""
    if key not in init:
        raise ValueError(f"init_posterior is missing the key {key!r}.")
    arr = np.array(init[key], dtype=float)
    if arr.shape != shape:
        raise ValueError(f"init_posterior[{key!r}] must have shape {shape}; got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"init_posterior[{key!r}] must be finite.")
    if positive and np.any(arr <= 0):
        raise ValueError(f"init_posterior[{key!r}] must be positive.")
    return arr
