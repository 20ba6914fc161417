"""Known states at some frames (partial labels): q(s) clamped there.

With the state of frame t known to be k, the posterior over paths keeps only the paths
through k at t: the emission log-likelihood of every other state at t is set to -inf,
which the forward-backward pass turns into zero probability.  The pass then computes
ln sum over the consistent paths of p~(X, s), so the bound of a fit with known states is
a bound on ln p(X, known states), and the expected statistics count the known frames
with responsibility one.

The forward-backward kernels read one log-likelihood row per *table row* shared by all
frames with the same row index (the symbols of categorical emissions), so a known frame
gets a row of its own: its row of the table with the mask added, appended after the
shared rows.  :func:`fold_counts` adds the kernel's per-row counts of the appended rows
back onto the rows they were copied from.
"""

from __future__ import annotations

import numpy as np

__all__ = ["align_with_known", "check_states", "clamp_table", "fold_counts"]


def check_states(states, n_frames, n_components):
    """``states`` as an int64 array (n_frames,), -1 where unknown; a clear error naming
    the argument otherwise.  None stays None."""
    if states is None:
        return None
    arr = np.asarray(states)
    if arr.ndim != 1 or arr.shape[0] != n_frames:
        raise ValueError(f"states must have one entry per row of X ({n_frames}); got shape "
                         f"{arr.shape}.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError("states must hold integers (-1 for unknown).")
    elif arr.dtype.kind not in "iu":
        raise ValueError(f"states must hold integers (-1 for unknown); got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < -1 or arr.max() >= n_components):
        raise ValueError(f"states must be -1 (unknown) or a state in [0, {n_components}); "
                         f"got values from {arr.min()} to {arr.max()}.")
    return arr


def clamp_table(table, index, known):
    """The table (R', K) and per-frame row index with every known frame of ``known``
    (-1: unknown, or None) on a row of its own that allows only its state; returns
    ``(table, index, n_shared)``, ``n_shared`` the number of rows shared as before
    (None when nothing is known: then the inputs are returned)."""
    if known is None:
        return table, index, None
    frames = np.flatnonzero(known >= 0)
    if frames.size == 0:
        return table, index, None
    n_shared, K = table.shape
    own = np.full((frames.size, K), -np.inf)
    rows = np.arange(frames.size)
    own[rows, known[frames]] = table[index[frames], known[frames]]
    index = index.copy()
    index[frames] = n_shared + rows
    return np.vstack([table, own]), index, n_shared


def fold_counts(counts, index, known, n_shared):
    """The kernel's per-row counts of a clamped table folded back onto the shared rows
    (``index`` the frames' rows before clamping)."""
    if n_shared is None:
        return counts
    frames = np.flatnonzero(known >= 0)
    out = np.array(counts[:n_shared], copy=True)
    np.add.at(out, index[frames], counts[n_shared:])
    return out


def align_with_known(resp, known):
    """Start responsibilities (n_frames, K) with their states renamed to agree best with
    the known states, and the known frames set to them.

    A start's state names are arbitrary; a start whose names disagree with the labels
    begins with the known frames clamped inside the wrong clusters, and VBEM then
    converges to that labelling with the known frames as outliers.  The renaming is the
    permutation that maximises the responsibility the start gives the known frames'
    states (an assignment problem over K x K)."""
    from scipy.optimize import linear_sum_assignment

    frames = np.flatnonzero(known >= 0)
    if frames.size == 0:
        return resp
    K = resp.shape[1]
    agreement = np.zeros((K, K))  # [start state, known state]
    np.add.at(agreement.T, known[frames], resp[frames])
    start_state, known_state = linear_sum_assignment(agreement, maximize=True)
    renamed = np.empty_like(resp)
    renamed[:, known_state] = resp[:, start_state]
    renamed[frames] = 0.0
    renamed[frames, known[frames]] = 1.0
    return renamed
