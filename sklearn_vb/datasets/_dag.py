"""Beal's structure-scoring experiment for discrete DAGs (thesis §6.5).

The class: 2 binary hidden nodes ``s1, s2`` (roots) and 4 five-valued observed nodes
``y1..y4``; each observed node has parent set {}, {s1}, {s2} or {s1, s2}.  A structure
is a 4-tuple of parent-set codes (bit 0 = s1, bit 1 = s2: 0 = {}, 1 = {s1}, 2 = {s2},
3 = {s1, s2}); graphs related by swapping the a-priori identical hidden nodes are the
same model, which leaves 136 distinct structures.
"""

from __future__ import annotations

import itertools

import numpy as np
from sklearn.utils import check_random_state

__all__ = [
    "BEAL_SIZES",
    "BEAL_TRUE_CODE",
    "enumerate_bipartite_structures",
    "bipartite_structure",
    "beal_true_structure",
    "beal_true_parameters",
    "random_beal_parameters",
    "make_beal_dag",
    "make_beal_dag_datasets",
]

#: the 20 nested data-set sizes of the thesis (S:420)
BEAL_SIZES = (10, 20, 40, 80, 110, 160, 230, 320, 400, 430, 480, 560, 640, 800, 960,
              1120, 1280, 2560, 5120, 10240)

#: the true structure (Fig. 6.1, reconstructed reading): s1 -> y1; y2, y3 <- {s1, s2}; s2 -> y4
BEAL_TRUE_CODE = (1, 3, 3, 2)

_TRUE_TABLES = [
    [[.12, .88]],
    [[.08, .92]],
    [[.03, .03, .64, .02, .27],
     [.18, .15, .22, .19, .27]],
    [[.10, .54, .07, .14, .15],
     [.04, .15, .59, .05, .16],
     [.20, .08, .36, .17, .18],
     [.19, .45, .10, .09, .17]],
    [[.11, .47, .12, .30, .01],
     [.27, .07, .16, .25, .25],
     [.52, .14, .15, .02, .17],
     [.04, .00, .37, .33, .25]],
    [[.10, .08, .43, .03, .36],
     [.30, .14, .07, .04, .45]],
]


def _permute_code(code, perm):
    """Image of a parent-set code tuple under a permutation of the hidden nodes."""
    out = []
    for c in code:
        m = 0
        for h, ph in enumerate(perm):
            if c >> h & 1:
                m |= 1 << ph
        out.append(m)
    return tuple(out)


def enumerate_bipartite_structures(n_hidden=2, n_observed=4):
    """All distinct bipartite structures (hidden -> observed edges only), with
    structures related by a permutation of the hidden nodes identified.

    Returns a sorted list of tuples of parent-set codes (bit h = hidden node h);
    each tuple is the lexicographically smallest member of its class.  For 2 hidden
    and 4 observed nodes this gives 136 structures.

    Examples
    --------
    >>> from sklearn_vb.datasets import BEAL_TRUE_CODE, enumerate_bipartite_structures
    >>> codes = enumerate_bipartite_structures()
    >>> len(codes), codes[0], BEAL_TRUE_CODE in codes
    (136, (0, 0, 0, 0), True)
    """
    perms = list(itertools.permutations(range(n_hidden)))
    seen = set()
    for code in itertools.product(range(2**n_hidden), repeat=n_observed):
        seen.add(min(_permute_code(code, p) for p in perms))
    return sorted(seen)


def bipartite_structure(code, n_hidden=2, hidden_states=2, observed_states=5):
    """``(parents, cardinalities, hidden)`` for :class:`~sklearn_vb.VBDiscreteDAG`
    from a parent-set code tuple; nodes ``s1..sH`` then ``y1..yV``.

    Examples
    --------
    >>> from sklearn_vb.datasets import bipartite_structure
    >>> structure, cardinalities, hidden = bipartite_structure((1, 3, 3, 2))
    >>> structure["y2"], hidden
    (['s1', 's2'], ['s1', 's2'])
    """
    hidden = [f"s{h + 1}" for h in range(n_hidden)]
    parents = {s: [] for s in hidden}
    for v, c in enumerate(code):
        parents[f"y{v + 1}"] = [hidden[h] for h in range(n_hidden) if c >> h & 1]
    cards = {n: (hidden_states if n in hidden else observed_states) for n in parents}
    return parents, cards, hidden


