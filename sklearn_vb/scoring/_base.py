"""Scorer base class, option handling and model resolution."""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.evidence.protocols import has, require
from ._point_cache import shared_fit_point
from ._registry import scoring_model_for
from .._core.warn import warn_at_caller

__all__ = ["Scorer", "log_alias_count", "score_random_state", "resolve_model", "variational_posterior", "prepare_data", "COMMON_OPTIONS"]

#: options every scorer accepts, with their defaults
COMMON_OPTIONS = {
    "alias_correction": False,
    "random_state": None,
    "n_jobs": None,
    "verbose": 0,
}


def resolve_model(estimator, scorer_name, required=True):
    """The ScoringModel of ``estimator`` (:func:`~sklearn_vb.scoring.scoring_model_for`).

    Returns None, or raises ``NotImplementedError("<scorer> needs scoring_model")`` when
    ``required``, if the estimator has none.
    """
    model = scoring_model_for(estimator, default=None)
    if model is None and required:
        try:
            scoring_model_for(estimator)
        except NotImplementedError as exc:
            # the estimator's factory says why it has no model for this configuration
            raise NotImplementedError(f"{scorer_name} needs scoring_model: {exc}") from None
        raise NotImplementedError(f"{scorer_name} needs scoring_model")
    return model


def variational_posterior(estimator, model, data, posterior=None):
    """q(theta) for a scorer, or None when there is none.

    In this order: ``posterior`` (the scorer's option), the estimator's
    ``variational_posterior_`` attribute, the ScoringModel's ``variational_posterior(data)``.
    """
    q = posterior or getattr(estimator, "variational_posterior_", None)
    if q is None and model is not None and has(model, "variational_posterior"):
        q = model.variational_posterior(data)
    return q


def prepare_data(model, X, fit_params):
    """The model's data object for ``X`` and the fit parameters (lengths=, U=, ...)."""
    if has(model, "prepare_data"):
        accepted = _keyword_names(model.prepare_data)
        unknown = [] if accepted is None else sorted(set(fit_params) - accepted)
        if unknown:
            raise ValueError(
                f"unknown option(s) or fit parameter(s) {unknown}: not an option of this "
                f"scorer and not a fit parameter of {type(model).__name__} (it takes "
                f"{sorted(accepted - {'X', 'self'})})."
            )
        return model.prepare_data(X, **fit_params)
    if fit_params:
        raise ValueError(
            f"{type(model).__name__} accepts no fit parameters, got {sorted(fit_params)}."
        )
    return np.asarray(X)


def _keyword_names(func):
    """Keyword names ``func`` accepts, or None when it takes ``**kwargs``."""
    import inspect

    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def score_random_state(random_state, estimator):
    """The seed of a score: ``random_state`` when given, else the estimator's own
    ``random_state`` (None when it has none).

    A scorer draws all its randomness (restarts of the point estimate, perturbations of
    the effective dimension, chains and proposals) from this seed, so an estimator fitted
    with an integer ``random_state`` gets the same score on every call.  A
    ``numpy.random.RandomState`` or ``Generator`` is advanced by each call, as in
    scikit-learn.
    """
    if random_state is not None:
        return random_state
    return getattr(estimator, "random_state", None)


class Scorer:
    """A configured evidence estimator: ``scorer(estimator, X, **fit_params) -> ScoreResult``.

    Keyword arguments of the call that name an option of the scorer override the
    configured value for that call; every other keyword is a fit parameter passed to
    the model (``lengths=``, ``sequence_ids=``, ``U=`` ...).

    Seeding: with ``random_state=None`` (the default) the estimator's own
    ``random_state`` seeds the score, so a fitted estimator with an integer
    ``random_state`` gets the same score on every call; an explicit ``random_state``
    overrides it (see :func:`score_random_state`).
    """

    name = None
    #: scorer-specific options and defaults (COMMON_OPTIONS are added)
    options = {}

    def __init__(self, **options):
        self.params = self._merge(dict(self.all_option_defaults()), options)

    @classmethod
    def all_option_defaults(cls):
        out = dict(COMMON_OPTIONS)
        out.update(cls.options)
        return out

    def _merge(self, base, options):
        allowed = self.all_option_defaults()
        unknown = [k for k in options if k not in allowed]
        if unknown:
            raise ValueError(
                f"unknown option(s) {unknown} for scorer {self.name!r}; "
                f"allowed: {sorted(allowed)}."
            )
        out = dict(base)
        out.update(options)
        return out

    def get_params(self):
        return dict(self.params)

    def __repr__(self):
        changed = {k: v for k, v in self.params.items() if self.all_option_defaults()[k] is not v}
        inner = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"{type(self).__name__}({inner})"

    def split(self, kwargs):
        allowed = self.all_option_defaults()
        opts = {k: v for k, v in kwargs.items() if k in allowed}
        fit_params = {k: v for k, v in kwargs.items() if k not in allowed}
        return self._merge(self.params, opts), fit_params

    def __call__(self, estimator, X, **kwargs):
        opts, fit_params = self.split(kwargs)
        if X is None:
            raise ValueError("X must not be None.")
        opts["random_state"] = score_random_state(opts["random_state"], estimator)
        return self._score(estimator, X, fit_params, opts)

    def _score(self, estimator, X, fit_params, opts):  # pragma: no cover - abstract
        raise NotImplementedError

    # helpers ------------------------------------------------------------------
    def _fit_point(self, model, data, estimator=None, **kwargs):
        """``model.fit_point(data, **kwargs)``, shared with the other scorers of the same
        fitted ``estimator`` (:func:`~sklearn_vb.scoring._point_cache.shared_fit_point`);
        a ``ConvergenceWarning`` it raises (the EM hit its iteration cap) is raised again
        naming this scorer."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            theta = shared_fit_point(model, data, estimator, **kwargs)
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                warn_at_caller(f"scorer {self.name!r}: {w.message}", ConvergenceWarning)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return theta

    def _log_alias(self, model, opts):
        if not opts["alias_correction"]:
            return 0.0
        if model is None:
            raise NotImplementedError(f"{self.name} needs n_aliases")
        return log_alias_count(model, self.name)


def log_alias_count(model, scorer_name="alias correction"):
    """``ln S`` for a ScoringModel: its ``log_n_aliases()`` when it has one, else the
    logarithm of the exact integer ``n_aliases()``.

    ``S`` grows like ``K!``; the logarithm is taken in log space (log-factorials) or
    of the exact Python integer, never through a float or numpy conversion of ``S``,
    which overflows from ``K = 21`` on.
    """
    if has(model, "log_n_aliases"):
        log_s = float(model.log_n_aliases())
    else:
        require(model, scorer_name, "n_aliases")
        S = model.n_aliases()
        if isinstance(S, (float, np.floating)) and np.isfinite(S) and S == round(S):
            S = int(round(S))
        if not isinstance(S, (int, np.integer)) or isinstance(S, bool):
            raise ValueError(f"n_aliases() must return an integer; got {S!r}.")
        if S < 1:
            raise ValueError(f"n_aliases() must be >= 1, got {S}.")
        log_s = math.log(int(S))
    if not np.isfinite(log_s) or log_s < 0:
        raise ValueError(f"the log alias count ln S must be finite and >= 0; got {log_s!r}.")
    return log_s
