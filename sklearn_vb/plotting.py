"""Optional matplotlib helpers.

:func:`plot_score_vs_size` draws the evidence scores of a structure search against model
size, one line per scoring method, with error bars (± 2 standard errors) where the score
is stochastic (IS, AIS).  matplotlib is imported only when a function is called.
"""

from __future__ import annotations

import numpy as np

from .model_selection._search import _size_parameter

__all__ = ["plot_score_vs_size"]


def _results_of(search):
    results = getattr(search, "results_", search)
    if not isinstance(results, dict) or "params" not in results:
        raise ValueError(
            "search must be a fitted StructureSearch (or its results_ dict); got "
            f"{type(search).__name__}."
        )
    return results


def _default_size_param(results):
    param = _size_parameter(list(results["params"]))
    if param is None:
        raise ValueError(
            "param must name the size parameter: the grid does not vary exactly one "
            "numeric parameter."
        )
    return param


def plot_score_vs_size(search, param=None, scores=None, *, ax=None, n_se=2.0, mark_best=True,
                       offset=None):
    """Plot each candidate's evidence score against its size.

    Parameters
    ----------
    search : fitted StructureSearch / DAGStructureSearch, or its ``results_`` dict
    param : str or None
        The size parameter (``"n_components"``, ``"n_states"``...).  Default: the single
        numeric grid parameter that varies.  For a DAG search ``"n_edges"`` works too.
    scores : list of str or None
        Score names (default: every score of the search).  Each is drawn with the value
        used for ranking (``score_<name>``: alias-corrected where that applies).
    ax : matplotlib Axes or None
    n_se : float, default=2.0
        Error bars of ``n_se`` standard errors for stochastic scores.
    mark_best : bool, default=True
        Mark the best size of every score with a star.
    offset : {"best", None} or None
        ``"best"`` subtracts each score's maximum, so scores on different scales share
        one axis (differences in nats are what matter for selection).

    Returns
    -------
    ax : matplotlib Axes
    """
    import matplotlib.pyplot as plt

    results = _results_of(search)
    if param is None:
        param = _default_size_param(results)
    if param in results and not param.startswith("param_"):
        sizes = np.asarray(results[param], dtype=float)
    elif f"param_{param}" in results:
        column = results[f"param_{param}"]
        sizes = np.asarray(np.ma.filled(np.ma.asarray(column).astype(float), np.nan), dtype=float)
    else:
        raise ValueError(f"param={param!r} is not a parameter of the search results.")
    if scores is None:
        scores = getattr(search, "scorer_names_", None) or [
            k[len("score_"):] for k in results if k.startswith("score_")
        ]
    if offset not in (None, "best"):
        raise ValueError(f"offset must be None or 'best'; got {offset!r}.")
    if ax is None:
        _, ax = plt.subplots()
    for name in scores:
        key = f"score_{name}"
        if key not in results:
            raise ValueError(f"scores names {name!r}, which is not a score of the search.")
        values = np.asarray(results[key], dtype=float)
        stderr = np.asarray(results.get(f"stderr_{name}", np.full(values.shape, np.nan)), dtype=float)
        keep = np.isfinite(values) & np.isfinite(sizes)
        if not keep.any():
            continue
        # best candidate at every size (the grid may vary other parameters too)
        xs, ys, es = [], [], []
        for s in np.unique(sizes[keep]):
            idx = np.flatnonzero(keep & (sizes == s))
            i = idx[np.argmax(values[idx])]
            xs.append(s)
            ys.append(values[i])
            es.append(stderr[i])
        xs, ys, es = np.asarray(xs), np.asarray(ys), np.asarray(es)
        if offset == "best":
            ys = ys - ys.max()
        bounds = results.get(f"bound_{name}")
        kind = None
        if bounds is not None:
            kinds = {b for b, k in zip(bounds, keep) if k and b is not None}
            kind = kinds.pop() if len(kinds) == 1 else None
        label = name if kind is None else f"{name} ({kind.replace('_', ' ')})"
        if np.isfinite(es).any():
            line = ax.errorbar(xs, ys, yerr=n_se * np.nan_to_num(es, nan=0.0), marker="o",
                               capsize=3, label=label)
            color = line[0].get_color()
        else:
            (line,) = ax.plot(xs, ys, marker="o", label=label)
            color = line.get_color()
        if mark_best:
            b = int(np.argmax(ys))
            ax.plot([xs[b]], [ys[b]], marker="*", markersize=14, color=color, linestyle="none")
    ax.set_xlabel(param)
    ax.set_ylabel("log evidence (nats)" + (" relative to best" if offset == "best" else ""))
    ax.legend()
    return ax
