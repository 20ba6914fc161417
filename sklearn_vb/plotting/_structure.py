"""Graphs of DAG and MRF structures, and the best structures of a search."""

from __future__ import annotations

import numpy as np


def _edges_and_nodes(structure):
    """``(edges, nodes)`` of a structure in any form the estimators accept."""
    if hasattr(structure, "as_structure"):
        structure = structure.as_structure()
    if isinstance(structure, dict):
        nodes = list(structure)
        edges = []
        for child, parents in structure.items():
            for parent in parents:
                edges.append((parent, child))
                if parent not in nodes:
                    nodes.append(parent)
        return edges, nodes
    if isinstance(structure, np.ndarray) and structure.ndim == 2:
        if structure.shape[0] != structure.shape[1]:
            raise ValueError(f"an adjacency matrix must be square; got {structure.shape}.")
        edges = [(int(i), int(j)) for i, j in zip(*np.nonzero(structure))]
        return edges, list(range(structure.shape[0]))
    edges, nodes = [], []
    for edge in structure:
        pair = tuple(edge)
        if len(pair) != 2:
            raise ValueError(f"structure edges must be pairs; got {edge!r}.")
        edges.append(pair)
        for node in pair:
            if node not in nodes:
                nodes.append(node)
    return edges, nodes


def _layout(nodes, edges, hidden):
    """Hidden parents above the observed nodes when every edge leaves a hidden node;
    otherwise a circle."""
    hidden = [n for n in nodes if n in hidden]
    if hidden and all(a in hidden and b not in hidden for a, b in edges):
        observed = [n for n in nodes if n not in hidden]
        pos = {n: ((i + 0.5) / len(hidden), 1.0) for i, n in enumerate(hidden)}
        pos.update({n: ((i + 0.5) / len(observed), 0.0) for i, n in enumerate(observed)})
        return pos
    angles = np.pi / 2 - 2 * np.pi * np.arange(len(nodes)) / max(len(nodes), 1)
    return {n: (0.5 + 0.45 * np.cos(a), 0.5 + 0.45 * np.sin(a)) for n, a in zip(nodes, angles)}


