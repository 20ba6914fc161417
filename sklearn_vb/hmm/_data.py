"""The sequences an HMM fit reads: :class:`_FitData`, the frames of all sequences in
memory.  A fit on a dask array reads :class:`~sklearn_vb.hmm._distributed.DaskFitData`
instead; both answer :meth:`_FitData.chunk_sum` and :meth:`_FitData.start_statistics`,
the two ways the fit reads the frames during its iterations and starts.
:class:`MinibatchPasses` reads a ``_FitData`` a minibatch of sequences at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core.validation import sequence_bounds
from ._clamp import align_with_known
from ._context import context_centres, context_features, context_labels
from ._online import minibatches, sequence_frames
from .emissions._base import one_hot
from ._vbem import add_results, stats_from_resp

__all__ = ["MinibatchPasses", "_FitData"]



@dataclass
class _FitData:
    """Validated sequences: what the steps of ``fit`` read, and what
    :meth:`VBHiddenMarkov.check_data` returns for new data.

    Attributes
    ----------
    X : ndarray
        The frames as the emission family prepared them: (n_frames,) int64 symbols for
        categorical emissions, (n_frames, n_features) floats otherwise.
    index : ndarray of int64, shape (n_frames,)
        Row of the emission log-likelihood table used by every frame (the symbols for
        categorical emissions, ``arange(n_frames)`` otherwise).
    lengths, starts, ends : ndarray of int64, shape (n_sequences,)
        Length, first frame and end (exclusive) of every sequence.
    summary : object or None
        The emission family's data summary for data-dependent default priors (e.g.
        ``GaussianSummary``; training data only, None otherwise).
    known_states : ndarray of int64, shape (n_frames,), or None
        The state of every frame where it is known, -1 elsewhere (``states=``; see
        :mod:`sklearn_vb.hmm._clamp`); None when no state is known.
    inputs : ndarray or None
        The transition inputs of every frame (``U=``; see
        :mod:`sklearn_vb.hmm._inputs`): int64 input levels (n_frames,) with
        ``transition_inputs="categorical"``, the float design rows [u_t, 1]
        (n_frames, P + 1) with ``"continuous"``; None for a plain HMM.
    n_levels : int or None
        The model's number of input levels L (None for a plain HMM).
    """

    X: np.ndarray
    index: np.ndarray
    lengths: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    summary: object = None
    known_states: np.ndarray = None
    inputs: np.ndarray = None
    n_levels: int = None

    @property
    def n_frames(self):
        return int(self.X.shape[0])

    @property
    def n_sequences(self):
        return int(self.lengths.shape[0])

    def sequences(self, seq, family):
        """The sequences ``seq`` (indices, in that order) as fit data of their own (a
        minibatch of online learning); the frames are copied, ``X`` is not touched."""
        frames, lens = sequence_frames(self.starts, self.lengths, seq)
        X = self.X[frames]
        starts, ends = sequence_bounds(lens)
        known = None if self.known_states is None else self.known_states[frames]
        inputs = None if self.inputs is None else self.inputs[frames]
        return _FitData(X=X, index=family.table_index(X), lengths=lens, starts=starts,
                        ends=ends, known_states=known, inputs=inputs, n_levels=self.n_levels)

    def chunk_sum(self, family, fn, *args):
        """``fn(chunk, family, *args)`` summed over the chunks of the data: here the
        data are one chunk.  ``fn`` returns HMM statistics or a tuple of floats and
        statistics, each a sum over sequences (e.g.
        :func:`~sklearn_vb.hmm._vbem.vbe_statistics`)."""
        return fn(self, family, *args)

    def start_statistics(self, how, family, n_components, emission_prior, random_state):
        """The statistics of the initial labelling ``how`` of the frames: k-means of
        every frame with its neighbours for ``"context"``
        (:mod:`sklearn_vb.hmm._context`), otherwise the family's
        (:meth:`~sklearn_vb.emissions.EmissionFamily.initial_responsibilities`)."""
        if how == "context":
            features = context_features(family.frame_features(self.X, emission_prior),
                                        self.starts, self.ends)
            centres = context_centres(features, n_components, random_state)
            resp = one_hot(context_labels(features, centres), n_components)
        else:
            resp = family.initial_responsibilities(how, self.X, n_components, random_state)
        if self.known_states is not None:
            resp = align_with_known(resp, self.known_states)
        return stats_from_resp(family, resp, self, emission_prior)


@dataclass
class MinibatchPasses:
    """The sequences of ``data`` for a pass that holds the tables of ``size`` of them
    at a time: :meth:`chunk_sum` runs the function on consecutive minibatches and sums
    the results in order (the exact bound at the end of an online fit, whose
    forward-backward over all frames at once would hold the tables a batch fit holds).
    """

    data: _FitData
    size: int

    @property
    def n_frames(self):
        return self.data.n_frames

    @property
    def n_sequences(self):
        return self.data.n_sequences

    def chunk_sum(self, family, fn, *args):
        """``fn(minibatch, family, *args)`` summed over the minibatches (see
        :meth:`_FitData.chunk_sum`)."""
        total = None
        for seq in minibatches(self.data.n_sequences, self.size):
            part = (self.data if len(seq) == self.data.n_sequences
                    else self.data.sequences(seq, family))
            result = fn(part, family, *args)
            total = result if total is None else add_results(family, total, result)
        return total
