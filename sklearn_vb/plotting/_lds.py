"""Hidden states of a linear dynamical system with their uncertainty."""

from __future__ import annotations

import numpy as np

from ._common import check_fitted


def plot_lds_states(estimator, X, *, U=None, lengths=None, sequence_ids=None, sequence=0,
                    dims=None, filtered=True, smoothed=True, n_sd=2.0, fig=None):
    """Plot the filtered and smoothed state means of one sequence with ``n_sd`` bands.

    The variational Kalman filter and smoother (Beal 2003, §5.3.3-5.3.5) are run on ``X``
    with q(theta) fixed
    (:meth:`~sklearn_vb.VBLinearDynamicalSystem.state_posterior`).
    Filtered states :math:`p(x_t \\mid y_{1:t})` use the past only; smoothed states
    :math:`q(x_t)` use the whole sequence and are never wider.  One panel per state
    dimension.  State coordinates are defined only up to a change of basis, so compare
    them with other fits through subspaces, not coordinate by coordinate.

    Parameters
    ----------
    estimator : fitted VBLinearDynamicalSystem
    X : array-like of shape (n_samples, n_outputs)
    U, lengths, sequence_ids :
        As for :meth:`~sklearn_vb.VBLinearDynamicalSystem.transform`.
    sequence : int, default=0
        Which sequence to draw.
    dims : sequence of int or None
        State dimensions to draw; default the active ones (``active_states_``), at most 6.
    filtered, smoothed : bool, default=True
        Which estimates to draw.
    n_sd : float, default=2.0
        Half-width of the bands in posterior standard deviations.
    fig : matplotlib Figure or None

    Returns
    -------
    axes : list of matplotlib Axes
        One per state dimension; each holds a line and a band (``ax.collections``) per
        estimate drawn.

    Examples
    --------
    >>> from sklearn_vb import VBLinearDynamicalSystem
    >>> from sklearn_vb.datasets import make_lds, make_lds_params
    >>> from sklearn_vb.plotting import plot_lds_states
    >>> X, _ = make_lds(make_lds_params(2, 4, 0, random_state=0), [100], random_state=0)
    >>> lds = VBLinearDynamicalSystem(n_states=2, fit_intercept=False, max_iter=100,
    ...                               random_state=0).fit(X)
    >>> axes = plot_lds_states(lds, X)
    >>> len(axes), len(axes[0].collections)
    (2, 2)
    """
    import matplotlib.pyplot as plt

    check_fitted(estimator, "A_mean_", "plot_lds_states")
    if not (filtered or smoothed):
        raise ValueError("filtered and smoothed cannot both be False.")
    post = estimator.state_posterior(X, U=U, lengths=lengths, sequence_ids=sequence_ids)
    starts, ends = post.starts, post.ends
    if not 0 <= sequence < starts.size:
        raise ValueError(f"sequence must be in [0, {starts.size}); got {sequence}.")
    rows = slice(int(starts[sequence]), int(ends[sequence]))
    k = post.smoothed_mean.shape[1]
    if dims is None:
        active = np.asarray(getattr(estimator, "active_states_", np.ones(k, dtype=bool)))
        dims = np.flatnonzero(active)[:6] if active.dtype == bool else np.asarray(active)[:6]
        if len(dims) == 0:
            dims = np.arange(min(k, 6))
    dims = [int(d) for d in dims]
    for d in dims:
        if not 0 <= d < k:
            raise ValueError(f"dims must be state dimensions in [0, {k}); got {d}.")
    if fig is None:
        fig = plt.figure(figsize=(8, 1.9 * len(dims) + 0.6), layout="constrained")
    t = np.arange(rows.stop - rows.start)
    axes = []
    estimates = []
    if filtered:
        estimates.append(("filtered", post.filtered_mean, post.filtered_cov, "tab:orange",
                          0.2))
    if smoothed:
        estimates.append(("smoothed", post.smoothed_mean, post.smoothed_cov, "tab:blue", 0.3))
    for i, d in enumerate(dims):
        ax = fig.add_subplot(len(dims), 1, i + 1, sharex=axes[0] if axes else None)
        for label, mean, cov, colour, alpha in estimates:
            m = mean[rows, d]
            sd = np.sqrt(np.maximum(cov[rows, d, d], 0.0))
            ax.fill_between(t, m - n_sd * sd, m + n_sd * sd, color=colour, alpha=alpha,
                            linewidth=0)
            ax.plot(t, m, color=colour, lw=1.2, label=f"{label} ± {n_sd:g} sd")
        ax.set_ylabel(f"x{d}")
        axes.append(ax)
    axes[0].legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("time step")
    return axes
