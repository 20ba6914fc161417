"""The constraints on the constructor parameters of
:class:`~sklearn_vb.hmm.VBHiddenMarkov` (scikit-learn's parameter validation; the
template's own parameters are added by the estimator)."""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions

from .._core.base import ACCELERATION_CONSTRAINT
from .._core.online import ONLINE_PARAMETER_CONSTRAINTS
from .emissions import EMISSION_FAMILIES

__all__ = ["PARAMETER_CONSTRAINTS"]

#: parameter name -> the values it accepts
PARAMETER_CONSTRAINTS: dict = {
    "n_components": [Interval(Integral, 1, None, closed="left")],
    "emission": [StrOptions({emission for emission, _ in EMISSION_FAMILIES})],
    "covariance_type": [StrOptions({"full", "diag"})],
    "n_symbols": [None, Interval(Integral, 1, None, closed="left")],
    "startprob_prior": [None, Real, "array-like"],
    "transmat_prior": [None, Real, "array-like"],
    "emissionprob_prior": [None, Real, "array-like"],
    "means_prior": [None, Real, "array-like"],
    "beta_prior": [Interval(Real, 0.0, None, closed="neither")],
    "dof_prior": [None, Interval(Real, 0.0, None, closed="neither")],
    "scale_prior": [None, Real, "array-like"],
    "rate_prior": [None, "array-like"],
    "optimize_prior_strengths": ["boolean"],
    "transition_inputs": [None, StrOptions({"categorical", "continuous"})],
    "transition_coef_prior": [Interval(Real, 0.0, None, closed="neither"), "array-like"],
    "n_input_levels": [None, Interval(Integral, 1, None, closed="left")],
    "init_params": [
        StrOptions({"auto", "context", "random_marginals", "random", "random_params", "kmeans",
                    "posterior"})
    ],
    "init_posterior": [None, dict],
    "acceleration": ACCELERATION_CONSTRAINT,
    "method": [StrOptions({"vb", "map", "ml"})],
    **ONLINE_PARAMETER_CONSTRAINTS,
    "subchain_length": [None, Interval(Integral, 1, None, closed="left")],
    "buffer_length": [StrOptions({"auto"}), Interval(Integral, 0, None, closed="left")],
}
