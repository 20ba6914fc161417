"""Nothing is lost: inputs are never modified, fitted models and finished searches survive
pickle and joblib, seeds reproduce results (also with n_jobs > 1 and across threads)."""

import io
import pickle
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import joblib
import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem, VBMixtureFactorAnalysers
from sklearn_vb.model_selection import StructureSearch
from sklearn_vb.scoring import score

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

_RNG = np.random.default_rng(7)
SYM = _RNG.integers(0, 3, size=(60, 1))
LENGTHS = np.array([20, 25, 15])
IDS = np.repeat([5, 2, 9], LENGTHS)
GAUSS = _RNG.normal(size=(60, 3))
U = _RNG.normal(size=(60, 1))
DAG_X = _RNG.integers(0, 3, size=(60, 3)).astype(float)
DAG_X[::7, 1] = np.nan  # missing values are part of the input that must survive


def _case(name):
    """(estimator, X, fit keyword arguments, methods taking X and the same keywords)."""
    if name == "hmm":
        return (VBHiddenMarkov(3, n_symbols=3, max_iter=10, n_init=2, random_state=0), SYM,
                {"lengths": LENGTHS}, ["score", "score_samples", "predict", "predict_proba"])
    if name == "hmm-ids":
        return (VBHiddenMarkov(2, emission="gaussian", max_iter=10, random_state=0), GAUSS,
                {"sequence_ids": IDS}, ["score", "score_samples", "predict", "predict_proba"])
    if name == "lds":
        return (VBLinearDynamicalSystem(n_states=2, max_iter=8, random_state=0), GAUSS,
                {"U": U, "lengths": LENGTHS}, ["score", "score_samples", "transform", "predict"])
    if name == "mfa":
        return (VBMixtureFactorAnalysers(n_components=2, search=False, max_iter=20, random_state=0),
                GAUSS, {}, ["score", "score_samples", "predict", "predict_proba", "transform"])
    if name == "dag":
        return (VBDiscreteDAG(n_components=2, max_iter=20, n_init=2, random_state=0), DAG_X, {},
                ["score", "score_samples", "predict", "predict_proba"])
    raise KeyError(name)


CASES = ["hmm", "hmm-ids", "lds", "mfa", "dag"]


def _copies(X, kwargs):
    return np.array(X, copy=True), {k: np.array(v, copy=True) for k, v in kwargs.items()}


def _assert_unchanged(X, kwargs, before):
    X0, kw0 = before
    np.testing.assert_array_equal(X, X0)
    for k in kwargs:
        np.testing.assert_array_equal(kwargs[k], kw0[k])


def _outputs(est, X, kwargs, methods):
    out = {}
    for m in methods:
        value = getattr(est, m)(X, **kwargs)
        out[m] = np.asarray(value)
    return out


_FITS = {}


def _fitted(name):
    if name not in _FITS:
        est, X, kw, methods = _case(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, **kw)
        _FITS[name] = (est, X, kw, methods)
    return _FITS[name]


@pytest.mark.parametrize("name", CASES)
def test_inputs_are_never_modified(name):
    est, X, kw, methods = _case(name)
    X = np.array(X, copy=True)
    kw = {k: np.array(v, copy=True) for k, v in kw.items()}
    before = _copies(X, kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, **kw)
        _assert_unchanged(X, kw, before)
        for m in methods:
            getattr(est, m)(X, **kw)
            _assert_unchanged(X, kw, before)
        for method in ("vb", "bic") if name in ("hmm", "dag") else ("vb",):
            score(est, X, method, **kw)
            _assert_unchanged(X, kw, before)
        if hasattr(est, "fit_predict"):
            type(est)(**est.get_params()).fit_predict(X, **kw)
            _assert_unchanged(X, kw, before)


def test_search_does_not_modify_its_inputs():
    X, lengths = SYM.copy(), LENGTHS.copy()
    search = StructureSearch(VBHiddenMarkov(n_symbols=3, max_iter=5), {"n_components": [1, 2]},
                             scoring=["vb", "bic"], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, lengths=lengths)
    np.testing.assert_array_equal(X, SYM)
    np.testing.assert_array_equal(lengths, LENGTHS)


