"""Marginal-likelihood ("evidence") scorers for fitted VB estimators.

Every scorer returns a :class:`ScoreResult` holding a log-evidence estimate
``ln p(X | m)`` in nats, total over the data set (higher is better; sklearn's ``bic`` has
the opposite sign and a factor 2).

>>> import numpy as np
>>> from sklearn_vb import VBHiddenMarkov
>>> from sklearn_vb.scoring import score
>>> X = np.array([0, 1, 1, 0, 2, 2, 1, 0, 0, 1, 2, 2])
>>> est = VBHiddenMarkov(2, n_symbols=3, random_state=0).fit(X)
>>> res = score(est, X, method="ais", n_temperatures=1000, random_state=0)
>>> bool(res.log_evidence > est.lower_bound_), bool(res.stderr < 1.0)   # VB is a lower bound
(True, True)

Methods: ``"vb"`` (the fitted bound), ``"map"`` (the log-likelihood at the EM point
estimate, not an evidence approximation), ``"bic"`` (at the maximum-likelihood point),
``"bic_map"`` (BIC at the MAP point), ``"bicp"``, ``"laplace"``, ``"cs"``,
``"cs_dagger"``, ``"is"`` (importance sampling from q), ``"ais"``, ``"rais"`` (reverse AIS,
simulated data only), ``"bdmc"`` and ``"vmcmc"``.  Apart from ``"vb"`` (any estimator with
``lower_bound_``) and ``"bic"`` (any estimator with a ``bic`` method), scorers work through
the estimator's :class:`ScoringModel`, which :func:`scoring_model_for` builds from the
fitted estimator (register one for a new estimator class with
:func:`register_scoring_model`).
"""

from .._core.numerics import (
    delta_method_stderr,
    importance_effective_sample_size,
    log_mean_exp,
    log_sum_exp,
)
# the samplers of sklearn_vb.mcmc work through the same three steps as the scorers
from .._core.evidence.params import ParamBlock, ParamSpace
from .._core.evidence.protocols import EStep, Kernel, ScoringModel, ScoringModelMixin, VariationalPosterior
from ._base import prepare_data, resolve_model, variational_posterior
from ._dimension import effective_dimension
from ._registry import register_scoring_model, scoring_model_for
from ._result import ScoreResult, UnreliableEstimateWarning
from ._scorers import SCORERS, get_scorer, score

__all__ = [
    "ScoreResult",
    "UnreliableEstimateWarning",
    "score",
    "get_scorer",
    "SCORERS",
    "scoring_model_for",
    "register_scoring_model",
    "effective_dimension",
    "ParamBlock",
    "ParamSpace",
    "ScoringModel",
    "ScoringModelMixin",
    "VariationalPosterior",
    "Kernel",
    "EStep",
    "log_mean_exp",
    "log_sum_exp",
    "importance_effective_sample_size",
    "delta_method_stderr",
]


def __getattr__(name):
    # the former name of importance_effective_sample_size; sklearn_vb.mcmc's
    # effective_sample_size is the other quantity (of a Markov chain)
    if name == "effective_sample_size":
        import warnings

        warnings.warn("sklearn_vb.scoring.effective_sample_size was renamed "
                      "importance_effective_sample_size (the effective sample size of "
                      "importance weights); the old name will be removed.",
                      FutureWarning, stacklevel=2)
        return importance_effective_sample_size
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
