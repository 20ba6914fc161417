"""The ``"context"`` start of an HMM fit: k-means of every frame together with its two
neighbours in its sequence.

Why the neighbours: a hidden state is told apart by what surrounds its frames as much
as by the frame itself.  In sequences from the cycles (abc)* and (acb)* every symbol
belongs to two states, one per cycle, and only the symbols before and after a frame say
which; k-means of the frames alone merges them, and random starts find the separation
only now and then (a few per cent of starts on the thesis's structure-discovery data,
where most of this start's runs end at the best bound found).  Persistent states are
found the same way: a frame whose neighbours look like it is likely to share their state.

The features of a frame are the family's :meth:`frame_features` of the frame and, with
weight :data:`NEIGHBOUR_WEIGHT`, of the frames before and after it in the same sequence
(zeros at a sequence's ends).  The weight is below one so that the frame's own value
decides first and its context splits what the frame alone cannot.
"""

from __future__ import annotations

import numpy as np

from .._core.kernels.kmeans import kmeans

__all__ = ["NEIGHBOUR_WEIGHT", "context_centres", "context_features", "context_labels"]

#: weight of the previous and the next frame's features beside the frame's own
NEIGHBOUR_WEIGHT = 0.5


def context_features(own, starts, ends):
    """Window features (n, 3 d) of frame features ``own`` (n, d) of the sequences that
    start at ``starts`` and end (exclusive) at ``ends``: the previous frame's, the
    frame's and the next frame's features, the neighbours weighted by
    :data:`NEIGHBOUR_WEIGHT` and zero where the sequence ends."""
    previous = np.roll(own, 1, axis=0)
    previous[starts] = 0.0
    following = np.roll(own, -1, axis=0)
    following[ends - 1] = 0.0
    return np.hstack([NEIGHBOUR_WEIGHT * previous, own, NEIGHBOUR_WEIGHT * following])


def context_centres(features, n_components, random_state):
    """Centres of one k-means run (seeded by ``random_state``, a
    :class:`numpy.random.RandomState`) on the window features (n, 3 d).  With fewer
    distinct windows than states the distinct windows are the centres (k-means would
    warn and duplicate them): the surplus states start empty and the VBM step gives
    them the prior, as it does on repeated frames."""
    distinct = np.unique(features, axis=0)
    seed = random_state.randint(2**31 - 1)
    if distinct.shape[0] <= n_components:
        return distinct
    return kmeans(features, n_components, seed)[1]


def context_labels(features, centres):
    """Index (n,) of the nearest centre of every frame's window features."""
    from sklearn.metrics import pairwise_distances_argmin
    from threadpoolctl import threadpool_limits

    # one OpenMP thread: a process whose OpenMP threads have run hangs in the first
    # OpenMP call of a child it forks (multiprocessing's "fork"), and the rows' labels
    # do not depend on the number of threads
    with threadpool_limits(limits=1, user_api="openmp"):
        return pairwise_distances_argmin(features, centres)
