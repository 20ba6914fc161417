"""Automatic relevance determination: which columns the data keep switched on."""

from __future__ import annotations

import numpy as np

from ._common import check_fitted, new_axes


def plot_ard(estimator, ax=None):
    """Plot the ARD precisions of a fitted model on a log scale.

    A large precision pins its column of weights to zero (switched off); a small one
    leaves it free.  :class:`~sklearn_vb.VBMixtureFactorAnalysers`: the precision
    :math:`\\nu^s_j` of every loading column of every component (Beal 2003, §4.2.2), one
    group of bars per component.  :class:`~sklearn_vb.VBLinearDynamicalSystem`: the
    precisions :math:`\\alpha_j` and :math:`\\gamma_j` of the columns of A and C for
    every state dimension, and :math:`\\beta`, :math:`\\delta` of B and D per input
    (§5.2.2); dimensions the estimator reports as switched off are hatched.

    Parameters
    ----------
    estimator : fitted VBMixtureFactorAnalysers or VBLinearDynamicalSystem
    ax : matplotlib Axes or None

    Returns
    -------
    ax : matplotlib Axes
        One bar per precision (``ax.patches``), y axis logarithmic.

    Examples
    --------
    >>> from sklearn_vb import VBLinearDynamicalSystem
    >>> from sklearn_vb.datasets import make_lds, make_lds_params
    >>> from sklearn_vb.plotting import plot_ard
    >>> X, _ = make_lds(make_lds_params(2, 4, 0, random_state=0), [100], random_state=0)
    >>> lds = VBLinearDynamicalSystem(n_states=2, fit_intercept=False, max_iter=100,
    ...                               random_state=0).fit(X)
    >>> ax = plot_ard(lds)
    >>> len(ax.patches), ax.get_yscale()
    (4, 'log')
    """
    ax = new_axes(ax)
    if hasattr(estimator, "ard_precisions_"):
        prec = np.asarray(estimator.ard_precisions_, dtype=float)
        n_comp, k = prec.shape
        width = 0.8 / max(n_comp, 1)
        for s in range(n_comp):
            finite = np.isfinite(prec[s])
            xs = np.arange(k)[finite] + (s - (n_comp - 1) / 2) * width
            ax.bar(xs, prec[s][finite], width=width, label=f"component {s}")
        ax.set_xlabel("loading column j")
        ax.set_ylabel("ARD precision ν (log scale)")
        ax.set_xticks(range(k))
    elif hasattr(estimator, "alpha_"):
        alpha = np.asarray(estimator.alpha_, dtype=float)
        gamma = np.asarray(estimator.gamma_, dtype=float)
        k = alpha.size
        active = np.asarray(getattr(estimator, "active_states_", np.ones(k, dtype=bool)))
        if active.dtype != bool:
            mask = np.zeros(k, dtype=bool)
            mask[active] = True
            active = mask
        xs = np.arange(k)
        for offset, values, label in ((-0.2, alpha, "α (columns of A)"),
                                      (0.2, gamma, "γ (columns of C)")):
            bars = ax.bar(xs + offset, values, width=0.4, label=label)
            for bar, on in zip(bars, active):
                if not on:
                    bar.set_hatch("//")
        labels = [f"x{j}" for j in range(k)]
        for values, symbol in ((getattr(estimator, "beta_", None), "β"),
                               (getattr(estimator, "delta_", None), "δ")):
            values = np.asarray(values if values is not None else [], dtype=float)
            finite = np.flatnonzero(np.isfinite(values))
            if finite.size:
                pos = np.arange(len(labels), len(labels) + finite.size)
                ax.bar(pos, values[finite], width=0.4,
                       label=f"{symbol} (inputs to {'states' if symbol == 'β' else 'outputs'})")
                labels += [f"{symbol} u{c}" for c in finite]
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels)
        ax.set_xlabel("state dimension (hatched: switched off) / input")
        ax.set_ylabel("ARD precision (log scale)")
    else:
        check_fitted(estimator, "ard_precisions_", "plot_ard")
    ax.set_yscale("log")
    ax.legend()
    return ax