def plot_structure(structure, ax=None, *, hidden=(), nodes=None, directed=True, title=None):
    """Draw a DAG (arrows) or an undirected graph (lines).

    Parameters
    ----------
    structure : dict, sequence of (parent, child) pairs, or square ndarray
        In any form :class:`~sklearn_vb.VBDiscreteDAG` accepts (dict child -> parents,
        edge list, adjacency matrix), or an edge list of an undirected model.
    ax : matplotlib Axes or None
    hidden : collection of node names
        Hidden nodes, drawn shaded; when every edge leaves a hidden node they are drawn
        in a row above the observed nodes (the layout of Beal 2003, Fig. 6.1).
    nodes : sequence or None
        All node names in drawing order (default: from the structure); nodes without
        edges appear only when given here.
    directed : bool, default=True
        Arrows for a DAG, plain lines for an MRF.
    title : str or None

    Returns
    -------
    ax : matplotlib Axes
        One circle per node and one arrow or line per edge (``ax.patches``).

    Examples
    --------
    >>> from sklearn_vb.plotting import plot_structure
    >>> ax = plot_structure([("h", "a"), ("h", "b"), ("a", "b")], hidden={"h"})
    >>> len(ax.patches)           # 3 nodes and 3 edges
    6
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, FancyArrowPatch

    edges, found = _edges_and_nodes(structure)
    nodes = list(nodes) if nodes is not None else found
    missing = [n for e in edges for n in e if n not in nodes]
    if missing:
        raise ValueError(f"nodes does not list {missing[0]!r}, which an edge uses.")
    hidden = set(hidden)
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3.5), layout="constrained")
    pos = _layout(nodes, edges, hidden)
    radius = 0.06 if len(nodes) <= 8 else 0.04
    for a, b in edges:
        # end the arrow at the child's rim, so that its head stays visible
        start, end = _shorten(pos[a], pos[b], radius)
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>" if directed else "-",
                                     mutation_scale=14, shrinkA=0, shrinkB=0,
                                     color="0.2", lw=1.2))
    for n in nodes:
        ax.add_patch(Circle(pos[n], radius, facecolor="0.75" if n in hidden else "white",
                            edgecolor="black", lw=1.2, zorder=3))
        ax.text(*pos[n], str(n), ha="center", va="center", fontsize=9, zorder=4)
    ax.set_xlim(-0.1, 1.1)
    ax.set_ylim(-0.2, 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    if title is not None:
        ax.set_title(title, fontsize=10)
    return ax


def _shorten(a, b, radius):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = b - a
    length = np.hypot(*d)
    if length <= 2 * radius:
        return tuple(a), tuple(b)
    u = d / length
    return tuple(a + radius * u), tuple(b - radius * u)


def plot_structure_search(search, n_best=3, *, score=None, directed=None, fig=None):
    """Draw the best structures of a DAG or MRF structure search with their scores.

    Parameters
    ----------
    search : fitted DAGStructureSearch (or an MRF structure search)
        Its ``results_`` must hold a ``structure`` column.
    n_best : int, default=3
        How many structures, best first.
    score : str or None
        The score that ranks them (default: the search's ranking score).  Every score of
        the search is printed under each graph.
    directed : bool or None
        Arrows (DAG) or lines (MRF); default: lines when the search's class name
        mentions an MRF.
    fig : matplotlib Figure or None

    Returns
    -------
    axes : list of matplotlib Axes
        One per structure, titled with its rank and score.

    Examples
    --------
    >>> from sklearn_vb import VBDiscreteDAG
    >>> from sklearn_vb.datasets import make_beal_dag
    >>> from sklearn_vb.model_selection import DAGStructureSearch
    >>> from sklearn_vb.plotting import plot_structure_search
    >>> X = make_beal_dag(n_samples=100, random_state=0)
    >>> candidates = [{"h": [], 0: ["h"], 1: ["h"], 2: ["h"], 3: ["h"]},
    ...               {"h": [], 0: ["h"], 1: ["h"], 2: [], 3: []}]
    >>> est = VBDiscreteDAG(cardinalities={"h": 2, 0: 5, 1: 5, 2: 5, 3: 5}, hidden="h",
    ...                     n_init=1, random_state=0)
    >>> search = DAGStructureSearch(est, search="exhaustive", structures=candidates,
    ...                             random_state=0).fit(X)
    >>> axes = plot_structure_search(search, n_best=2)
    >>> [ax.get_title().split(":")[0] for ax in axes]
    ['#1', '#2']
    """
    import matplotlib.pyplot as plt

    results = getattr(search, "results_", None)
    if not isinstance(results, dict) or "structure" not in results:
        raise ValueError("search must be a fitted structure search whose results_ has a "
                         f"'structure' column; got {type(search).__name__}.")
    names = list(getattr(search, "scorer_names_", None)
                 or [k[len("score_"):] for k in results if k.startswith("score_")])
    score = score or getattr(search, "selection_score_", None) or names[0]
    if f"score_{score}" not in results:
        raise ValueError(f"score={score!r} is not a score of the search.")
    values = np.asarray(results[f"score_{score}"], dtype=float)
    order = [i for i in np.argsort(-np.where(np.isfinite(values), values, -np.inf))
             if np.isfinite(values[i])][:n_best]
    if directed is None:
        directed = "mrf" not in type(search).__name__.lower()
    hidden_column = results.get("param_hidden")
    if fig is None:
        fig = plt.figure(figsize=(3.4 * max(len(order), 1), 3.6), layout="constrained")
    axes = []
    for rank, i in enumerate(order, start=1):
        ax = fig.add_subplot(1, max(len(order), 1), rank)
        hidden = ()
        if hidden_column is not None and hidden_column[i] is not None:
            h = hidden_column[i]
            hidden = {h} if isinstance(h, (str, int)) else set(h)
        elif getattr(search, "estimator", None) is not None:
            h = search.estimator.get_params().get("hidden")
            if h is not None:
                hidden = {h} if isinstance(h, (str, int)) else set(h)
        plot_structure(results["structure"][i], ax, hidden=hidden, directed=directed,
                       title=f"#{rank}: {score} = {values[i]:.2f}")
        others = [f"{n} = {float(results[f'score_{n}'][i]):.2f}" for n in names if n != score]
        if others:
            ax.text(0.5, -0.15, ", ".join(others), ha="center", va="top", fontsize=8,
                    transform=ax.transData)
        axes.append(ax)
    return axes
