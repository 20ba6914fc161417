"""Hinton diagrams: a matrix as squares whose area is proportional to each entry."""

from __future__ import annotations

import numpy as np

from ._common import check_fitted


def hinton(matrix, ax=None, *, max_weight=None, title=None, xlabel=None, ylabel=None,
           xticklabels=None, yticklabels=None):
    """Draw a Hinton diagram of ``matrix``.

    Each entry is a square whose area is proportional to its magnitude (``max_weight``
    is drawn with 0.9 times the cell's side), white for positive and black for
    negative entries, on a grey background, rows from top to bottom as in the matrix
    (the diagrams of Beal 2003, Figs 5.4 and 4.6).

    Parameters
    ----------
    matrix : array-like of shape (n_rows, n_columns)
    ax : matplotlib Axes or None
        Axes to draw on; None creates a new figure.
    max_weight : float or None
        The magnitude drawn as a full cell; default the largest magnitude in ``matrix``.
        Pass the same value to several diagrams to make them comparable.
    title, xlabel, ylabel : str or None
    xticklabels, yticklabels : sequence of str or None
        Labels of the columns and rows (default: no ticks).

    Returns
    -------
    ax : matplotlib Axes
        The axes; ``ax.patches`` holds one square per non-zero entry.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.plotting import hinton
    >>> ax = hinton(np.array([[0.9, -0.1], [0.0, 0.5]]), title="A")
    >>> len(ax.patches), ax.get_title()
    (3, 'A')
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    W = np.asarray(matrix, dtype=float)
    if W.ndim == 1:
        W = W[None, :]
    if W.ndim != 2:
        raise ValueError(f"matrix must be 2-D; got shape {W.shape}.")
    if not np.all(np.isfinite(W)):
        raise ValueError("matrix contains NaN or infinity.")
    if ax is None:
        _, ax = plt.subplots(layout="constrained")
    scale = float(max_weight) if max_weight is not None else float(np.abs(W).max())
    if not scale > 0:
        scale = 1.0
    ax.set_facecolor("0.5")
    for (i, j), w in np.ndenumerate(W):
        if w == 0:
            continue
        # the largest square fills 90% of its cell, so neighbours stay apart
        size = 0.9 * np.sqrt(min(abs(w) / scale, 1.0))
        ax.add_patch(Rectangle((j - size / 2, i - size / 2), size, size,
                               facecolor="white" if w > 0 else "black", edgecolor="none"))
    ax.set_xlim(-0.5, W.shape[1] - 0.5)
    ax.set_ylim(W.shape[0] - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(W.shape[1]) if xticklabels is not None else [])
    ax.set_yticks(range(W.shape[0]) if yticklabels is not None else [])
    if xticklabels is not None:
        ax.set_xticklabels(list(xticklabels), rotation=90 if W.shape[1] > 8 else 0)
    if yticklabels is not None:
        ax.set_yticklabels(list(yticklabels))
    if title is not None:
        ax.set_title(title)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    return ax


def _parameter_matrices(estimator):
    """``[(title, matrix, xlabel, ylabel)]`` of the fitted model's parameter matrices."""
    name = type(estimator).__name__
    if hasattr(estimator, "transmat_"):
        out = [("transition matrix", estimator.transmat_, "to state", "from state")]
        if getattr(estimator, "emissionprob_", None) is not None:
            out.append(("emission probabilities", estimator.emissionprob_, "symbol", "state"))
        elif getattr(estimator, "means_", None) is not None:
            out.append(("state means", estimator.means_, "feature", "state"))
        elif getattr(estimator, "rates_", None) is not None:
            out.append(("Poisson rates", estimator.rates_, "feature", "state"))
        return out
    if hasattr(estimator, "loadings_"):
        return [(f"loadings of component {s}", L, "factor", "feature")
                for s, L in enumerate(estimator.loadings_)]
    if hasattr(estimator, "A_mean_"):
        out = [("A (dynamics)", estimator.A_mean_, "state", "state"),
               ("C (output)", estimator.C_mean_, "state", "output")]
        for label, attr in (("B (input to state)", "B_mean_"), ("D (input to output)", "D_mean_")):
            M = getattr(estimator, attr, None)
            if M is not None and M.size and np.any(M != 0):
                out.append((label, M, "input", "state" if attr == "B_mean_" else "output"))
        return out
    if hasattr(estimator, "cpts_"):
        names = getattr(getattr(estimator, "structure_", None), "names", None)
        names = names or [str(j) for j in range(len(estimator.cpts_))]
        return [(f"p({node} | parents)", cpt, "state", "parent configuration")
                for node, cpt in zip(names, estimator.cpts_)]
    raise ValueError(f"plot_parameters does not know the parameters of {name}.")


def plot_parameters(estimator, *, fig=None, max_cols=4, same_scale=False):
    """Hinton diagrams of a fitted model's parameter matrices.

    :class:`~sklearn_vb.VBHiddenMarkov`: the transition matrix and the emission
    probabilities (or the state means, or the Poisson rates);
    :class:`~sklearn_vb.VBMixtureFactorAnalysers`: the loading matrix of every component;
    :class:`~sklearn_vb.VBLinearDynamicalSystem`: A and C (and B, D when there are
    inputs); :class:`~sklearn_vb.VBDiscreteDAG`: the conditional probability table of
    every node (rows are parent configurations).  Posterior means throughout.

    Parameters
    ----------
    estimator : fitted estimator
    fig : matplotlib Figure or None
        Figure to draw into (its existing axes are kept); None creates one.
    max_cols : int, default=4
        Diagrams per row.
    same_scale : bool, default=False
        Draw every diagram against the largest magnitude of all of them.

    Returns
    -------
    axes : list of matplotlib Axes
        One per diagram, titled with the matrix drawn.

    Examples
    --------
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.datasets import make_hmm_sequences
    >>> from sklearn_vb.plotting import plot_parameters
    >>> X, _, lengths = make_hmm_sequences(
    ...     [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]],
    ...     [100] * 5, random_state=0)
    >>> hmm = VBHiddenMarkov(n_components=2, random_state=0).fit(X, lengths=lengths)
    >>> [ax.get_title() for ax in plot_parameters(hmm)]
    ['transition matrix', 'emission probabilities']
    """
    import matplotlib.pyplot as plt

    if not any(hasattr(estimator, a) for a in ("transmat_", "loadings_", "A_mean_", "cpts_")):
        check_fitted(estimator, "lower_bound_", "plot_parameters")
    mats = _parameter_matrices(estimator)
    n_cols = min(max_cols, len(mats))
    n_rows = -(-len(mats) // n_cols)
    if fig is None:
        fig = plt.figure(figsize=(3.2 * n_cols, 3.0 * n_rows), layout="constrained")
    top = max((abs(np.asarray(M, dtype=float)).max() for _, M, _, _ in mats), default=1.0)
    axes = []
    for i, (title, M, xlabel, ylabel) in enumerate(mats):
        ax = fig.add_subplot(n_rows, n_cols, i + 1)
        hinton(M, ax, max_weight=top if same_scale else None, title=title,
               xlabel=xlabel, ylabel=ylabel)
        axes.append(ax)
    return axes
