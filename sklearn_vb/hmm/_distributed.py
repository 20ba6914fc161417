"""Batch VBEM of an HMM on a dask array or on partitions of sequences (a dask bag, or
a list of dask delayed objects): the VBE step runs where the chunks live.

The row chunks of an array must hold whole sequences; a partition of a bag holds whole
sequences by construction (every item is one sequence, an array of frames), and so
does a delayed object (one array of frames, or a list of them).  Every chunk (row
chunk or partition) is validated once
and kept where it is (as futures on a ``distributed`` cluster; without a client, as
delayed objects that the local scheduler recomputes from the array's graph whenever a
pass needs them, so that only a few chunks are in memory at a time).  Every pass over
the data (the VBE step of an iteration, a start) then runs one task per chunk that
calls the same function as the in-memory fit on the chunk's sequences
(:func:`~sklearn_vb.hmm._vbem.vbe_statistics`, ...) with the small parameter arrays of
q(theta) as arguments, and sums the results on the client, in chunk order.  The VBM
step, the bound, the convergence test and SQUAREM run on the client, as in memory.

The parameters travel inside the tasks rather than being scattered to the workers:
scattered data have no lineage, so they would be lost with a worker, while a task's
arguments are resent with it.  A lost worker costs the chunks it held and the tasks it
was running; the scheduler recomputes both elsewhere from the array's graph, and the
client waits for them, so the iteration completes with the same result.  ``RETRIES``
more attempts are allowed to a task that raises (e.g. a read error of the storage).

Nothing here imports dask at module level: the package must import without it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from .._core.distributed import (check_batch_vb, chunk_runner, is_dask_array,
                                 is_dask_partitions)
from .._core.validation import sequence_bounds
from ._context import context_centres, context_features, context_labels
from ._data import _FitData
from ._vbem import add_results, stats_from_resp
from .emissions._base import nearest_centre, one_hot
from .emissions._missing import fill_missing

__all__ = ["DaskFitData", "dask_fit_data", "in_memory", "is_dask_array", "is_dask_input",
           "sequence_chunks"]

#: frames that the k-means start of a distributed fit clusters (a uniform sample)
KMEANS_SAMPLE = 100_000


def sequence_chunks(lengths, rows_per_chunk):
    """Row chunk sizes that hold whole sequences: consecutive sequences grouped so that
    a chunk has about ``rows_per_chunk`` rows (at least one sequence, so a longer
    sequence makes a chunk of its own).  ``X.rechunk({0: sequence_chunks(lengths, n)})``
    makes a dask array fit for :meth:`sklearn_vb.VBHiddenMarkov.fit`.

    Examples
    --------
    >>> from sklearn_vb.hmm import sequence_chunks
    >>> sequence_chunks([3, 4, 2, 6, 1], 6)
    (7, 8, 1)
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if rows_per_chunk < 1:
        raise ValueError(f"rows_per_chunk must be positive; got {rows_per_chunk!r}.")
    chunks, current = [], 0
    for length in lengths.tolist():
        current += length
        if current >= rows_per_chunk:
            chunks.append(current)
            current = 0
    if current:
        chunks.append(current)
    return tuple(chunks)


def _chunk_sequences(row_chunks, lengths):
    """The sequences (first, end) of every non-empty row chunk, or ValueError when a
    chunk boundary falls inside a sequence."""
    ends = np.cumsum(lengths)
    bounds = np.cumsum(row_chunks)
    if bounds[-1] != ends[-1]:
        raise ValueError(f"lengths must sum to the number of rows of X ({int(bounds[-1])}); "
                         f"they sum to {int(ends[-1])}.")
    out, first = [], 0
    for size, bound in zip(row_chunks, bounds):
        if size == 0:
            continue
        end = int(np.searchsorted(ends, bound)) + 1
        if ends[end - 1] != bound:
            start = bound - size
            seq = end - 1
            raise ValueError(
                "X: the row chunks of a dask array must hold whole sequences; the chunk of "
                f"rows {start}-{bound} ends inside sequence {seq} (rows "
                f"{int(ends[seq] - lengths[seq])}-{int(ends[seq])}).  Rechunk X, e.g. "
                "X.rechunk({0: sklearn_vb.hmm.sequence_chunks(lengths, rows_per_chunk)}).")
        out.append((first, end))
        first = end
    return out


# ---------------------------------------------------------------------------
# the functions the workers run
# ---------------------------------------------------------------------------


