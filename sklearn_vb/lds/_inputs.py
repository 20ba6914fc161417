"""The inputs ``u_t`` of a linear dynamical system: validation of the user's input
matrix, the intercept column, and which columns drive the states and the outputs."""

from __future__ import annotations

import numpy as np

__all__ = ["full_inputs", "input_columns"]


def full_inputs(X, U, n_user_inputs, fit_intercept):
    """Validated full input matrix (user inputs then intercept), shape (N, d).

    ``n_user_inputs`` is the number of user inputs the model was fitted with (None
    while fitting: any)."""
    N = X.shape[0]
    if U is None:
        if n_user_inputs:
            raise ValueError(
                f"U is required: the model was fitted with {n_user_inputs} input(s)."
            )
        U = np.zeros((N, 0))
    else:
        try:
            U = np.asarray(U, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"U must be numeric; {exc}") from None
        if U.ndim == 1:
            raise ValueError(
                f"U must be 2-D of shape (n_samples, n_inputs); got shape {U.shape}. "
                "Reshape a single input with U.reshape(-1, 1)."
            )
        if U.ndim != 2 or U.shape[0] != N:
            raise ValueError(
                f"U must have one row per row of X ({N}); got shape {U.shape}."
            )
        if not np.all(np.isfinite(U)):
            raise ValueError("U contains NaN or infinity; inputs must be finite "
                             "(the model has no missing-value support for U).")
        if n_user_inputs is not None and U.shape[1] != n_user_inputs:
            raise ValueError(
                f"U has {U.shape[1]} column(s), but the model was fitted with "
                f"{n_user_inputs} input(s)."
            )
    if fit_intercept:
        U = np.hstack([U, np.ones((N, 1))])
    return np.ascontiguousarray(U)


def input_columns(n_user, input_to_state, input_to_output, fit_intercept):
    """The columns of the full input matrix that drive the states and the outputs
    (``input_to_state``, ``input_to_output``: a bool or one bool per user input; the
    intercept drives both)."""
    def mask(value, name):
        if isinstance(value, (bool, np.bool_)):
            m = np.full(n_user, bool(value))
        else:
            m = np.asarray(value)
            if m.dtype != bool or m.shape != (n_user,):
                raise ValueError(
                    f"{name} must be a bool or a boolean array with one entry per "
                    f"input column ({n_user}); got {value!r}."
                )
        if fit_intercept:
            m = np.append(m, True)
        return np.flatnonzero(m)

    return (mask(input_to_state, "input_to_state"),
            mask(input_to_output, "input_to_output"))
