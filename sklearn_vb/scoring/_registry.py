"""The bridge from fitted estimators to their ScoringModels.

One table maps an estimator class to a factory ``fitted_estimator -> ScoringModel``.
The package's estimators are registered by :mod:`sklearn_vb.scoring.models`; the
estimators themselves know nothing of the scoring layer, so imports run one way
(scoring imports estimators, never the reverse).
"""

from __future__ import annotations

from .._core.evidence.protocols import has
from .models import ESTIMATOR_FACTORIES

__all__ = ["register_scoring_model", "scoring_model_for"]

# estimator class (or class name) -> factory(fitted_estimator) -> ScoringModel
_FACTORIES = dict(ESTIMATOR_FACTORIES)


def register_scoring_model(estimator_class, factory):
    """Register ``factory(fitted_estimator) -> ScoringModel`` for an estimator class
    (or class name); subclasses use it too unless they are registered themselves.

    Examples
    --------
    A subclass of a registered estimator inherits its scoring model; a class of one's
    own brings a factory:

    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.scoring import register_scoring_model, scoring_model_for
    >>> class MyHMM(VBHiddenMarkov):
    ...     pass
    >>> X = np.array([[0], [1], [1], [0], [2], [2]] * 4)
    >>> fitted = MyHMM(n_components=2, random_state=0).fit(X)
    >>> model = scoring_model_for(fitted)
    >>> model.n_cases(model.prepare_data(X))
    24
    >>> class Wrapper:
    ...     def __init__(self, fitted):
    ...         self.fitted = fitted
    >>> register_scoring_model(Wrapper, lambda w: scoring_model_for(w.fitted))
    >>> type(scoring_model_for(Wrapper(fitted))) is type(model)
    True
    """
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {factory!r}.")
    _FACTORIES[estimator_class] = factory


def _looks_like_scoring_model(obj):
    return hasattr(obj, "param_space") and has(obj, "log_likelihood")


def _registered_factory(estimator_class):
    for cls in estimator_class.__mro__:
        factory = _FACTORIES.get(cls, _FACTORIES.get(cls.__name__))
        if factory is not None:
            return factory
    return None


_MISSING = object()


def scoring_model_for(estimator, default=_MISSING):
    """The ScoringModel of a fitted estimator.

    Looked up in this order: an object's own ``scoring_model()`` method (how test
    models and user-defined fits provide theirs); the object itself when it already is
    a ScoringModel (has ``param_space`` and ``log_likelihood``); the factory registered
    with :func:`register_scoring_model` for its class or the nearest base class.

    Returns ``default`` when there is none (no factory, or a factory that raises
    ``NotImplementedError`` for the estimator's configuration), and raises
    ``NotImplementedError`` if no ``default`` was given.  The factories of the package
    estimators raise ``NotFittedError`` for an unfitted estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.scoring import scoring_model_for
    >>> X = np.array([[0], [1], [1], [0], [2], [2]] * 4)
    >>> fitted_hmm = VBHiddenMarkov(n_components=2, random_state=0).fit(X)
    >>> model = scoring_model_for(fitted_hmm)
    >>> model.log_likelihood(model.sample_prior(0, 5), model.prepare_data(X)).shape
    (5,)
    >>> scoring_model_for(object(), default=None) is None
    True
    """
    if has(estimator, "scoring_model"):
        return estimator.scoring_model()
    if _looks_like_scoring_model(estimator):
        return estimator
    factory = _registered_factory(type(estimator))
    if factory is not None:
        try:
            return factory(estimator)
        except NotImplementedError:
            # the factory has no model for this configuration of the estimator
            if default is _MISSING:
                raise
            return default
    if default is _MISSING:
        raise NotImplementedError(f"no ScoringModel is available for {type(estimator).__name__}")
    return default
