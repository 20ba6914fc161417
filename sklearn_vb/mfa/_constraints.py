"""The constraints on the constructor parameters of
:class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers` (scikit-learn's parameter validation;
the template's own parameters are added by the estimator)."""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions

from .._core.base import ACCELERATION_CONSTRAINT
from .._core.online import ONLINE_PARAMETER_CONSTRAINTS

__all__ = ["PARAMETER_CONSTRAINTS"]

#: parameter name -> the values it accepts
PARAMETER_CONSTRAINTS: dict = {
    "n_components": [Interval(Integral, 1, None, closed="left")],
    "n_factors": [Interval(Integral, 0, None, closed="left"), None],
    "search": ["boolean"],
    "max_components": [Interval(Integral, 1, None, closed="left"), None],
    "alpha": [Interval(Real, 0.0, None, closed="neither")],
    "a": [Interval(Real, 0.0, None, closed="neither")],
    "b": [Interval(Real, 0.0, None, closed="neither")],
    "optimize_hyperparameters": ["boolean", list, tuple, set, frozenset],
    "standardize": ["boolean"],
    "psi_min": [Interval(Real, 0.0, None, closed="neither"), StrOptions({"auto"})],
    "death_threshold": [Interval(Real, 0.0, None, closed="left")],
    "max_tries": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "split_direction": [StrOptions({"principal-first", "random"})],
    "split_hardness": [Interval(Real, 0.5, 1.0, closed="both")],
    "split": [StrOptions({"responsibility", "spatial"})],
    "agitation_tol": [Interval(Real, 0.0, None, closed="left")],
    "epoch_rtol": [Interval(Real, 0.0, None, closed="left")],
    "max_iter_epoch": [Interval(Integral, 1, None, closed="left")],
    "refit_final": [Interval(Integral, 0, None, closed="left")],
    "birth_accept_rtol": [Interval(Real, 0.0, None, closed="left")],
    "birth_reject_rtol": [Interval(Real, 0.0, None, closed="left")],
    "skip_rejected_parents": ["boolean"],
    "birth_partial_iter": [Interval(Integral, 0, None, closed="left")],
    "birth_partial_reject": ["boolean"],
    "shrinking_death_threshold": [Interval(Real, 0.0, None, closed="left")],
    "polish_iter": [Interval(Integral, 0, None, closed="left")],
    "ard_threshold": [Interval(Real, 0.0, None, closed="left")],
    "prune_factors": ["boolean"],
    "prune_threshold": [Interval(Real, 0.0, None, closed="left")],
    "compress_factors": ["boolean"],
    "ard_rate_min": [Interval(Real, 0.0, None, closed="left")],
    "ard_rate_update": [StrOptions({"exact", "fixed-point"})],
    "rotations": ["boolean"],
    "rotation_interval": [Interval(Integral, 1, None, closed="left")],
    "acceleration": ACCELERATION_CONSTRAINT,
    "score_method": [StrOptions({"plugin", "bound"})],
    "init_params": [StrOptions({"kmeans", "random"})],
    "method": [StrOptions({"vb", "map", "ml"})],
    **ONLINE_PARAMETER_CONSTRAINTS,
}
