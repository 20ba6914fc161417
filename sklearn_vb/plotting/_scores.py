"""Evidence scores of a structure search against model size."""

from __future__ import annotations

import numpy as np

from ..model_selection import size_parameter
from ._common import new_axes

#: legend wording of ScoreResult.bound
_KIND_TEXT = {
    "lower": "lower bound",
    "stochastic_lower": "stochastic lower bound",
    "stochastic_upper": "stochastic upper bound",
    "interval": "interval",
    "approx": "approximation",
}


def _results_of(search):
    results = getattr(search, "results_", search)
    if not isinstance(results, dict) or "params" not in results:
        raise ValueError(
            "search must be a fitted StructureSearch (or its results_ dict); got "
            f"{type(search).__name__}."
        )
    return results


def _default_size_param(results):
    param = size_parameter(list(results["params"]))
    if param is None:
        raise ValueError(
            "param must name the size parameter: the grid does not vary exactly one "
            "numeric parameter."
        )
    return param


def _sizes(results, param):
    if param in results and not param.startswith("param_"):
        return np.asarray(results[param], dtype=float)
    if f"param_{param}" in results:
        column = results[f"param_{param}"]
        return np.asarray(np.ma.filled(np.ma.asarray(column).astype(float), np.nan), dtype=float)
    raise ValueError(f"param={param!r} is not a parameter of the search results.")


def _unreliable(search, name, n):
    """Candidates whose score the scorer itself flagged (``unreliable_reasons``)."""
    flags = np.zeros(n, dtype=bool)
    per_candidate = getattr(search, "score_results_", None)
    if not per_candidate or len(per_candidate) != n:
        return flags
    for i, scores in enumerate(per_candidate):
        res = scores.get(name) if isinstance(scores, dict) else None
        diagnostics = getattr(res, "diagnostics", None) or {}
        flags[i] = bool(diagnostics.get("unreliable_reasons"))
    return flags


def _label(name, results, keep, corrected):
    kinds = {b for b, k in zip(results.get(f"bound_{name}", [None] * len(keep)), keep)
             if k and b is not None}
    kind = kinds.pop() if len(kinds) == 1 else None
    if corrected:
        # ln S added: a corrected bound is an approximation, not a bound any more
        return f"{name} + ln S (approximation)"
    return name if kind is None else f"{name} ({_KIND_TEXT.get(kind, kind.replace('_', ' '))})"


def plot_score_vs_size(search, param=None, scores=None, *, ax=None, n_se=2.0, mark_best=True,
                       offset=None):
    """Plot each candidate's evidence score against its size.

    One line per score, the best candidate at every size.  Stochastic scores get error
    bars of ``n_se`` standard errors, except where the scorer flagged the estimate as
    unreliable (``UnreliableEstimateWarning``): those points are drawn as crosses without
    error bars, and the legend counts them.  The legend says what each curve is: a lower
    bound, a stochastic bound or an approximation; an alias-corrected value
    (``+ ln S``) is labelled an approximation, since the correction turns a bound into
    an estimate.  The best size of every score is marked by a hollow star, the stars of
    later scores drawn larger so that stars at the same point stay visible.

    Parameters
    ----------
    search : fitted StructureSearch or DAGStructureSearch, or its ``results_`` dict
    param : str or None
        The size parameter (``"n_components"``, ``"n_states"``...).  Default: the single
        numeric grid parameter that varies.  For a DAG search ``"n_edges"`` works too.
    scores : list of str or None
        Score names (default: every score of the search).  Each is drawn with the value
        used for ranking (``score_<name>``: alias-corrected where that applies).
    ax : matplotlib Axes or None
        Axes to draw on; None creates a figure with a constrained layout (labels inside).
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

    Examples
    --------
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.datasets import make_hmm_sequences
    >>> from sklearn_vb.model_selection import StructureSearch
    >>> from sklearn_vb.plotting import plot_score_vs_size
    >>> X, _, lengths = make_hmm_sequences(
    ...     [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]],
    ...     [100] * 5, random_state=0)
    >>> search = StructureSearch(VBHiddenMarkov(), {"n_components": [1, 2, 3]},
    ...                          scoring=["vb", "bic"], random_state=0)
    >>> ax = plot_score_vs_size(search.fit(X, lengths=lengths))
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['vb + ln S (approximation)', 'bic + ln S (approximation)']
    """
    results = _results_of(search)
    if param is None:
        param = _default_size_param(results)
    sizes = _sizes(results, param)
    if scores is None:
        scores = getattr(search, "scorer_names_", None) or [
            k[len("score_"):] for k in results if k.startswith("score_")
        ]
    if offset not in (None, "best"):
        raise ValueError(f"offset must be None or 'best'; got {offset!r}.")
    ax = new_axes(ax)
    n = len(sizes)
    for index, name in enumerate(scores):
        key = f"score_{name}"
        if key not in results:
            raise ValueError(f"scores names {name!r}, which is not a score of the search.")
        values = np.asarray(results[key], dtype=float)
        stderr = np.asarray(results.get(f"stderr_{name}", np.full(values.shape, np.nan)),
                            dtype=float)
        alias = np.asarray(results.get(f"log_alias_correction_{name}", np.zeros(n)), dtype=float)
        raw = np.asarray(results.get(f"raw_score_{name}", values), dtype=float)
        unreliable = _unreliable(search, name, n)
        keep = np.isfinite(values) & np.isfinite(sizes)
        if not keep.any():
            continue
        # best candidate at every size (the grid may vary other parameters too)
        picks = []
        for s in np.unique(sizes[keep]):
            idx = np.flatnonzero(keep & (sizes == s))
            picks.append(idx[np.argmax(values[idx])])
        picks = np.asarray(picks)
        xs, ys, es = sizes[picks], values[picks], stderr[picks]
        bad = unreliable[picks]
        corrected = bool(np.any((np.nan_to_num(alias[picks]) != 0)
                                & ~np.isclose(values[picks], raw[picks])))
        if offset == "best":
            ys = ys - ys.max()
        label = _label(name, results, keep, corrected)
        if bad.any():
            note = f"{int(bad.sum())} unreliable, no error bar"
            label = label[:-1] + f"; {note})" if label.endswith(")") else f"{label} ({note})"
        if np.isfinite(es[~bad]).any():
            yerr = n_se * np.where(bad, np.nan, np.nan_to_num(es, nan=0.0))
            line = ax.errorbar(xs, ys, yerr=yerr, marker="o", capsize=3, label=label)
            color = line[0].get_color()
        else:
            (line,) = ax.plot(xs, ys, marker="o", label=label)
            color = line.get_color()
        if bad.any():
            ax.plot(xs[bad], ys[bad], marker="x", markersize=10, markeredgewidth=2,
                    color=color, linestyle="none")
        if mark_best:
            b = int(np.argmax(ys))
            ax.plot([xs[b]], [ys[b]], marker="*", markersize=14 + 6 * index,
                    markerfacecolor="none", markeredgecolor=color, markeredgewidth=1.5,
                    linestyle="none", zorder=3 + index)
    ax.set_xlabel(param)
    ax.set_ylabel("log evidence (nats)" + (", relative to best" if offset == "best" else ""))
    ax.legend()
    return ax