@pytest.mark.parametrize("name", CASES)
def test_pickle_and_joblib_round_trips(name):
    est, X, kw, methods = _fitted(name)
    want = _outputs(est, X, kw, methods)
    buffer = io.BytesIO()
    joblib.dump(est, buffer)
    buffer.seek(0)
    for copy in (pickle.loads(pickle.dumps(est)), joblib.load(buffer)):
        got = _outputs(copy, X, kw, methods)
        for m in methods:
            np.testing.assert_array_equal(got[m], want[m], err_msg=m)
        assert copy.lower_bound_ == est.lower_bound_
        assert score(copy, X, "vb", **kw).log_evidence == score(est, X, "vb", **kw).log_evidence


def _search(n_jobs, grid=(1, 2, 3), memory=None):
    return StructureSearch(VBHiddenMarkov(n_symbols=3, max_iter=10, n_init=2),
                           {"n_components": list(grid)}, scoring=["vb", "bic"], n_jobs=n_jobs,
                           random_state=3, memory=memory)


def _fit_quiet(search, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return search.fit(*args, **kwargs)


def _same_results(a, b, columns=("score_vb", "score_bic", "lower_bound", "seed", "rank")):
    for c in columns:
        np.testing.assert_array_equal(a.results_[c], b.results_[c], err_msg=c)


def test_finished_search_round_trips_and_n_jobs_does_not_change_results(tmp_path):
    serial = _fit_quiet(_search(1), SYM, lengths=LENGTHS)
    # threads keep this light; process and dask backends: tests/model_selection/test_model_selection.py
    with joblib.parallel_config(backend="threading"):
        parallel = _fit_quiet(_search(2), SYM, lengths=LENGTHS)
    _same_results(serial, parallel)
    assert serial.best_params_ == parallel.best_params_
    for copy in (pickle.loads(pickle.dumps(serial)),
                 joblib.load(joblib.dump(serial, tmp_path / "search.joblib")[0])):
        _same_results(copy, serial)
        np.testing.assert_array_equal(copy.predict(SYM, lengths=LENGTHS),
                                      serial.predict(SYM, lengths=LENGTHS))
        assert copy.score(SYM, lengths=LENGTHS) == serial.score(SYM, lengths=LENGTHS)


def test_interrupted_search_resumes_from_memory(tmp_path):
    full = _fit_quiet(_search(1), SYM, lengths=LENGTHS)
    memory = joblib.Memory(tmp_path, verbose=0)
    _fit_quiet(_search(1, grid=(1, 2), memory=memory), SYM, lengths=LENGTHS)  # stopped early
    resumed = _fit_quiet(_search(1, memory=memory), SYM, lengths=LENGTHS)
    _same_results(resumed, full)
    # the first two candidates were loaded, not refitted: their fit times are the cached ones
    again = _fit_quiet(_search(1, memory=memory), SYM, lengths=LENGTHS)
    np.testing.assert_array_equal(again.results_["fit_time"], resumed.results_["fit_time"])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("method", ["bic", "cs", "is"])
def test_seeded_scores_repeat(method):
    est, X, kw, _ = _fitted("hmm")
    options = {"n_samples": 200} if method == "is" else {}
    a = score(est, X, method, **kw, **options).log_evidence
    b = score(est, X, method, **kw, **options).log_evidence
    assert a == b
    c = score(est, X, method, random_state=11, **kw, **options).log_evidence
    d = score(est, X, method, random_state=11, **kw, **options).log_evidence
    assert c == d


def test_parallel_threads_give_the_serial_results():
    jobs = [_case(name)[:3] for name in CASES] * 2

    def run(job):
        est, X, kw = job
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = type(est)(**est.get_params()).fit(X, **kw)
        return fitted.lower_bound_, np.asarray(fitted.score_samples(X, **kw))

    serial = [run(job) for job in jobs]
    barrier = threading.Barrier(4)

    def run_together(job):
        barrier.wait(timeout=60)  # start the threads at once, so the fits overlap
        return run(job)

    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(run_together, jobs[:4])) + list(pool.map(run, jobs[4:]))
    for (b1, s1), (b2, s2) in zip(serial, threaded):
        assert b1 == b2
        np.testing.assert_array_equal(s1, s2)