def _prepare_chunk(block, lengths, family, estimator):
    """The chunk's frames validated as in memory, as fit data of its own."""
    X = family.check_X(block, estimator, True)
    starts, ends = sequence_bounds(lengths)
    return _FitData(X=X, index=family.table_index(X), lengths=lengths, starts=starts,
                    ends=ends)


def _partition_frames(items):
    """The sequences of a partition (an array of frames is one sequence; any other
    iterable holds sequences) as one array of frames and their lengths."""
    items = [items] if hasattr(items, "__array__") else list(items)
    arrays = []
    for item in items:
        frames = np.asarray(item)
        if frames.ndim not in (1, 2):
            raise ValueError("X: every sequence of a dask bag (or delayed object) must be "
                             "an array of frames, 1-D or (n_frames, n_features); got one "
                             f"of shape {frames.shape}.")
        if frames.shape[0] == 0:
            raise ValueError("X: a sequence of the dask bag (or delayed object) has no "
                             "frames.")
        arrays.append(frames.reshape(frames.shape[0], -1))
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    if not arrays:
        return None, lengths
    if len({a.shape[1] for a in arrays}) > 1:
        raise ValueError("X: the sequences of the dask bag (or delayed objects) have "
                         "different numbers of features.")
    return np.concatenate(arrays), lengths


def _prepare_partition(items, family, estimator):
    """A partition's sequences validated as in memory, as fit data of their own (None
    for a partition without sequences)."""
    X, lengths = _partition_frames(items)
    return None if X is None else _prepare_chunk(X, lengths, family, estimator)


def _lengths(chunk):
    return np.zeros(0, dtype=np.int64) if chunk is None else chunk.lengths


def _moments(chunk, family):
    return family.data_moments(chunk.X)


def _rows(chunk, family, rows):
    return chunk.X[rows]


def _nearest_centre_stats(chunk, family, centres, emission_prior, column_means):
    # a missing entry counts as its column's mean over the whole data, as in memory
    X = fill_missing(chunk.X, column_means)
    resp = one_hot(nearest_centre(X, centres), centres.shape[0])
    if family.latent_missing:
        # the start's statistics too (a family whose missing entries are latent imputes
        # them in a start, with the whole data's means in memory)
        chunk = copy.copy(chunk)
        chunk.X = X
    return stats_from_resp(family, resp, chunk, emission_prior)


def _context_rows(chunk, family, emission_prior, rows):
    # chunks hold whole sequences, so a frame's neighbours are in its chunk
    features = context_features(family.frame_features(chunk.X, emission_prior),
                                chunk.starts, chunk.ends)
    return features[rows]


def _nearest_context_stats(chunk, family, centres, emission_prior):
    features = _context_rows(chunk, family, emission_prior, slice(None))
    resp = one_hot(context_labels(features, centres), centres.shape[0])
    return stats_from_resp(family, resp, chunk, emission_prior)


# ---------------------------------------------------------------------------
# running them
# ---------------------------------------------------------------------------


