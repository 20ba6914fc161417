"""Sequence-aware cross-validation.

A ``lengths`` array (hmmlearn style) cannot be split by scikit-learn's cross-validation:
it is not aligned with the rows of ``X``.  The sequence models of this package also
accept ``sequence_ids=`` (one id per row), which *is* row-aligned, so sklearn slices it
together with ``X``.  What remains is to make sure no fold cuts a sequence in two; that
is :class:`SequenceKFold`::

    import sklearn
    sklearn.set_config(enable_metadata_routing=True)
    ids = lengths_to_sequence_ids(lengths)
    cv = SequenceKFold(n_splits=3)
    hmm = VBHiddenMarkov().set_fit_request(sequence_ids=True).set_score_request(sequence_ids=True)
    GridSearchCV(hmm, {"n_components": [2, 3, 4]}, cv=cv).fit(X, groups=ids, sequence_ids=ids)
    cross_val_score(hmm, X, cv=cv, params={"sequence_ids": ids, "groups": ids})

Every training and test fold is a union of whole sequences, each kept in time order,
so the ``sequence_ids`` slice that sklearn passes to ``fit`` describes valid sequences.
Test-fold *scoring* sees ``sequence_ids`` only with metadata routing enabled and a score
request on the estimator, as above; without it, ``score(X_test)`` of a model fitted with
``sequence_ids`` refuses (it would score the test rows as one long sequence).
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import GroupKFold

from .._core.validation import check_lengths, check_sequence_ids

__all__ = ["SequenceKFold", "lengths_to_sequence_ids", "sequence_ids_to_lengths"]


def lengths_to_sequence_ids(lengths):
    """Row-aligned sequence ids ``0, 0, ..., 1, 1, ...`` from hmmlearn-style lengths.

    Examples
    --------
    >>> from sklearn_vb.model_selection import lengths_to_sequence_ids
    >>> lengths_to_sequence_ids([3, 2])
    array([0, 0, 0, 1, 1])
    """
    lens = check_lengths(lengths, "lengths")
    return np.repeat(np.arange(lens.size, dtype=np.int64), lens)


def sequence_ids_to_lengths(sequence_ids):
    """hmmlearn-style lengths from row-aligned, contiguous sequence ids.

    Examples
    --------
    >>> from sklearn_vb.model_selection import sequence_ids_to_lengths
    >>> sequence_ids_to_lengths([0, 0, 0, 1, 1])
    array([3, 2])
    """
    return check_sequence_ids(sequence_ids, "sequence_ids")[1]


class SequenceKFold(GroupKFold):
    """K-fold cross-validation that never cuts a sequence.

    A :class:`~sklearn.model_selection.GroupKFold` whose groups are the sequence ids:
    pass ``groups=sequence_ids`` to ``split`` (or to ``GridSearchCV.fit`` /
    ``cross_val_score``).  The ids must label contiguous blocks of rows, as the
    sequence estimators require; every fold then holds whole sequences in their
    original time order.  Folds are balanced by number of rows (time steps).

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds; at most the number of sequences.
    shuffle : bool, default=False
        Shuffle the sequences before assigning them to folds.
    random_state : int, RandomState instance or None, default=None
        Used when ``shuffle=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.model_selection import SequenceKFold, lengths_to_sequence_ids
    >>> ids = lengths_to_sequence_ids([3, 2])       # two sequences, 5 rows
    >>> for train, test in SequenceKFold(n_splits=2).split(np.zeros((5, 1)), groups=ids):
    ...     print(train, test)
    [3 4] [0 1 2]
    [0 1 2] [3 4]
    """

    def split(self, X, y=None, groups=None):
        """Yield ``(train, test)`` row indices; ``groups`` are the sequence ids."""
        if groups is None:
            raise ValueError(
                "SequenceKFold needs groups=sequence_ids (one id per row); convert "
                "hmmlearn-style lengths with lengths_to_sequence_ids(lengths)."
            )
        ids, _ = check_sequence_ids(groups, "groups (sequence ids)")
        n_sequences = np.unique(ids).size
        if self.n_splits > n_sequences:
            raise ValueError(
                f"n_splits={self.n_splits} is larger than the number of sequences "
                f"({n_sequences}); a fold would be empty."
            )
        for train, test in super().split(X, y, ids):
            yield np.sort(train), np.sort(test)
