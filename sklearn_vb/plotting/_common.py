"""Shared helpers of the plotting functions."""

from __future__ import annotations


def new_axes(ax, **subplot_kw):
    """``ax`` itself, or the axes of a new figure whose layout keeps every label inside."""
    import matplotlib.pyplot as plt

    if ax is not None:
        return ax
    _, ax = plt.subplots(layout="constrained", **subplot_kw)
    return ax


def check_fitted(estimator, attribute, what):
    if not hasattr(estimator, attribute):
        raise ValueError(
            f"{what} needs a fitted estimator with {attribute!r}; got "
            f"{type(estimator).__name__} without it (call fit first)."
        )
