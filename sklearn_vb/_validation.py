"""Input checks shared by the estimators.

Every message names the argument that is wrong, and no function modifies its input
(arrays are copied whenever a conversion is needed).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "check_finite_2d",
    "check_symbols",
    "check_sequences",
    "check_lengths",
    "check_sequence_ids",
    "sequence_bounds",
]


def check_finite_2d(X, name="X", *, min_rows=1, dtype=np.float64, n_features=None):
    """Return ``X`` as a finite 2-D float array (a copy if conversion was needed).

    A 1-D array is rejected rather than silently reshaped: for sequence models a 1-D
    array is ambiguous (one long univariate sequence or one multivariate frame).
    """
    try:
        arr = np.asarray(X, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric; could not convert it: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got an array "
            f"with {arr.ndim} dimension(s) and shape {arr.shape}. Reshape 1-D data with "
            "X.reshape(-1, 1)."
        )
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} row(s); got {arr.shape[0]}.")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} has 0 feature(s) (shape {arr.shape}); at least one is required.")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} contains NaN or infinity (first at row {bad[0]}, column {bad[1]})."
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"{name} has {arr.shape[1]} feature(s), but the model was fitted with {n_features}."
        )
    return arr


def check_symbols(X, name="X", *, n_symbols=None):
    """Return categorical observations as a 1-D int64 array of symbols.

    Accepts a 1-D array or a 2-D array with one column.  Values must be integers
    (floats with integral values are accepted) in ``[0, n_symbols)``.
    """
    arr = np.asarray(X)
    if arr.ndim == 2:
        if arr.shape[1] != 1:
            raise ValueError(
                f"{name} of symbols must have one column; got shape {arr.shape}."
            )
        arr = arr[:, 0]
    elif arr.ndim != 1:
        raise ValueError(f"{name} of symbols must be 1-D or one column; got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty.")
    if arr.dtype.kind not in "iub":
        try:
            as_float = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must hold integer symbols; got dtype {arr.dtype}."
            ) from None
        if not np.all(np.isfinite(as_float)):
            raise ValueError(f"{name} contains NaN or infinity; symbols must be integers.")
        if not np.all(as_float == np.round(as_float)):
            raise ValueError(f"{name} must hold integer symbols; found non-integer values.")
        arr = as_float
    symbols = arr.astype(np.int64)
    if symbols.min() < 0:
        raise ValueError(f"{name} contains negative symbol {symbols.min()}; symbols must be >= 0.")
    if n_symbols is not None and symbols.max() >= n_symbols:
        raise ValueError(
            f"{name} contains symbol {symbols.max()}, outside the alphabet [0, {n_symbols}) "
            f"(n_symbols={n_symbols})."
        )
    return symbols


def check_sequences(n_samples, lengths=None, sequence_ids=None):
    """Return validated sequence lengths (int64 array summing to ``n_samples``).

    ``lengths`` follows hmmlearn (consecutive blocks of ``X``).  ``sequence_ids``
    is sample-aligned, one id per row, and survives sklearn's cross-validation
    splitters; rows of one sequence must be contiguous and in time order.  With
    neither, ``X`` is one sequence.
    """
    if lengths is not None and sequence_ids is not None:
        raise ValueError("Pass either lengths or sequence_ids, not both.")
    if sequence_ids is not None:
        ids = np.asarray(sequence_ids)
        if ids.ndim != 1 or ids.shape[0] != n_samples:
            raise ValueError(
                f"sequence_ids must be 1-D with one id per row of X ({n_samples}); "
                f"got shape {ids.shape}."
            )
        if n_samples == 0:
            raise ValueError("X is empty.")
        return check_sequence_ids(ids, "sequence_ids")[1]
    if lengths is None:
        if n_samples == 0:
            raise ValueError("X is empty.")
        return np.array([n_samples], dtype=np.int64)
    lens = check_lengths(lengths, "lengths")
    if int(lens.sum()) != n_samples:
        raise ValueError(
            f"lengths sum to {int(lens.sum())} but X has {n_samples} rows."
        )
    return lens


def check_lengths(lengths, name="lengths"):
    """Return hmmlearn-style sequence lengths as a non-empty 1-D int64 array of
    positive values (floats with integral values are accepted)."""
    lens = np.asarray(lengths)
    if lens.ndim != 1 or lens.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of ints; got shape {lens.shape}.")
    if lens.dtype.kind not in "iu":
        if lens.dtype.kind == "f" and np.all(lens == np.round(lens)):
            lens = lens.astype(np.int64)
        else:
            raise ValueError(f"{name} must be integers; got dtype {lens.dtype}.")
    if np.any(lens <= 0):
        raise ValueError(f"{name} must be positive: empty sequences are not allowed.")
    return lens.astype(np.int64)


def check_sequence_ids(ids, name="sequence_ids"):
    """Check that row-aligned sequence ids label contiguous blocks of rows.

    Returns ``(ids, lengths)``: the ids as a 1-D array and the int64 length of every
    block, in row order.  An id that appears in two separate blocks is an error (the
    rows of one sequence must be consecutive, in time order).
    """
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D array with one id per row; got shape {ids.shape}."
        )
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], change])
    firsts = ids[starts]
    _, first_block = np.unique(firsts, return_index=True)
    if first_block.size != firsts.size:
        again = firsts[np.setdiff1d(np.arange(firsts.size), first_block)[0]].item()
        raise ValueError(
            f"{name} must label contiguous blocks of rows: id {again!r} appears in two "
            "separate blocks (sort X by sequence, keeping time order within each)."
        )
    return ids, np.diff(np.append(starts, ids.size)).astype(np.int64)


def sequence_bounds(lengths):
    """Start and end offsets (end exclusive) of each sequence, as int64 arrays."""
    ends = np.cumsum(lengths).astype(np.int64)
    starts = ends - np.asarray(lengths, dtype=np.int64)
    return starts, ends
