"""Random malformed input at every public fit/score/predict/transform and at
:func:`sklearn_vb.scoring.score`.

Accepted outcomes: a ``ValueError``, ``TypeError`` or ``NotFittedError`` with a message,
or a result that is finite and has one entry per row.  Never an ``IndexError``, a numba
error, a NaN result or a result of the wrong length.  Each entry point gets a few
seconds of examples (``max_examples`` and ``deadline`` bound it).
"""

import warnings
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.exceptions import NotFittedError

from sklearn_vb import (
    PairwiseMRF,
    VBDiscreteDAG,
    VBHiddenMarkov,
    VBLinearDynamicalSystem,
    VBMixtureFactorAnalysers,
    VBSigmoidBeliefNetwork,
)
from sklearn_vb.scoring import score

ACCEPTED = (ValueError, TypeError, NotFittedError)
SETTINGS = settings(max_examples=12, deadline=timedelta(seconds=20), derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_RNG = np.random.default_rng(0)
_SYM = _RNG.integers(0, 3, size=(30, 1))
_GAUSS = _RNG.normal(size=(30, 2))
_DAG = _RNG.integers(0, 2, size=(30, 2))
_BIN = _RNG.integers(0, 2, size=(30, 3))


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


MAKERS = {
    "hmm": lambda: VBHiddenMarkov(2, n_symbols=3, max_iter=3, random_state=0),
    "ghmm": lambda: VBHiddenMarkov(2, emission="gaussian", covariance_type="diag", max_iter=3,
                                   random_state=0),
    "phmm": lambda: VBHiddenMarkov(2, emission="poisson", max_iter=3, random_state=0),
    "lds": lambda: VBLinearDynamicalSystem(n_states=1, max_iter=2, random_state=0),
    "mfa": lambda: VBMixtureFactorAnalysers(search=False, max_iter=3, random_state=0),
    "dag": lambda: VBDiscreteDAG({"h": [], "a": ["h"], "b": ["h"]}, cardinalities=2, hidden="h",
                                 max_iter=3, n_init=1, random_state=0),
    "mrf": lambda: PairwiseMRF(max_iter=10),
    "sbn": lambda: VBSigmoidBeliefNetwork(max_iter=3, n_init=1, random_state=0),
}
TRAIN = {"hmm": _SYM, "ghmm": _GAUSS, "phmm": np.abs(_SYM), "lds": _GAUSS, "mfa": _GAUSS, "dag": _DAG,
         "mrf": _BIN, "sbn": _BIN}
METHODS = {
    "hmm": ["score", "score_samples", "predict", "predict_proba"],
    "ghmm": ["score", "predict", "predict_proba"],
    "phmm": ["score", "predict"],
    "lds": ["score", "score_samples", "transform", "predict"],
    "mfa": ["score", "score_samples", "predict", "predict_proba", "transform"],
    "dag": ["score", "score_samples", "predict", "predict_proba"],
    "mrf": ["score", "score_samples"],
    "sbn": ["score", "predict_proba"],
}
SCORES = {"mrf": ["bic"], "sbn": ["vb", "bic"]}
SEQUENCE_MODELS = {"hmm", "ghmm", "phmm", "lds"}
_FITTED = {}


def fitted(name):
    if name not in _FITTED:
        _FITTED[name] = _quiet(lambda: MAKERS[name]().fit(TRAIN[name]))
    return _FITTED[name]


@pytest.fixture(scope="module", autouse=True)
def compiled_once():
    """Every entry point called once on valid data before the examples run, so that the
    first numba compilation (tens of seconds on a cold cache) is not timed against the
    per-example deadline, which is there to catch hangs."""
    for name in MAKERS:
        est = fitted(name)
        calls = [lambda m=m: getattr(est, m)(TRAIN[name]) for m in METHODS.get(name, [])]
        calls += [lambda m=m: score(est, TRAIN[name], m)
                  for m in SCORES.get(name, ["vb", "bic", "cs"])]
        for call in calls:
            try:
                _quiet(call)
            except (*ACCEPTED, NotImplementedError):
                pass


elements = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(-4, 4).map(round),
    st.integers(-3, 6).map(float),
)
numeric_arrays = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.int64, np.bool_]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    elements=None,
).flatmap(lambda a: hnp.arrays(a.dtype, a.shape,
                               elements=elements if a.dtype == np.float64 else None))
