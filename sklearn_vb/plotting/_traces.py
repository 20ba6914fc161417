"""The lower bound during fitting."""

from __future__ import annotations

import numpy as np

from ._common import check_fitted, new_axes

_EVENT_STYLE = {
    # search_history_ event -> (marker, colour, legend text)
    "accept": ("^", "tab:green", "birth accepted"),
    "reject": ("v", "0.5", "birth rejected"),
    "death": ("x", "tab:red", "death"),
}


def _pruning_iterations(estimator):
    """Iterations at which state dimensions were removed (NaN from then on)."""
    history = getattr(estimator, "hyperparameter_history_", None)
    if not isinstance(history, dict) or "alpha" not in history:
        return []
    alpha = np.asarray(history["alpha"], dtype=float)
    if alpha.ndim != 2 or not alpha.size:
        return []
    gone = np.isnan(alpha)
    out = []
    for j in range(alpha.shape[1]):
        rows = np.flatnonzero(gone[:, j])
        if rows.size and not gone[0, j]:
            out.append(int(rows[0]) + 1)  # iterations are counted from 1
    return sorted(set(out))


def plot_bound_trace(estimator, ax=None, *, restarts=True, events=True, clip=True):
    """Plot the variational lower bound against the iteration.

    The kept run's ``lower_bounds_`` is drawn bold; with ``restarts=True`` and an
    estimator fitted with ``keep_restarts=True``, every restart's trace is drawn thin, so
    the spread of local optima is visible.  For a mixture of factor analysers fitted with
    the birth/death search, the bound of the whole search (``search_history_``) is drawn
    instead, with accepted and rejected births and deaths marked (Beal 2003, §4.3); for
    an LDS, the iterations at which a state dimension was pruned are marked by vertical
    lines.  Between structure changes the bound never decreases.

    Parameters
    ----------
    estimator : fitted VB estimator
    ax : matplotlib Axes or None
    restarts : bool, default=True
        Draw every kept restart (needs ``restarts_``).
    events : bool, default=True
        Mark births, deaths and pruning.
    clip : bool, default=True
        Start the y axis at the 5% quantile of the bounds drawn: the first iterations
        are often hundreds of nats lower and would flatten the rest.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.datasets import make_hmm_sequences
    >>> from sklearn_vb.plotting import plot_bound_trace
    >>> X, _, lengths = make_hmm_sequences(
    ...     [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]],
    ...     [100] * 5, random_state=0)
    >>> hmm = VBHiddenMarkov(n_components=2, n_init=3, keep_restarts=True,
    ...                      random_state=0).fit(X, lengths=lengths)
    >>> ax = plot_bound_trace(hmm)
    >>> len(ax.get_lines())       # three restarts of three starts each, and the kept run
    10
    """
    check_fitted(estimator, "lower_bounds_", "plot_bound_trace")
    ax = new_axes(ax)
    drawn = []
    history = getattr(estimator, "search_history_", None)
    if isinstance(history, dict) and len(history.get("bound", ())) > 0:
        it = np.asarray(history["iteration"])
        F = np.asarray(history["bound"], dtype=float)
        ev = np.asarray(history["event"])
        steps = ev == "iter"
        ax.plot(it[steps], F[steps], color="C0", lw=1.2, label="lower bound (search)")
        drawn.append(F[steps])
        if events:
            for name, (marker, colour, text) in _EVENT_STYLE.items():
                sel = ev == name
                if sel.any():
                    ax.plot(it[sel], F[sel], marker=marker, color=colour, linestyle="none",
                            markersize=8, label=text)
        ax.set_xlabel("VBEM iteration (whole search)")
    else:
        kept = np.asarray(estimator.lower_bounds_, dtype=float)
        runs = getattr(estimator, "restarts_", None) if restarts else None
        if runs:
            for r, run in enumerate(runs):
                trace = np.asarray(run.lower_bounds, dtype=float)
                ax.plot(np.arange(1, trace.size + 1), trace, color="0.6", lw=0.8,
                        label="restarts" if r == 0 else None)
                drawn.append(trace)
        ax.plot(np.arange(1, kept.size + 1), kept, color="C0", lw=2, label="kept run")
        drawn.append(kept)
        if events:
            for i, iteration in enumerate(_pruning_iterations(estimator)):
                ax.axvline(iteration, color="tab:red", linestyle=":",
                           label="state dimension pruned" if i == 0 else None)
        ax.set_xlabel("iteration")
    ax.set_ylabel("lower bound F (nats)")
    values = np.concatenate([d[np.isfinite(d)] for d in drawn]) if drawn else np.array([])
    if clip and values.size > 5:
        lo, hi = np.quantile(values, 0.05), values.max()
        pad = 0.05 * max(hi - lo, 1e-9)
        ax.set_ylim(lo - pad, hi + pad)
    ax.legend()
    return ax
