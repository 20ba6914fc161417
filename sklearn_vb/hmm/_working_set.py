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

The starts of a fit in memory allocate more than an iteration on some data
(:func:`start_bytes`, checked by :func:`check_start_memory` once the frames are
validated, before the first start runs): ``"random_marginals"`` runs forward-backward
with one emission-table row per frame (as a Gaussian fit does) and shrinks the
marginals, about five (T, K) arrays; ``"random"`` and ``"kmeans"`` hold distances or
responsibilities, about three (T, K) arrays; ``"context"`` builds the window features
of every frame, the one-hot symbols (d = M) or the frames (d = D) and those of its two
neighbours, with their copies about eight (T, d) arrays.  For K = 20 and M = 40 these
are four and sixteen times an iteration's tables.
"""

from __future__ import annotations

import numpy as np

from .._core.memory import check_allocation

__all__ = ["batch_fit_bytes", "check_batch_fit_memory", "check_start_memory",
           "start_bytes"]

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


def start_bytes(how, n_frames, n_features, n_components, feature_dim):
    """Bytes of the arrays the start kind ``how`` allocates on ``n_frames`` validated
    frames in memory (see the module docstring); ``feature_dim``: the dimension d of a
    frame's features (the alphabet size for categorical emissions)."""
    T, K = int(n_frames), int(n_components)
    if how == "random_marginals":
        return 5 * T * K * _F8 + 4 * T * _F8
    if how in ("random", "kmeans"):
        return 3 * T * K * _F8 + T * int(n_features) * _F8
    if how == "context":
        return 8 * T * int(feature_dim) * _F8 + 2 * T * K * _F8
    return 0  # "random_params", "posterior": no pass over the frames


def check_start_memory(estimator, starts, X):
    """Refuse (``MemoryError``) a fit whose largest start of ``starts`` on the validated
    frames ``X`` (in memory) needs more memory than this process may still allocate."""
    n_frames = X.shape[0]
    n_features = X.shape[1] if X.ndim > 1 else 1
    feature_dim = getattr(estimator, "n_symbols_", n_features)
    K = estimator.n_components
    needed, how = max((start_bytes(how, n_frames, n_features, K, feature_dim), how)
                      for how in starts)
    check_allocation(
        needed,
        f"{type(estimator).__name__}.fit: the start init_params={how!r} on {n_frames:,} "
        f"frames with n_components={K} labels or scores every frame at once; its arrays",
        "Start from init_params='random_params' (no pass over the frames), learn online "
        "(partial_fit on chunks of X, or learning_method='online', whose starts run on "
        "one minibatch), or fit a dask array of X, whose starts run chunk by chunk.")
