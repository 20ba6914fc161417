"""Scorer table and the ScoringModel registry for package estimators."""

from __future__ import annotations

import importlib

__all__ = ["SCORERS", "get_scorer", "score", "scoring_model_for", "register_scoring_model"]

# method name -> "module:Class" (imported lazily so that importing the package stays cheap)
_SCORER_PATHS = {
    "vb": "._vb:VBScore",
    "bic": "._bic:BICScore",
    "bicp": "._bic:BICpScore",
    "laplace": "._laplace:LaplaceScore",
    "cs": "._cs:CSScore",
    "cs_dagger": "._cs:CSDaggerScore",
    "is": "._is:ISScore",
    "ais": "._ais:AISScore",
    "rais": "._ais:ReverseAISScore",
    "bdmc": "._ais:BDMCScore",
    "vmcmc": "._vmcmc:VMCMCScore",
}


def _load(path):
    mod, cls = path.split(":")
    return getattr(importlib.import_module(mod, __package__), cls)


class _ScorerTable(dict):
    """``SCORERS[name]`` is the scorer class; classes are imported on first access."""

    def __getitem__(self, name):
        value = dict.__getitem__(self, name)
        if isinstance(value, str):
            value = _load(value)
            dict.__setitem__(self, name, value)
        return value

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]


SCORERS = _ScorerTable(_SCORER_PATHS)


def get_scorer(method, **options):
    """A configured scorer: ``get_scorer("ais", n_temperatures=1000)(estimator, X, **fit_params)``.

    ``method`` may also be an existing scorer instance, returned unchanged when no
    options are given (re-configured copy otherwise).
    """
    from ._base import Scorer

    if isinstance(method, Scorer):
        if not options:
            return method
        return type(method)(**{**method.params, **options})
    if not isinstance(method, str) or method not in SCORERS:
        raise ValueError(f"method must be one of {sorted(SCORERS)}, got {method!r}.")
    return SCORERS[method](**options)


def score(estimator, X, method="vb", *, alias_correction=False, random_state=None, n_jobs=None,
          **options_and_fit_params):
    """Estimate ln p(X | m) for a fitted ``estimator`` with ``method``.

    Keywords naming an option of the scorer configure it; every other keyword is a fit
    parameter (``lengths=``, ``sequence_ids=``, ``U=``) passed to the model.

    Returns
    -------
    ScoreResult
    """
    scorer_cls = SCORERS[method] if isinstance(method, str) and method in SCORERS else None
    if scorer_cls is None:
        raise ValueError(f"method must be one of {sorted(SCORERS)}, got {method!r}.")
    allowed = scorer_cls.all_option_defaults()
    options = {k: v for k, v in options_and_fit_params.items() if k in allowed}
    fit_params = {k: v for k, v in options_and_fit_params.items() if k not in allowed}
    scorer = scorer_cls(alias_correction=alias_correction, random_state=random_state,
                        n_jobs=n_jobs, **options)
    return scorer(estimator, X, **fit_params)


# ---------------------------------------------------------------------------------------
# ScoringModel registry for estimators without a scoring_model() method
# ---------------------------------------------------------------------------------------

# estimator class name -> "module:function" building a ScoringModel from a fitted estimator
_MODEL_FACTORIES = {
    "VBHiddenMarkov": ".models.hmm:scoring_model_from_estimator",
    "VBDiscreteDAG": ".models.dag:scoring_model_from_estimator",
    "VBLinearDynamicalSystem": ".models.lds:scoring_model_from_estimator",
    "VBMixtureFactorAnalysers": ".models.mfa:scoring_model_from_estimator",
}


def register_scoring_model(estimator_class, factory):
    """Register ``factory(fitted_estimator) -> ScoringModel`` for an estimator class
    (or class name)."""
    name = estimator_class if isinstance(estimator_class, str) else estimator_class.__name__
    _MODEL_FACTORIES[name] = factory


_MISSING = object()


def scoring_model_for(estimator, default=_MISSING):
    """The ScoringModel of a fitted estimator, from its ``scoring_model()`` method or the
    registry (``register_scoring_model``).  Raises ``NotImplementedError`` when there is
    none and no ``default`` was given."""
    if callable(getattr(estimator, "scoring_model", None)):
        return estimator.scoring_model()
    for cls in type(estimator).__mro__:
        factory = _MODEL_FACTORIES.get(cls.__name__)
        if factory is None:
            continue
        if isinstance(factory, str):
            try:
                factory = _load(factory)
            except (ImportError, AttributeError):
                break
        return factory(estimator)
    if default is _MISSING:
        raise NotImplementedError(
            f"no ScoringModel is available for {type(estimator).__name__}"
        )
    return default
