"""StructureSearch: ranking, results table, alias handling, two-stage mode, parallel and
cached execution and pipelines (the scikit-learn meta-estimator checks are in
tests/contract/test_estimator_checks.py)."""

import math
import warnings

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import FitFailedWarning
from sklearn.mixture import BayesianGaussianMixture
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_vb._commands.bernoulli_mixture import VBBernoulliMixture
from sklearn_vb.model_selection import StructureSearch
from sklearn_vb.scoring import ScoreResult


# --------------------------------------------------------------------------- helpers
class ToyModel(BaseEstimator):
    """A model whose 'fit' sets a known bound: lower_bound_ = -(k - peak)^2 - offset.

    ``random_state`` is recorded so tests can see the seed each candidate received.
    """

    n_fits = 0  # class-level counter of fit calls in this process
    interrupt_k = None  # class-level switch simulating an interruption at this k

    def __init__(self, k=1, peak=3, fail_at=None, random_state=None):
        self.k = k
        self.peak = peak
        self.fail_at = fail_at
        self.random_state = random_state

    def fit(self, X, y=None, **fit_params):
        type(self).n_fits += 1
        if self.fail_at is not None and self.k == self.fail_at:
            raise ValueError(f"toy failure at k={self.k}")
        if type(self).interrupt_k is not None and self.k == type(self).interrupt_k:
            raise KeyboardInterrupt
        self.lower_bound_ = -float((self.k - self.peak) ** 2) - 10.0
        self.n_iter_ = 7 + self.k
        self.converged_ = self.k != 5
        self.fit_params_ = dict(fit_params)
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        return np.full(len(X), self.k)


def alias_scorer(estimator, X, **kwargs):
    """A 'vb'-like scorer whose alias count ln k! changes the ranking."""
    k = estimator.k
    raw = -0.5 * k  # raw prefers k = 1
    alias = math.lgamma(k + 1) if kwargs.get("alias_correction") else 0.0
    return ScoreResult("vb", raw, "lower", log_alias_correction=alias)


alias_scorer.method = "vb"


class NoisyScorer:
    """An 'ais'-like stochastic scorer, seeded per call, that prefers k = peak + 1."""

    method = "ais"

    def __init__(self, shift=0.0, se=0.01):
        self.shift = shift
        self.se = se

    def __call__(self, estimator, X, random_state=None, alias_correction=False, **fit_params):
        rng = np.random.default_rng(random_state)
        k, peak = estimator.k, estimator.peak
        value = -float((k - peak - 1) ** 2) - 10.0 + self.shift + self.se * rng.standard_normal()
        alias = math.lgamma(k + 1) if alias_correction else 0.0
        return ScoreResult("ais", value, "stochastic_lower", log_alias_correction=alias,
                           stderr=self.se)


X_TOY = np.zeros((5, 2))


def bernoulli_data(seed, K=3, D=16, n=240):
    rng = np.random.default_rng(seed)
    # well-separated prototypes: each component a distinct block pattern
    means = np.full((K, D), 0.08)
    block = D // K
    for j in range(K):
        means[j, j * block : (j + 1) * block] = 0.92
    z = rng.integers(K, size=n)
    return (rng.random((n, D)) < means[z]).astype(float)


# --------------------------------------------------------------------------- basics
def test_ranks_by_score_and_table_is_complete_and_sorted():
    grid = {"k": [1, 2, 3, 4, 5]}
    search = StructureSearch(ToyModel(), grid, scoring="vb").fit(X_TOY)
    r = search.results_
    assert search.best_params_ == {"k": 3}
    assert search.best_index_ == 2
    assert search.best_score_ == pytest.approx(-10.0)
    assert search.best_estimator_.k == 3 and hasattr(search.best_estimator_, "lower_bound_")
    n = len(grid["k"])
    for key in ["params", "param_k", "score_vb", "raw_score_vb", "corrected_score_vb",
                "log_alias_correction_vb", "stderr_vb", "bound_vb", "method_vb", "rank_vb",
                "rank", "fit_time", "score_time", "n_iter", "converged", "lower_bound",
                "fit_failed", "seed"]:
        assert len(r[key]) == n, key
    np.testing.assert_allclose(r["raw_score_vb"], [-14, -11, -10, -11, -14])
    np.testing.assert_array_equal(r["rank_vb"], [4, 2, 1, 2, 4])
    np.testing.assert_array_equal(r["n_iter"], [8, 9, 10, 11, 12])
    np.testing.assert_array_equal(r["converged"], [True, True, True, True, False])
    assert list(r["bound_vb"]) == ["lower"] * n
    table = search.results_table()
    assert list(table["param_k"]) == [3, 2, 4, 1, 5]
    assert np.all(np.diff(table["score_vb"].to_numpy()) <= 0)
    np.testing.assert_array_equal(np.sort(r["rank"]), np.arange(1, n + 1))
    assert search.predict(X_TOY).tolist() == [3] * 5
    assert search.n_features_in_ == 2


