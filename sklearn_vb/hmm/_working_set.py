"""The memory a batch fit of an HMM allocates for its frames, computed before
allocating it, so that a fit too large for the process is refused with a message
that says what to do instead (:func:`check_batch_fit_memory`).

A batch VBE (or E) step runs forward-backward over every frame at once
(:func:`~sklearn_vb.hmm.forward_backward.forward_backward_scaled_counted`), which keeps

* the (T, K) table of scaled forward variables and two (T,) vectors (the per-step
  normalisers and their logs);
* the emission tables: the log table, its scaled copy and the expected counts, each
  (R, K) with R the alphabet size for categorical emissions and R = T otherwise (one
  row per frame), with the row shifts;

and the fit keeps the validated frames: (T,) int64 symbols and their table rows for
categorical emissions, (T, D) float64 frames and (T,) int64 table rows otherwise.
With continuous transition inputs the pass also holds three (T, K, K) arrays: the
transition log-weights of every frame, their scaled copy and the pair marginals.
Frames already in memory in the validated form are not counted again.
"""

from __future__ import annotations

import numpy as np

from .._core.memory import check_allocation

__all__ = ["batch_fit_bytes", "check_batch_fit_memory"]

_F8 = 8  # float64 and int64


def batch_fit_bytes(n_frames, n_features, n_components, categorical, n_symbols=0,
                    frames_in_memory=False):
    """Bytes of the arrays of one batch forward-backward pass over ``n_frames`` frames
    (see the module docstring); ``frames_in_memory``: the frames are already validated
    arrays in memory (not counted)."""
    T, K = int(n_frames), int(n_components)
    rows = int(n_symbols) + 1 if categorical else T
    fb = T * K * _F8 + 2 * T * _F8
    tables = 3 * rows * K * _F8 + rows * _F8
    if frames_in_memory:
        frames = 0 if categorical else T * _F8  # the per-frame table rows are made anew
    else:
        frames = (2 * T * _F8) if categorical else (T * int(n_features) * _F8 + T * _F8)
    return fb + tables + frames


def _validated_in_memory(X, categorical):
    """Whether ``X`` is already an in-memory array of the dtype validation makes."""
    if type(X) is not np.ndarray:  # a np.memmap is a subclass: its pages are on disk
        return False
    return X.dtype == (np.int64 if categorical else np.float64)


def check_batch_fit_memory(estimator, X):
    """Refuse (``MemoryError``) a batch fit of ``estimator`` on ``X`` whose
    forward-backward arrays do not fit in the memory this process may still allocate."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) == 0:
        return  # a list: already in memory in full, and small in practice
    categorical = estimator.emission == "categorical"
    n_frames = int(shape[0])
    n_features = int(shape[1]) if len(shape) > 1 else 1
    n_symbols = estimator.n_symbols if estimator.n_symbols is not None else 0
    needed = batch_fit_bytes(n_frames, n_features, estimator.n_components, categorical,
                             n_symbols, _validated_in_memory(X, categorical))
    K = estimator.n_components
    if estimator.transition_inputs == "continuous":
        needed += 3 * n_frames * K * K * _F8
    check_allocation(
        needed,
        f"{type(estimator).__name__}.fit: batch learning on {n_frames:,} frames with "
        f"n_components={K} runs forward-backward over all frames at once; its arrays "
        f"(the {n_frames:,} x {K} table of forward variables, the emission tables and "
        "the validated frames)",
        "Learn online instead: call partial_fit on chunks of X (e.g. consecutive slices "
        "of a np.memmap, each a few thousand sequences), which holds one minibatch in "
        "memory at a time; or fit a dask array of X, whose chunks are processed one task "
        "at a time.")