odd_inputs = st.one_of(
    st.none(),
    st.just("abc"),
    st.lists(st.one_of(st.integers(-2, 4), st.text(max_size=2), st.none()), max_size=6).map(
        lambda v: np.array(v, dtype=object)[:, None] if v else np.zeros((0, 1), dtype=object)),
    hnp.arrays(np.dtype("U2"), hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)),
    st.lists(st.lists(st.integers(-2, 4), min_size=1, max_size=3), min_size=1, max_size=5),
)
inputs = st.one_of(numeric_arrays, numeric_arrays, odd_inputs)
WIDTH = {"hmm": 1, "ghmm": 2, "phmm": 1, "lds": 2, "mfa": 2, "dag": 2, "mrf": 3, "sbn": 3}
COUNTS = {"hmm", "phmm", "dag", "mrf", "sbn"}


def near_valid(name):
    """Arrays of the right width: extreme but finite values for the Gaussian models,
    small integers (some out of range) for the count and symbol models."""
    if name in COUNTS:
        elements = st.integers(-1, 4).map(float)
    else:
        elements = st.one_of(st.floats(-1e300, 1e300), st.floats(-1e-300, 1e-300),
                             st.sampled_from([0.0, 1.0, -1.0]))
    return hnp.arrays(np.float64, st.tuples(st.integers(1, 12), st.just(WIDTH[name])),
                      elements=elements)


def any_input(name):
    return st.one_of(inputs, near_valid(name), near_valid(name))
sequence_kwargs = st.one_of(
    st.just({}),
    st.lists(st.integers(-2, 12), max_size=4).map(lambda v: {"lengths": v}),
    st.lists(st.floats(-2, 12), min_size=1, max_size=3).map(lambda v: {"lengths": v}),
    st.lists(st.integers(0, 3), max_size=12).map(lambda v: {"sequence_ids": v}),
)


def _n_rows(X):
    arr = np.asarray(X)
    return arr.shape[0] if arr.ndim >= 1 else None


def _check_outcome(call, X, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = call()
        except ACCEPTED as exc:
            assert str(exc).strip(), f"{type(exc).__name__} without a message"
            return
    if method in ("fit",):
        assert np.isfinite(out.lower_bound_)
        return
    if method == "score":
        assert np.isfinite(out), f"score returned {out}"
        return
    arr = np.asarray(out)
    if arr.dtype.kind == "f":
        assert np.all(np.isfinite(arr)), f"{method} returned non-finite values"
    n = _n_rows(X)
    if method == "score_samples" and arr.ndim == 1 and n is not None:
        assert arr.shape[0] in (n,) or arr.shape[0] < n  # per frame, or per sequence
    elif method != "score_samples" and n is not None:
        assert arr.shape[0] == n, f"{method} returned {arr.shape[0]} rows for {n}"


@pytest.mark.parametrize("name", sorted(MAKERS))
@SETTINGS
@given(data=st.data(), kwargs=sequence_kwargs)
def test_fit_on_malformed_input(name, data, kwargs):
    X = data.draw(any_input(name))
    est = MAKERS[name]()
    kw = kwargs if name in SEQUENCE_MODELS else {}
    _check_outcome(lambda: est.fit(X, **kw), X, "fit")


@pytest.mark.parametrize("name, method", [(n, m) for n in sorted(METHODS) for m in METHODS[n]])
@SETTINGS
@given(data=st.data(), kwargs=sequence_kwargs)
def test_fitted_methods_on_malformed_input(name, method, data, kwargs):
    X = data.draw(any_input(name))
    est = fitted(name)
    kw = kwargs if name in SEQUENCE_MODELS else {}
    _check_outcome(lambda: getattr(est, method)(X, **kw), X, method)


@pytest.mark.parametrize("name", sorted(METHODS))
@SETTINGS
@given(data=st.data(), kwargs=sequence_kwargs)
def test_scoring_score_on_malformed_input(name, data, kwargs):
    # the scores each model supports (others raise NotImplementedError by design)
    method = data.draw(st.sampled_from(SCORES.get(name, ["vb", "bic", "cs"])))
    X = data.draw(any_input(name))
    est = fitted(name)
    kw = kwargs if name in SEQUENCE_MODELS else {}
    _check_outcome(lambda: score(est, X, method, **kw).log_evidence, X, "score")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_unfitted_methods_raise_not_fitted(name):
    est = MAKERS[name]()
    for method in METHODS[name]:
        with pytest.raises(NotFittedError):
            getattr(est, method)(TRAIN[name])