def test_fit_params_reach_every_candidate():
    lengths = np.array([2, 3])
    search = StructureSearch(ToyModel(), {"k": [2, 3]}).fit(X_TOY, lengths=lengths)
    np.testing.assert_array_equal(search.best_estimator_.fit_params_["lengths"], lengths)


def test_several_scores_one_pass_and_refit_selects():
    X = bernoulli_data(0)
    search = StructureSearch(
        VBBernoulliMixture(n_init=2, max_iter=200), {"n_components": [1, 2, 3]},
        scoring=["vb", "bic"], refit="bic", random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no alias count for this model
        search.fit(X)
    r = search.results_
    assert search.scorer_names_ == ["vb", "bic"] and search.selection_score_ == "bic"
    # bic column is -bic/2 of each fitted candidate; vb column is its bound
    for i in range(3):
        est = clone(search.estimator).set_params(
            n_components=r["params"][i]["n_components"], random_state=int(r["seed"][i])
        ).fit(X)
        assert r["raw_score_vb"][i] == pytest.approx(est.lower_bound_, abs=1e-9)
        assert r["raw_score_bic"][i] == pytest.approx(-0.5 * est.bic(X), abs=1e-9)
    assert search.best_index_ == int(np.argmax(r["score_bic"]))
    assert list(r["bound_bic"]) == ["approx"] * 3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_picks_true_number_of_bernoulli_components(seed):
    X = bernoulli_data(seed)
    search = StructureSearch(
        VBBernoulliMixture(n_init=4, max_iter=300), {"n_components": [1, 2, 3, 4, 5]},
        scoring="vb", random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X)
    assert search.best_params_ == {"n_components": 3}


# --------------------------------------------------------------------------- aliases
def test_alias_correction_auto_true_false():
    grid = {"k": [1, 2, 3, 4, 5, 6]}
    # raw: -k/2 (best k=1); corrected: -k/2 + ln k! (best k=6)
    auto = StructureSearch(ToyModel(), grid, scoring={"vbish": alias_scorer}).fit(X_TOY)
    assert auto.best_params_ == {"k": 6}
    np.testing.assert_allclose(auto.results_["log_alias_correction_vbish"],
                               [math.lgamma(k + 1) for k in grid["k"]])
    np.testing.assert_allclose(auto.results_["score_vbish"],
                               auto.results_["corrected_score_vbish"])
    off = StructureSearch(ToyModel(), grid, scoring={"vbish": alias_scorer},
                          alias_correction=False).fit(X_TOY)
    assert off.best_params_ == {"k": 1}
    np.testing.assert_allclose(off.results_["score_vbish"], off.results_["raw_score_vbish"])
    # Monte Carlo scores are never corrected under "auto", even when ln S is reported
    ais = StructureSearch(ToyModel(), grid, scoring=NoisyScorer(), random_state=0).fit(X_TOY)
    assert ais.scorer_names_ == ["ais"]
    assert ais.best_params_ == {"k": 4}
    assert ais.results_["log_alias_correction_ais"][-1] == pytest.approx(math.lgamma(7))
    np.testing.assert_allclose(ais.results_["score_ais"], ais.results_["raw_score_ais"])


class BrokenModelToy(ToyModel):
    """A model whose scoring model cannot be built (the scoring layer raises)."""

    def scoring_model(self):
        raise ValueError("cannot build the scoring model")


def test_failing_scoring_model_keeps_the_raw_vb_bound():
    search = StructureSearch(BrokenModelToy(), {"k": [2, 3, 4]})
    with pytest.warns(UserWarning, match="counting the posterior aliases failed.*cannot build"):
        search.fit(X_TOY)
    np.testing.assert_allclose(search.results_["raw_score_vb"], [-11, -10, -11])
    assert search.best_params_ == {"k": 3}
    res = search.score_results_[1]["vb"]
    assert res.diagnostics["source"] == "lower_bound_"
    # other scores are not silently replaced: bic fails and gets error_score
    with pytest.warns(FitFailedWarning, match="scoring failed"):
        s = StructureSearch(BrokenModelToy(), {"k": [2, 3]}, scoring=["vb", "bic"]).fit(X_TOY)
    assert np.isnan(s.results_["score_bic"]).all()


def test_missing_alias_count_falls_back_to_raw_with_warning():
    X = bernoulli_data(0, n=60)
    search = StructureSearch(VBBernoulliMixture(max_iter=50), {"n_components": [1, 2]})
    with pytest.warns(UserWarning, match="cannot count its posterior aliases"):
        search.fit(X)
    np.testing.assert_allclose(search.results_["score_vb"], search.results_["raw_score_vb"])


# --------------------------------------------------------------------------- two-stage
def test_two_stage_rescores_top_k_and_warns_on_larger_model():
    grid = {"k": [1, 2, 3, 4, 5, 6]}
    search = StructureSearch(ToyModel(), grid, scoring="vb", rescoring=NoisyScorer(),
                             rescore_top_k=3, random_state=0)
    with pytest.warns(RuntimeWarning, match="prefers k=4"):
        search.fit(X_TOY)
    r = search.results_
    # vb top 3 are k = 3, 2, 4 (2 and 4 tie); they and only they are re-scored
    np.testing.assert_array_equal(r["rescored"], [False, True, True, True, False, False])
    assert np.isnan(r["raw_score_ais"][[0, 4, 5]]).all()
    assert np.isfinite(r["raw_score_ais"][[1, 2, 3]]).all()
    assert search.best_params_ == {"k": 4} and search.selection_score_ == "ais"
    assert search.best_score_ == pytest.approx(r["score_ais"][3])
    assert r["rank"][3] == 1 and sorted(r["rank"][[1, 2]]) == [2, 3]
    assert set(r["rank"][[0, 4, 5]]) == {4, 5, 6}


def test_two_stage_warns_when_ais_below_vb():
    search = StructureSearch(ToyModel(), {"k": [2, 3, 4]}, scoring="vb",
                             rescoring=NoisyScorer(shift=-5.0), rescore_top_k=2,
                             random_state=0)
    with pytest.warns(RuntimeWarning, match="below the vb lower bound"):
        search.fit(X_TOY)


def test_not_separable_flags_use_stderr():
    search = StructureSearch(ToyModel(), {"k": [3, 4, 5]},
                             scoring=NoisyScorer(se=1.0), random_state=0).fit(X_TOY)
    r = search.results_
    best = search.best_index_
    assert not r["not_separable"][best]
    for i in range(3):
        if i != best:
            gap = abs(r["score_ais"][i] - r["score_ais"][best])
            assert r["not_separable"][i] == (gap < 2 * math.sqrt(2.0))


# --------------------------------------------------------------------------- seeds
def test_candidate_seeds_depend_on_random_state_and_params_only():
    a = StructureSearch(ToyModel(), {"k": [1, 2, 3]}, random_state=5).fit(X_TOY)
    b = StructureSearch(ToyModel(), {"k": [3, 1, 2, 7]}, random_state=5).fit(X_TOY)
    c = StructureSearch(ToyModel(), {"k": [1, 2, 3]}, random_state=6).fit(X_TOY)
    seed_a = dict(zip([p["k"] for p in a.results_["params"]], a.results_["seed"]))
    seed_b = dict(zip([p["k"] for p in b.results_["params"]], b.results_["seed"]))
    for k in (1, 2, 3):
        assert seed_a[k] == seed_b[k]
    assert len(set(seed_a.values())) == 3
    assert not np.array_equal(a.results_["seed"], c.results_["seed"])
    assert a.best_estimator_.random_state == seed_a[3]
    # random_state=None leaves the estimator's own random_state alone
    d = StructureSearch(ToyModel(random_state=11), {"k": [1, 2]}).fit(X_TOY)
    assert d.best_estimator_.random_state == 11


def _comparable(results):
    skip = {"fit_time", "score_time"}
    return {k: v for k, v in results.items() if k not in skip}


def _assert_same_results(r1, r2):
    a, b = _comparable(r1), _comparable(r2)
    assert a.keys() == b.keys()
    for k in a:
        if np.asarray(a[k]).dtype.kind == "f":
            np.testing.assert_allclose(a[k], b[k], rtol=0, atol=0, err_msg=k)
        else:
            assert list(a[k]) == list(b[k]), k


def test_n_jobs_does_not_change_results():
    X = bernoulli_data(3, n=120)
    kw = dict(scoring=["vb", "bic"], random_state=1)
    est = VBBernoulliMixture(n_init=2, max_iter=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        s1 = StructureSearch(est, {"n_components": [1, 2, 3, 4]}, n_jobs=1, **kw).fit(X)
        # threads keep the test light; the process-based backends are covered by the
        # dask test below and behave the same (candidates are independent tasks)
        with joblib.parallel_config(backend="threading"):
            s2 = StructureSearch(est, {"n_components": [1, 2, 3, 4]}, n_jobs=2, **kw).fit(X)
    _assert_same_results(s1.results_, s2.results_)
    assert s1.best_params_ == s2.best_params_


def test_dask_backend_gives_same_results_as_serial():
    distributed = pytest.importorskip("distributed")
    X = bernoulli_data(4, n=120)
    est = VBBernoulliMixture(n_init=2, max_iter=100)
    grid = {"n_components": [1, 2, 3, 4]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        serial = StructureSearch(est, grid, scoring=["vb", "bic"], random_state=2).fit(X)
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster, distributed.Client(cluster) as client:
            with joblib.parallel_config(backend="dask"):
                on_dask = StructureSearch(
                    est, grid, scoring=["vb", "bic"], random_state=2, n_jobs=-1
                ).fit(X)
            # the candidates really ran as tasks on the cluster
            prefixes = client.run_on_scheduler(
                lambda dask_scheduler: list(dask_scheduler.task_prefixes)
            )
            assert prefixes, prefixes
    _assert_same_results(serial.results_, on_dask.results_)
    assert serial.best_params_ == on_dask.best_params_


# --------------------------------------------------------------------------- memory
def test_memory_resumes_an_interrupted_search(tmp_path):
    memory = joblib.Memory(tmp_path, verbose=0)
    grid = {"k": [1, 2, 3, 4]}
    search = StructureSearch(ToyModel(), grid, memory=memory, random_state=0)
    ToyModel.n_fits = 0
    ToyModel.interrupt_k = 3  # class attribute: invisible to the cache key
    try:
        with pytest.raises(KeyboardInterrupt):
            search.fit(X_TOY)
    finally:
        ToyModel.interrupt_k = None
    assert ToyModel.n_fits == 3  # k = 1, 2 finished (and were cached), k = 3 interrupted
    ToyModel.n_fits = 0
    search.fit(X_TOY)
    assert ToyModel.n_fits == 2  # resumed: only k = 3, 4 are fitted
    assert search.best_params_ == {"k": 3}
    ToyModel.n_fits = 0
    again = StructureSearch(ToyModel(), {"k": [4, 3, 2, 1, 5]}, memory=memory, random_state=0)
    again.fit(X_TOY)
    assert ToyModel.n_fits == 1  # only the new candidate k = 5
    _assert_same_results(
        {k: v[[3, 2, 1, 0]] for k, v in again.results_.items() if k not in ("rank", "rank_vb")},
        {k: v for k, v in search.results_.items() if k not in ("rank", "rank_vb")},
    )
    # a different random_state is a different search
    ToyModel.n_fits = 0
    StructureSearch(ToyModel(), grid, memory=memory, random_state=1).fit(X_TOY)
    assert ToyModel.n_fits == 4


# --------------------------------------------------------------------------- errors
def test_failed_candidate_gets_error_score_and_warning():
    search = StructureSearch(ToyModel(fail_at=3), {"k": [2, 3, 4]})
    with pytest.warns(FitFailedWarning, match="toy failure at k=3"):
        search.fit(X_TOY)
    r = search.results_
    np.testing.assert_array_equal(r["fit_failed"], [False, True, False])
    assert np.isnan(r["score_vb"][1]) and r["rank"][1] == 3
    assert search.best_params_["k"] in (2, 4)
    with pytest.raises(ValueError, match="toy failure"):
        StructureSearch(ToyModel(fail_at=3), {"k": [2, 3]}, error_score="raise").fit(X_TOY)
    s = StructureSearch(ToyModel(fail_at=3), {"k": [2, 3]}, error_score=-1e9)
    with pytest.warns(FitFailedWarning):
        s.fit(X_TOY)
    assert s.results_["score_vb"][1] == -1e9


def test_all_candidates_failing_raises_the_original_error():
    with pytest.raises(ValueError, match="toy failure"):
        StructureSearch(ToyModel(fail_at=3), {"k": [3]}).fit(X_TOY)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scoring": "nope"}, "scoring='nope' is not a known score"),
        ({"scoring": []}, "scoring is empty"),
        ({"scoring": ["vb", "vb"]}, "twice"),
        ({"refit": "bic"}, "refit='bic' is not one of the scores"),
        ({"rescoring": "vb"}, "also in scoring"),
        ({"alias_correction": {"vb": "yes"}}, "alias_correction must be"),
        ({"param_grid": {"k": []}}, "non-empty"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, match):
    kw = {"param_grid": {"k": [1, 2]}, **kwargs}
    grid = kw.pop("param_grid")
    with pytest.raises(ValueError, match=match):
        StructureSearch(ToyModel(), grid, **kw).fit(X_TOY)


def test_refit_false_keeps_no_estimator():
    search = StructureSearch(ToyModel(), {"k": [2, 3]}, refit=False).fit(X_TOY)
    assert search.best_params_ == {"k": 3}
    assert not hasattr(search, "best_estimator_")
    assert not hasattr(search, "predict")
    with pytest.raises(AttributeError, match="predict"):
        search.predict(X_TOY)


def test_verbose_reports_progress(capsys):
    StructureSearch(ToyModel(), {"k": [1, 2, 3]}, verbose=1).fit(X_TOY)
    out = capsys.readouterr().out
    assert "fitting 3 candidate(s) scored by vb" in out
    assert "3/3 k=3: vb=-10.000" in out
    assert "best: k=3 with vb=-10.000" in out


# --------------------------------------------------------------------------- pipelines
def test_pipeline_clone_and_get_params():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (60, 2)), rng.normal(3, 1, (60, 2))]) * [10.0, 0.1]
    search = StructureSearch(
        BayesianGaussianMixture(max_iter=200, weight_concentration_prior_type="dirichlet_distribution"),
        {"n_components": [1, 2]}, scoring="vb", random_state=0,
    )
    pipe = make_pipeline(StandardScaler(), search)
    params = pipe.get_params()
    assert params["structuresearch__param_grid"] == {"n_components": [1, 2]}
    assert params["structuresearch__estimator__max_iter"] == 200
    pipe2 = clone(pipe)
    assert pipe2.get_params()["structuresearch__scoring"] == "vb"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        pipe2.fit(X)
    fitted = pipe2[-1]
    assert fitted.best_params_ == {"n_components": 2}
    labels = pipe2.predict(X)
    assert labels.shape == (120,) and len(np.unique(labels)) == 2
    assert np.isfinite(pipe2.score(X))
    assert pipe2.score(X) == pytest.approx(fitted.best_estimator_.score(StandardScaler().fit_transform(X)))
    assert not hasattr(search, "results_")  # clone/pipeline did not fit the original
