"""Marginal-likelihood ("evidence") scorers for fitted VB estimators.

Every scorer returns a :class:`ScoreResult` holding a log-evidence estimate
``ln p(X | m)`` in nats, total over the data set (higher is better; sklearn's ``bic`` has
the opposite sign and a factor 2).

>>> from sklearn_vb.scoring import score, get_scorer
>>> res = score(estimator, X, method="ais", n_temperatures=1000, random_state=0)  # doctest: +SKIP
>>> res.log_evidence, res.stderr                                                  # doctest: +SKIP

Methods: ``"vb"`` (the fitted bound), ``"map"`` (the log-likelihood at the EM point
estimate, not an evidence approximation), ``"bic"``, ``"bicp"``, ``"laplace"``, ``"cs"``,
``"cs_dagger"``, ``"is"`` (importance sampling from q), ``"ais"``, ``"rais"`` (reverse AIS,
simulated data only), ``"bdmc"`` and ``"vmcmc"``.  Apart from ``"vb"`` (any estimator with
``lower_bound_``) and ``"bic"`` (any estimator with a ``bic`` method), scorers work through
the estimator's :class:`ScoringModel`, which :func:`scoring_model_for` builds from the
fitted estimator (register one for a new estimator class with
:func:`register_scoring_model`).
"""

from ._numerics import (
    delta_method_stderr,
    effective_sample_size,
    log_mean_exp,
    log_sum_exp,
)
from ._registry import register_scoring_model, scoring_model_for
from ._result import ScoreResult, UnreliableEstimateWarning
from ._scorers import SCORERS, get_scorer, score
from .params import ParamBlock, ParamSpace
from .protocols import EStep, Kernel, ScoringModel, ScoringModelMixin, VariationalPosterior

__all__ = [
    "ScoreResult",
    "UnreliableEstimateWarning",
    "score",
    "get_scorer",
    "SCORERS",
    "scoring_model_for",
    "register_scoring_model",
    "ParamBlock",
    "ParamSpace",
    "ScoringModel",
    "ScoringModelMixin",
    "VariationalPosterior",
    "Kernel",
    "EStep",
    "log_mean_exp",
    "log_sum_exp",
    "effective_sample_size",
    "delta_method_stderr",
]
