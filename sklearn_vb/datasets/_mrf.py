"""Pairwise MRF data: random structures, Boltzmann machines as in Parise and Welling (2006),
exact samples, and the graph enumerations of undirected structure search."""

from __future__ import annotations

import itertools

import numpy as np

from ..mrf.inference import ExactEngine
from ..mrf.layout import MRFLayout, parse_structure

__all__ = ["enumerate_undirected_graphs", "random_undirected_structures",
           "make_boltzmann_machine", "sample_mrf", "nested_edge_sequence"]


def enumerate_undirected_graphs(n_nodes):
    """Every labelled undirected graph on ``n_nodes`` nodes as a sorted edge list, in
    order of the bit pattern over the ``p (p - 1) / 2`` possible edges (lexicographic);
    ``2 ** (p (p - 1) / 2)`` graphs (1024 for 5 nodes, the class searched in Parise &
    Welling 2006, §4).

    Examples
    --------
    >>> from sklearn_vb.model_selection import enumerate_undirected_graphs
    >>> graphs = enumerate_undirected_graphs(3)
    >>> len(graphs), graphs[:3], graphs[-1]
    (8, [[], [(0, 1)], [(0, 2)]], [(0, 1), (0, 2), (1, 2)])
    """
    pairs = list(itertools.combinations(range(int(n_nodes)), 2))
    if len(pairs) > 20:
        raise ValueError(f"n_nodes={n_nodes} gives 2**{len(pairs)} graphs; too many to enumerate.")
    return [[pairs[k] for k in range(len(pairs)) if (code >> k) & 1]
            for code in range(1 << len(pairs))]


def random_undirected_structures(n_structures=50, n_nodes=5, edge_prob=0.5, random_state=None):
    """Distinct non-empty random graphs, each possible edge present with ``edge_prob``
    (empty graphs and duplicates are redrawn); the random structures of Parise & Welling
    (2006), §4.

    Examples
    --------
    >>> from sklearn_vb.datasets import random_undirected_structures
    >>> graphs = random_undirected_structures(3, n_nodes=3, random_state=0)
    >>> len(graphs), all(len(g) > 0 for g in graphs), len(set(map(tuple, graphs)))
    (3, True, 3)
    """
    rng = np.random.default_rng(random_state)
    pairs = list(itertools.combinations(range(int(n_nodes)), 2))
    if n_structures > 2 ** len(pairs) - 1:
        raise ValueError("more structures requested than non-empty graphs exist.")
    seen, out = set(), []
    while len(out) < n_structures:
        mask = rng.random(len(pairs)) < edge_prob
        key = tuple(mask)
        if not mask.any() or key in seen:
            continue
        seen.add(key)
        out.append([pairs[k] for k in np.flatnonzero(mask)])
    return out


def make_boltzmann_machine(edges, n_nodes, d, eps=0.1, bias_range=(-1.0, 1.0), random_state=None):
    """Parameters (0/1 coding; node biases, then weights in sorted edge order) of the
    synthetic Boltzmann machines of Parise and Welling (2006): every weight has a random
    sign and is uniform on ``[d, d + eps]`` (positive) or ``[-d, -d + eps]`` (negative),
    biases uniform on ``bias_range`` (their §4).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.datasets import make_boltzmann_machine
    >>> coef = make_boltzmann_machine([(0, 1), (1, 2)], n_nodes=3, d=1.0, random_state=0)
    >>> coef.shape                             # 3 biases, then 2 weights
    (5,)
    >>> bool(np.all((np.abs(coef[3:]) >= 0.9) & (np.abs(coef[3:]) <= 1.1)))
    True
    """
    rng = np.random.default_rng(random_state)
    E = parse_structure(edges, n_nodes).shape[0]
    theta = rng.uniform(bias_range[0], bias_range[1], size=n_nodes)
    sign = rng.random(E) < 0.5
    u = rng.uniform(0.0, eps, size=E)
    w = np.where(sign, d + u, -d + u)
    return np.concatenate([theta, w])


def sample_mrf(coef, edges, n_nodes, n_samples, n_states=2, random_state=None):
    """Exact samples ``(n_samples, n_nodes)`` of a pairwise MRF by enumeration (the
    "exact sampling by exhaustive enumeration" of Parise & Welling 2006, §4).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.datasets import sample_mrf
    >>> coef = np.array([0.0, 0.0, 3.0])       # two biases, one strong coupling
    >>> X = sample_mrf(coef, [(0, 1)], n_nodes=2, n_samples=1000, random_state=0)
    >>> X.shape
    (1000, 2)
    >>> bool(np.mean(X[:, 0] == X[:, 1]) > 0.6)    # the coupling makes them agree
    True
    """
    K = np.broadcast_to(np.asarray(n_states, dtype=np.int64), (n_nodes,))
    layout = MRFLayout(K, parse_structure(edges, n_nodes))
    coef = np.asarray(coef, dtype=float)
    if coef.shape != (layout.n_features,):
        raise ValueError(f"coef must have {layout.n_features} entries, got {coef.shape}.")
    return ExactEngine(layout).sample(coef, int(n_samples), np.random.default_rng(random_state))


def nested_edge_sequence(true_edges, n_nodes, random_state=None):
    """A random nested sequence of graphs around a true one: a random order of the true
    edges followed by a random order of the absent edges; graph ``k`` holds the first
    ``k`` edges, so the sequence runs from the empty graph through the true graph (at
    position ``|E*|``) to the complete graph: the nested sequences of Parise & Welling
    (2006), §4 (their Figs. 1 and 2).

    Examples
    --------
    >>> from sklearn_vb.datasets import nested_edge_sequence
    >>> sequence = nested_edge_sequence([(0, 1)], n_nodes=3, random_state=0)
    >>> len(sequence), sequence[0], sequence[1], len(sequence[-1])
    (4, [], [(0, 1)], 3)
    """
    rng = np.random.default_rng(random_state)
    true = [tuple(e) for e in parse_structure(true_edges, n_nodes).tolist()]
    rest = [e for e in itertools.combinations(range(n_nodes), 2) if e not in set(true)]
    order = [true[i] for i in rng.permutation(len(true))] + [rest[i] for i in rng.permutation(len(rest))]
    return [sorted(order[:k]) for k in range(len(order) + 1)]
