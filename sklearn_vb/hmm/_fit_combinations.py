"""The combinations of a fit's constructor parameters and arguments that
:class:`~sklearn_vb.hmm.VBHiddenMarkov` refuses before reading the data (scikit-learn's
parameter validation checks each parameter alone)."""

from __future__ import annotations

from ._distributed import is_dask_input
from ._online_fit import check_online

__all__ = ["check_fit_combinations"]


def check_fit_combinations(est, X, states):
    """A clear ValueError for a combination the fit of ``est`` on ``X`` (with the known
    ``states``) cannot run."""
    if est.learning_method == "online":
        check_online(est, "learning_method='online'")
    if est.method != "vb" and est.optimize_prior_strengths:
        raise ValueError("optimize_prior_strengths=True needs method='vb' (it maximises "
                         f"the variational bound); got method={est.method!r}.")
    if (est.warm_start and hasattr(est, "lower_bound_")
            and est._point_fitted != (est.method != "vb")):
        raise ValueError("warm_start=True continues the previous fit, which used another "
                         f"method than method={est.method!r}; refit without warm_start.")
    if states is not None and est.subchain_length is not None:
        raise ValueError("states (known states) cannot be combined with subchain_length: "
                         "the subchains' buffered passes do not clamp q(s).")
    if est.transition_inputs == "continuous" and est.optimize_prior_strengths:
        raise ValueError("optimize_prior_strengths=True optimises Dirichlet strengths; "
                         "with transition_inputs='continuous' the transitions have a "
                         "Gaussian prior (transition_coef_prior): set it to False.")
    if est.transition_inputs == "continuous" and est.n_input_levels is not None:
        raise ValueError("n_input_levels applies to transition_inputs='categorical'; got "
                         f"n_input_levels={est.n_input_levels!r} with "
                         "transition_inputs='continuous'.")
    if est.transition_inputs is not None and (
            est.method != "vb" or est.learning_method != "batch" or is_dask_input(X)):
        raise ValueError("transition_inputs is fitted by batch VBEM in memory: it needs "
                         f"method='vb', learning_method='batch' and an in-memory X; got "
                         f"method={est.method!r}, learning_method="
                         f"{est.learning_method!r}"
                         + (" and a dask collection X." if is_dask_input(X) else "."))
