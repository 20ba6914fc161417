"""Labelled sequence data for linear-chain CRFs: a synthetic stand-in for the newsgroup
FAQ segmentation data of Parise and Welling (2006, section 5)."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_faq_like_sequences", "FAQ_FEATURE_NAMES"]

#: display names of the 24 binary line features (cosmetic; after the line features of
#: the FAQ segmentation study of McCallum, Freitag and Pereira 2000)
FAQ_FEATURE_NAMES = (
    "begins-with-question-word", "contains-question-mark", "ends-with-question-mark",
    "begins-with-subject",
    "indented", "indented-1-to-4", "contains-http", "begins-with-punctuation",
    "continues-answer-1", "continues-answer-2", "continues-answer-3", "continues-answer-4",
    "ends-answer-1", "ends-answer-2", "ends-answer-3", "ends-answer-4",
    "blank", "begins-with-number", "contains-pipe", "shorter-than-30",
    "contains-alphanum", "contains-bracketed-number", "begins-with-dash", "all-caps",
)


def make_faq_like_sequences(n_documents=2, n_lines=100, random_state=None):
    """Documents of lines with 24 binary features and question (0) / answer (1) labels.

    Labels come in alternating blocks starting with a question; question blocks are
    ``Geometric(0.6)`` lines long (mean 1.7), answer blocks ``Geometric(0.15)`` (mean 6.7).
    Features 0-7 carry the label (``P(g = 1) = 0.7`` on their own class - 0-3 questions,
    4-7 answers - and 0.1 otherwise); features 8-11 fire with probability 0.6 when the
    line and the next are both answers and 12-15 when an answer line is followed by a
    question, 0.15 otherwise (the signal of the transition features); features 16-23 are
    noise with ``P = 0.3``.

    The defaults have everything Parise and Welling (2006, section 4) state about their
    data: two files truncated to 100 lines, each line a question or an answer (header
    lines dropped), 24 binary features per line.  They state no frequencies of the
    features or of the labels; those above are this generator's own.

    Returns
    -------
    X : (n_documents * n_lines, 24) float array of 0/1
    y : (n_documents * n_lines,) int labels (1 = answer)
    lengths : (n_documents,) int array

    Examples
    --------
    >>> from sklearn_vb.datasets import make_faq_like_sequences
    >>> X, y, lengths = make_faq_like_sequences(n_documents=2, n_lines=100, random_state=0)
    >>> X.shape, lengths.tolist(), sorted(set(y.tolist()))
    ((200, 24), [100, 100], [0, 1])
    """
    rng = check_random_state(random_state)
    n_documents, n_lines = int(n_documents), int(n_lines)
    if n_documents < 1 or n_lines < 1:
        raise ValueError("n_documents and n_lines must be positive.")
    ys = []
    for _ in range(n_documents):
        t, label = [], 0
        while len(t) < n_lines:
            t += [label] * int(rng.geometric(0.6 if label == 0 else 0.15))
            label = 1 - label
        ys.append(np.array(t[:n_lines]))
    y = np.concatenate(ys)
    n = y.size
    nxt = np.full(n, -1)
    for d in range(n_documents):
        a, b = d * n_lines, (d + 1) * n_lines
        nxt[a:b - 1] = y[a + 1:b]
    p = np.empty((n, 24))
    own = np.where(y[:, None] == 0, np.arange(8) < 4, np.arange(8) >= 4)
    p[:, :8] = np.where(own, 0.7, 0.1)
    p[:, 8:12] = np.where(((y == 1) & (nxt == 1))[:, None], 0.6, 0.15)
    p[:, 12:16] = np.where(((y == 1) & (nxt == 0))[:, None], 0.6, 0.15)
    p[:, 16:] = 0.3
    X = (rng.random((n, 24)) < p).astype(float)
    return X, y.astype(np.int64), np.full(n_documents, n_lines, dtype=np.int64)