@dataclass
class DaskFitData:
    """The training sequences of a fit on a dask array: the validated chunks where they
    live and what the fit needs of the whole (the counterpart of ``_FitData``).

    Attributes
    ----------
    chunks : list
        Every non-empty row chunk as ``_FitData`` of its sequences: futures of the
        client's cluster, or delayed objects without a client.
    row_chunks : ndarray of int64
        The number of rows of every chunk of ``chunks``.
    lengths : ndarray of int64
        Length of every sequence.
    summary : object or None
        The emission family's summary of the frames (merged over the chunks).
    column_means : ndarray or None
        The mean of the observed entries of every column, which stands for a missing
        entry in the starts (None when the family's starts do not impute).
    """

    chunks: list
    row_chunks: np.ndarray
    lengths: np.ndarray
    runner: Any
    summary: object = None
    column_means: Any = None

    @property
    def n_frames(self):
        return int(self.lengths.sum())

    @property
    def n_sequences(self):
        return int(self.lengths.shape[0])

    def map(self, fn, *args):
        """``fn(chunk, *args)`` of every chunk, in chunk order."""
        return self.runner.map(fn, self.chunks, args)

    def chunk_sum(self, family, fn, *args):
        """``fn(chunk, family, *args)`` summed over the chunks, in chunk order (see
        :meth:`_FitData.chunk_sum`)."""
        results = self.map(fn, family, *args)
        total = results[0]
        for result in results[1:]:
            total = add_results(family, total, result)
        return total

    def frames(self, rows):
        """The validated frames of the (sorted) global row indices ``rows``."""
        offsets = np.concatenate([[0], np.cumsum(self.row_chunks)])
        which = np.searchsorted(offsets, rows, side="right") - 1
        parts = []
        for c in np.unique(which):
            local = rows[which == c] - offsets[c]
            parts.append(self.runner.map(_rows, [self.chunks[c]], (None, local))[0])
        return np.concatenate(parts)

    def start_statistics(self, how, family, n_components, emission_prior, random_state):
        """The statistics of a start by labels (see :meth:`_FitData.start_statistics`):
        ``"random"`` labels every frame by the nearest of K random frames, as in memory;
        ``"kmeans"`` by the nearest k-means centre of a uniform sample of at most
        ``KMEANS_SAMPLE`` frames (all frames, in order, when there are no more: then the
        same centres as in memory).  Random soft responsibilities of every frame
        (``"random"`` of categorical emissions) are not drawn for a dask array."""
        K, n = n_components, self.n_frames
        if how == "context":
            return self._context_statistics(family, K, emission_prior, random_state)
        if how not in ("kmeans", "random") or family.random_params_init:
            raise ValueError(
                f"init_params={how!r} draws responsibilities of every frame and is not "
                "available for a dask array; use 'auto', 'random_params', "
                "'random_marginals' or 'posterior'.")
        if n < K:
            raise ValueError(f"init_params={how!r} needs at least n_components={K} samples; "
                             f"got n_samples={n}.")
        if how == "kmeans":
            from sklearn.cluster import KMeans

            rows = (np.arange(n) if n <= KMEANS_SAMPLE
                    else np.sort(random_state.choice(n, KMEANS_SAMPLE, replace=False)))
            sample = fill_missing(self.frames(rows), self.column_means)
            centres = KMeans(n_clusters=K, n_init=1,
                             random_state=random_state.randint(2**31 - 1)).fit(sample)
            centres = centres.cluster_centers_
        else:
            chosen = random_state.choice(n, K, replace=False)
            order = np.argsort(chosen)
            frames = fill_missing(self.frames(chosen[order]), self.column_means)
            centres = np.empty_like(frames)
            centres[order] = frames
        return self.chunk_sum(family, _nearest_centre_stats, centres, emission_prior,
                              self.column_means)

    def _context_statistics(self, family, K, emission_prior, random_state):
        """``"context"``: every frame labelled by the nearest centre of k-means on the
        window features of a uniform sample of at most ``KMEANS_SAMPLE`` frames (all
        frames when there are no more: then the same labels as in memory)."""
        if family.emission != "categorical":
            # a vector family's missing entries would take their chunk's column means
            raise ValueError("init_params='context' on a dask array needs categorical "
                             "emissions; use 'kmeans' or 'random'.")
        n = self.n_frames
        rows = (np.arange(n) if n <= KMEANS_SAMPLE
                else np.sort(random_state.choice(n, KMEANS_SAMPLE, replace=False)))
        offsets = np.concatenate([[0], np.cumsum(self.row_chunks)])
        which = np.searchsorted(offsets, rows, side="right") - 1
        sample = np.concatenate([
            self.runner.map(_context_rows, [self.chunks[c]],
                            (family, emission_prior, rows[which == c] - offsets[c]))[0]
            for c in np.unique(which)])
        centres = context_centres(sample, K, random_state)
        return self.chunk_sum(family, _nearest_context_stats, centres, emission_prior)


def is_dask_input(X):
    """Whether ``fit`` reads ``X`` where its chunks live: a dask array, a dask bag or a
    list of dask delayed objects."""
    return is_dask_array(X) or is_dask_partitions(X)


def in_memory(X, what="X"):
    """``X``, or a clear ValueError when it is a dask bag or a list of delayed objects,
    which only ``fit`` reads (``what``: the argument or method that got it)."""
    if is_dask_partitions(X):
        raise ValueError(
            f"{what}: a dask bag or a list of dask delayed objects is read by fit only "
            "(batch VBEM).  Compute the sequences and pass them as one array with "
            "lengths, e.g. parts = bag.compute(); X = np.concatenate(parts), "
            "lengths=[len(p) for p in parts]; or, to learn online, compute one "
            "partition at a time (bag.to_delayed()) and call partial_fit on its "
            "sequences.")
    return X


def _check_dask_fit(estimator, sequence_ids, states, U, what):
    """What a fit on a dask collection (``what``) cannot combine with."""
    if sequence_ids is not None:
        raise ValueError(f"sequence_ids is not supported with {what}; give "
                         + ("lengths." if what == "a dask array X" else
                            "the sequences as its items."))
    check_batch_vb(estimator, what[0].upper() + what[1:])
    if states is not None:
        raise ValueError(f"states (known states) is not supported with {what}.")
    if U is not None:
        raise ValueError(f"U (transition inputs) is not supported with {what}.")


