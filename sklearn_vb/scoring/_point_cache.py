"""One point-estimate EM per fitted estimator, data and seed, shared by the scorers.

BIC, BICp, MAP, CS, CS-dagger, Laplace and the VB score started from CS all begin with
the model's ``fit_point`` (EM for the MAP from the fitted posterior's point plus seeded
restarts), which is most of what BIC, BICp, MAP and CS cost.  Scoring one fitted model
by several of them (a structure search ranking by ``["vb", "bic", "cs"]``, a table of
scores) repeats the same, deterministic EM.  :func:`shared_fit_point` remembers its
result: a call with the same fitted estimator (same object, same fitted attributes and
parameters), the same data, the same ``fit_point`` arguments and a generator in the
same state returns the remembered point, replays the warnings the EM raised and leaves
the generator in the state the EM would have left it in, so every score is exactly
what it would be without the cache.  Nothing is remembered for an unseeded call
(``rng`` not a :class:`numpy.random.Generator`), for data or estimators that cannot
be fingerprinted, or for a scoring model scored directly (not through a scikit-learn
estimator); a refitted estimator gets a new fingerprint.  The memory is a few
points per estimator, dropped with the estimator.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import warnings
import weakref
from numbers import Number

import numpy as np

from .._core.warn import warn_at_caller

__all__ = ["shared_fit_point", "clear_point_cache"]

#: remembered points per estimator (the oldest is dropped first)
_PER_ESTIMATOR = 4

_CACHE = weakref.WeakKeyDictionary()


class _Unhashable(Exception):
    pass


def clear_point_cache():
    """Forget every remembered point."""
    _CACHE.clear()


def _feed(h, obj):
    """Feed a canonical byte form of ``obj`` (arrays, numbers, strings, None and
    dicts / lists / tuples of them) to the hash ``h``; anything else is refused."""
    if obj is None or isinstance(obj, (bool, str, Number, np.generic)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise _Unhashable
        h.update(f"nd:{obj.dtype.str}:{obj.shape};".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, dict):
        h.update(b"dict{")
        for key in sorted(obj, key=repr):
            _feed(h, key)
            _feed(h, obj[key])
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[".encode())
        for item in obj:
            _feed(h, item)
        h.update(b"]")
    else:
        raise _Unhashable


def _estimator_fingerprint(h, estimator):
    """The estimator's parameters and every fitted attribute (``name_``) that is data."""
    params = estimator.get_params(deep=False) if hasattr(estimator, "get_params") else {}
    _feed(h, {k: v for k, v in params.items()
              if v is None or isinstance(v, (bool, str, Number, np.generic, np.ndarray))})
    for name in sorted(vars(estimator)):
        if name.endswith("_") and not name.startswith("_"):
            try:
                _feed(h, (name, vars(estimator)[name]))
            except _Unhashable:  # e.g. a posterior object: derived from the arrays
                h.update(f"{name}:{type(vars(estimator)[name]).__name__};".encode())


def _key(model, data, rng, kwargs):
    if not isinstance(rng, np.random.Generator):
        return None
    others = {k: v for k, v in kwargs.items() if k != "rng"}
    try:  # defaults filled in, so that an argument passed at its default is the same key
        bound = inspect.signature(model.fit_point).bind_partial(data, **others)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    args = dict(bound.arguments)
    args.pop(next(iter(args)))  # the data, whatever the argument's name
    args.pop("rng", None)
    h = hashlib.blake2b(digest_size=20)
    try:
        h.update(type(model).__qualname__.encode())
        _feed(h, args)
        _feed(h, data)
        _feed(h, rng.bit_generator.state)
    except _Unhashable:
        return None
    return h


def _accepts(func, name):
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def shared_fit_point(model, data, estimator=None, verbose=0, **kwargs):
    """``model.fit_point(data, **kwargs)``, remembered per fitted ``estimator`` (see the
    module docstring); warnings raised by the EM are raised again on every call.
    ``verbose`` (progress lines) reaches only a ``fit_point`` that takes it and is not
    part of what is remembered."""
    fit = model.fit_point
    if verbose and _accepts(fit, "verbose"):
        fit = functools.partial(fit, verbose=verbose)
    return _shared(model, fit, data, estimator, kwargs)


def _shared(model, fit, data, estimator, kwargs):
    rng = kwargs.get("rng")
    # only a model built from a fitted estimator: a scoring model passed directly keeps
    # its configuration in attributes no fingerprint here would see
    if estimator is None or estimator is model or not hasattr(estimator, "get_params"):
        return fit(data, **kwargs)
    h = _key(model, data, rng, kwargs)
    if h is not None:
        try:
            _estimator_fingerprint(h, estimator)
            store = _CACHE.setdefault(estimator, {})
        except TypeError:  # not weak-referenceable or not hashable
            h = None
    if h is None:
        return fit(data, **kwargs)
    key = h.hexdigest()
    if key not in store:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            theta = fit(data, **kwargs)
        while len(store) >= _PER_ESTIMATOR:
            store.pop(next(iter(store)))
        store[key] = (copy.deepcopy(theta), copy.deepcopy(rng.bit_generator.state),
                      [(w.message, w.category) for w in caught],
                      getattr(model, "last_point_run_", None))
    theta, state, caught, run = store[key]
    rng.bit_generator.state = copy.deepcopy(state)
    if run is not None:
        model.last_point_run_ = run
    for message, category in caught:
        warn_at_caller(message, category)
    return copy.deepcopy(theta)