def beal_true_structure():
    """``(parents, cardinalities, hidden)`` of the true structure (code (1, 3, 3, 2)) of
    Beal (2003), §6.5: two hidden binary nodes, four observed five-state children.

    Examples
    --------
    >>> from sklearn_vb.datasets import beal_true_structure
    >>> parents, cardinalities, hidden = beal_true_structure()
    >>> parents["y2"], cardinalities["y2"], hidden
    (['s1', 's2'], 5, ['s1', 's2'])
    """
    return bipartite_structure(BEAL_TRUE_CODE)


def beal_true_parameters():
    """The true CPTs of §6.5 (printed to 2 decimals in the thesis), each row
    renormalised; list in node order s1, s2, y1, y2, y3, y4.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.datasets import beal_true_parameters
    >>> cpts = beal_true_parameters()
    >>> [cpt.shape for cpt in cpts]          # (parent configurations, states)
    [(1, 2), (1, 2), (2, 5), (4, 5), (4, 5), (2, 5)]
    >>> all(bool(np.allclose(cpt.sum(axis=1), 1.0)) for cpt in cpts)
    True
    """
    tables = [np.array(t, dtype=float) for t in _TRUE_TABLES]
    return [t / t.sum(axis=1, keepdims=True) for t in tables]


def random_beal_parameters(random_state=None, prior=1.0):
    """CPTs for the true structure drawn from the Dirichlet(prior) prior (the parameter
    draws of the structure-scoring experiments of Beal 2003, §6.5).

    Examples
    --------
    >>> from sklearn_vb.datasets import random_beal_parameters
    >>> cpts = random_beal_parameters(random_state=0)
    >>> [cpt.shape for cpt in cpts]
    [(1, 2), (1, 2), (2, 5), (4, 5), (4, 5), (2, 5)]
    """
    rng = check_random_state(random_state)
    shapes = [(1, 2), (1, 2), (2, 5), (4, 5), (4, 5), (2, 5)]
    return [rng.dirichlet(np.full(r, prior), size=q) for q, r in shapes]


def make_beal_dag(n_samples=10240, parameters=None, random_state=None, return_hidden=False):
    """Draw ``n_samples`` cases from the true structure.

    Returns ``X`` (n_samples, 4) int array of observed values 0..4 (and the hidden
    states (n_samples, 2) if ``return_hidden``).  Cases are drawn one at a time from
    one stream, so a prefix of a larger draw is a smaller data set (nested sizes).

    Examples
    --------
    >>> from sklearn_vb.datasets import make_beal_dag
    >>> X = make_beal_dag(n_samples=200, random_state=0)
    >>> X.shape, int(X.max())
    ((200, 4), 4)
    """
    rng = check_random_state(random_state)
    theta = beal_true_parameters() if parameters is None else [np.asarray(t, float) for t in parameters]
    n = int(n_samples)
    u = rng.random_sample((n, 6))  # one row of uniforms per case: prefixes are nested

    def draw(table, rows, col):
        cdf = np.cumsum(table[rows], axis=1)
        return np.minimum((u[:, col:col + 1] * cdf[:, -1:] >= cdf).sum(axis=1), table.shape[1] - 1)

    zeros = np.zeros(n, dtype=np.int64)
    s1 = draw(theta[0], zeros, 0)
    s2 = draw(theta[1], zeros, 1)
    parent_row = {1: s1, 2: s2, 3: 2 * s1 + s2}
    X = np.empty((n, 4), dtype=np.int64)
    for v, c in enumerate(BEAL_TRUE_CODE):
        X[:, v] = draw(theta[2 + v], parent_row[c], 2 + v)
    if return_hidden:
        return X, np.column_stack([s1, s2])
    return X


def make_beal_dag_datasets(sizes=BEAL_SIZES, parameters=None, random_state=None):
    """Nested data sets ``{n: X[:n]}`` for the thesis sizes (prefixes of one stream).

    Examples
    --------
    >>> from sklearn_vb.datasets import make_beal_dag_datasets
    >>> data = make_beal_dag_datasets(sizes=(10, 40), random_state=0)
    >>> {n: X.shape for n, X in data.items()}
    {10: (10, 4), 40: (40, 4)}
    """
    X = make_beal_dag(max(sizes), parameters=parameters, random_state=random_state)
    return {int(n): X[:n] for n in sizes}