def dask_fit_data(estimator, X, lengths, sequence_ids=None, states=None, U=None):
    """Validate the dask array ``X`` of sequences of ``lengths`` (or the partitions of
    sequences of a dask bag or list of delayed objects ``X``, whose sequences are their
    items: ``lengths`` is then refused) chunk by chunk where the chunks live, set the
    estimator's data-dependent fitted attributes (``n_features_in_``, ``n_symbols_``,
    ...) and return the :class:`DaskFitData`; ``sequence_ids``, known ``states`` and
    inputs ``U`` are refused, as are the settings that do not fit by batch VBEM."""
    if is_dask_partitions(X):
        return _partitions_fit_data(estimator, X, lengths, sequence_ids, states, U)
    _check_dask_fit(estimator, sequence_ids, states, U, "a dask array X")
    import dask

    family = estimator._family
    if lengths is None:
        lengths = [X.shape[0]]
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0 or not np.issubdtype(lengths.dtype, np.integer) \
            or np.any(lengths < 1):
        raise ValueError("lengths must be a non-empty 1-D array of positive integers.")
    lengths = lengths.astype(np.int64)
    if X.ndim == 2 and X.numblocks[1] > 1:
        X = X.rechunk({1: -1})  # whole frames in every chunk; lazy
    row_chunks = np.asarray(X.chunks[0], dtype=np.int64)
    spans = _chunk_sequences(row_chunks, lengths)
    blocks = [b for b, size in zip(X.to_delayed().ravel(), row_chunks) if size > 0]
    # the attributes that validation sets (n_features_in_, ...), from the first rows
    family.check_X(np.asarray(X[:1].compute()), estimator, True)
    checker = clone(estimator)
    prepare = dask.delayed(_prepare_chunk, pure=True)
    runner = chunk_runner()
    chunks = runner.keep([prepare(block, lengths[a:b], family, checker)
                          for block, (a, b) in zip(blocks, spans)])
    data = DaskFitData(chunks=chunks, row_chunks=row_chunks[row_chunks > 0],
                       lengths=lengths, runner=runner)
    return _with_summary(estimator, data)


def _partitions_fit_data(estimator, X, lengths, sequence_ids, states, U):
    """:func:`dask_fit_data` of a dask bag of sequences or a list of delayed objects,
    each a partition: one pass (where they live) validates the partitions and returns
    their sequences' lengths; partitions without sequences are left out."""
    what = ("a dask bag X" if not isinstance(X, (list, tuple))
            else "a list of dask delayed objects X")
    _check_dask_fit(estimator, sequence_ids, states, U, what)
    if lengths is not None:
        raise ValueError(f"lengths is not used with {what}: every item of a partition is "
                         "one sequence; pass lengths=None.")
    import dask

    family = estimator._family
    partitions = list(X) if isinstance(X, (list, tuple)) else X.to_delayed()
    checker = clone(estimator)
    prepare = dask.delayed(_prepare_partition, pure=True)
    runner = chunk_runner()
    chunks = runner.keep([prepare(part, family, checker) for part in partitions])
    chunk_lengths = runner.map(_lengths, chunks, ())
    kept = [i for i, lens in enumerate(chunk_lengths) if lens.size]
    if not kept:
        raise ValueError(f"X: {what} holds no sequence.")
    # the attributes that validation sets (n_features_in_, ...), from validated rows
    chunks = [chunks[i] for i in kept]
    family.check_X(runner.map(_rows, chunks[:1], (None, slice(0, 1)))[0], estimator, True)
    row_chunks = np.array([chunk_lengths[i].sum() for i in kept], dtype=np.int64)
    data = DaskFitData(chunks=chunks, row_chunks=row_chunks,
                       lengths=np.concatenate([chunk_lengths[i] for i in kept]),
                       runner=runner)
    return _with_summary(estimator, data)


def _with_summary(estimator, data):
    """``data`` with the summary of its frames, merged over the chunks; the
    estimator's fitted attributes that depend on them (``n_symbols_``, ...) set."""
    family = estimator._family
    moments = family.merge_moments(data.map(_moments, family))
    for name, value in family.fit_attributes_from_moments(moments, estimator).items():
        setattr(estimator, name, value)
    data.summary = family.summary_from_moments(moments)
    data.column_means = family.column_means_from_moments(moments)
    return data
