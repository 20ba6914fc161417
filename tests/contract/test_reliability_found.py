"""Problems found by using the package as a new user would, each pinned by a test."""

import math
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem, VBMixtureFactorAnalysers
from sklearn_vb.model_selection import SequenceKFold, StructureSearch, lengths_to_sequence_ids
from sklearn_vb.scoring import ScoreResult, score
from sklearn_vb.hmm.scoring_model import FamilyHMMScoringModel
from sklearn_vb.lds.scoring_model import LDSScoringModel

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _symbols(n=60, seed=0, M=3):
    return np.random.default_rng(seed).integers(0, M, size=(n, 1))


# ---------------------------------------------------------------- alias corrections
@pytest.mark.parametrize("K", [20, 21, 30])
def test_alias_correction_uses_log_factorials_beyond_20_states(K):
    X = _symbols()
    model = VBHiddenMarkov(n_components=K, n_symbols=3, max_iter=2, n_init=1, random_state=0).fit(X)
    res = score(model, X, "vb", alias_correction=True)
    assert res.log_alias_correction == pytest.approx(math.lgamma(K + 1), rel=1e-12)
    assert res.log_evidence == pytest.approx(model.lower_bound_)


def test_log_alias_counts_agree_with_exact_integer_counts():
    from sklearn_vb.scoring._base import log_alias_count

    class Counted:
        def __init__(self, S):
            self.S = S

        def n_aliases(self):
            return self.S

    assert log_alias_count(Counted(math.factorial(40))) == pytest.approx(math.lgamma(41), rel=1e-14)
    with pytest.raises(ValueError, match="n_aliases"):
        log_alias_count(Counted(0))
    with pytest.raises(ValueError, match="integer"):
        log_alias_count(Counted(2.5))
    lds = LDSScoringModel.__new__(LDSScoringModel)
    lds.k = 25
    assert lds.log_n_aliases() == pytest.approx(math.log(lds.n_aliases()), rel=1e-14)
    hmm = FamilyHMMScoringModel.__new__(FamilyHMMScoringModel)
    hmm.K = 22
    assert hmm.log_n_aliases() == pytest.approx(math.log(hmm.n_aliases()), rel=1e-14)


def test_dag_alias_count_with_many_hidden_states():
    X = np.random.default_rng(1).integers(0, 2, size=(30, 2))
    m = VBDiscreteDAG(n_components=22, max_iter=2, n_init=1, random_state=0).fit(X)
    assert m.log_alias_count_ == pytest.approx(math.lgamma(23), rel=1e-12)
    res = score(m, X, "vb", alias_correction=True)
    assert res.log_alias_correction == pytest.approx(math.lgamma(23), rel=1e-12)


def test_search_with_21_states_ranks_every_candidate_corrected():
    X = _symbols(40)
    search = StructureSearch(VBHiddenMarkov(n_symbols=3, max_iter=3, n_init=1),
                             {"n_components": [19, 20, 21]}, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X)
    alias = search.results_["log_alias_correction_vb"]
    np.testing.assert_allclose(alias, [math.lgamma(20), math.lgamma(21), math.lgamma(22)])
    np.testing.assert_allclose(search.results_["score_vb"], search.results_["corrected_score_vb"])


def test_search_refuses_to_mix_raw_and_corrected_scores():
    def flaky(estimator, X, alias_correction=False, random_state=None, **fit_params):
        if alias_correction and estimator.n_components == 3:
            raise OverflowError("cannot count the aliases")
        return ScoreResult("vb", float(estimator.lower_bound_), "lower",
                           log_alias_correction=math.lgamma(estimator.n_components + 1)
                           if alias_correction else 0.0)

    X = _symbols(40)
    search = StructureSearch(VBHiddenMarkov(n_symbols=3, max_iter=3, n_init=1),
                             {"n_components": [1, 2, 3]}, scoring={"vb": flaky},
                             alias_correction=True, random_state=0)
    with pytest.raises(ValueError, match="mix raw and corrected"):
        search.fit(X)
    # ranking every candidate raw is consistent and allowed
    search.set_params(alias_correction=False).fit(X)
    np.testing.assert_array_equal(search.results_["score_vb"], search.results_["raw_score_vb"])


# ---------------------------------------------------------------- DAG categories
def test_dag_learns_string_and_pandas_categories():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 2, size=(40, 2))
    words = np.where(codes == 1, "yes", "no")
    kw = dict(max_iter=30, n_init=1, random_state=0)
    ref = VBDiscreteDAG(**kw).fit(codes)
    strings = VBDiscreteDAG(**kw).fit(words)
    assert strings.lower_bound_ == pytest.approx(ref.lower_bound_, abs=1e-10)
    assert [list(c) for c in strings.categories_] == [["no", "yes"], ["no", "yes"]]
    np.testing.assert_allclose(strings.score_samples(words), ref.score_samples(codes))
    frame = pd.DataFrame({"a": pd.Categorical(words[:, 0]), "b": words[:, 1]})
    cat = VBDiscreteDAG(**kw).fit(frame)
    assert cat.lower_bound_ == pytest.approx(ref.lower_bound_, abs=1e-10)
    Xs, _ = cat.sample(5)
    assert set(Xs.ravel()) <= {"yes", "no"}
    # a pandas categorical keeps every declared category, also one never observed
    frame3 = pd.DataFrame({"a": pd.Categorical(words[:, 0], categories=["no", "yes", "maybe"]),
                           "b": words[:, 1]})
    m3 = VBDiscreteDAG(**kw).fit(frame3)
    assert m3.cardinalities_["a"] == 3
    # missing labels (None) are marginalised; unseen labels too
    probe = np.array([["yes", None], ["yes", "perhaps"]], dtype=object)
    lone = strings.score_samples(probe)
    assert lone[0] == pytest.approx(lone[1])
    with pytest.raises(ValueError, match="holds numbers, but the model learned labels"):
        strings.score_samples(codes)


def test_dag_refuses_continuous_floats_unless_asked():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 2))
    with pytest.raises(ValueError, match="non-integral values"):
        VBDiscreteDAG(max_iter=5).fit(X)
    VBDiscreteDAG(max_iter=5, n_init=1, allow_float_categories=True).fit(np.round(X, 1))
    # integral floats are categories as before
    m = VBDiscreteDAG(max_iter=5, n_init=1).fit(rng.integers(-1, 3, size=(20, 2)).astype(float))
    np.testing.assert_array_equal(m.categories_[0], [-1.0, 0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="mixes numbers and strings"):
        VBDiscreteDAG(max_iter=5).fit(np.array([[1, "a"], ["b", "c"]], dtype=object))
    with pytest.raises(ValueError, match="declared cardinality"):
        VBDiscreteDAG(cardinalities=2, max_iter=5).fit(np.array([["a", "b"], ["b", "a"]]))


# ---------------------------------------------------------------- lengths in CV
def test_lengths_in_cross_validation_point_to_sequence_ids():
    X = _symbols(120)
    lengths = [30] * 4
    with pytest.raises(ValueError, match="sequence_ids=.*SequenceKFold"):
        GridSearchCV(VBHiddenMarkov(max_iter=3, n_init=1), {"n_components": [1, 2]}, cv=3,
                     error_score="raise").fit(X, lengths=lengths)
    with pytest.raises(ValueError, match="sequence_ids=.*SequenceKFold"):
        cross_val_score(VBHiddenMarkov(max_iter=3, n_init=1), X, cv=3, error_score="raise",
                        params={"lengths": lengths})


def test_cross_validation_scores_sequences_as_sequences_or_refuses():
    X = _symbols(180)
    lengths = [30] * 6
    ids = lengths_to_sequence_ids(lengths)
    cv = SequenceKFold(n_splits=3)
    est = VBHiddenMarkov(2, max_iter=10, n_init=1, random_state=0)
    # without routing, the test fold would be one long sequence: refused
    with pytest.raises(ValueError, match="enable_metadata_routing"):
        cross_val_score(est, X, groups=ids, cv=cv, params={"sequence_ids": ids},
                        error_score="raise")
    # with routing, each fold is scored sequence by sequence
    with sklearn.config_context(enable_metadata_routing=True):
        routed = est.set_fit_request(sequence_ids=True).set_score_request(sequence_ids=True)
        got = cross_val_score(routed, X, cv=cv, params={"sequence_ids": ids, "groups": ids})
    want = []
    for train, test in cv.split(X, groups=ids):
        m = VBHiddenMarkov(2, max_iter=10, n_init=1, random_state=0).fit(X[train], sequence_ids=ids[train])
        want.append(m.score(X[test], sequence_ids=ids[test]))
        # one long sequence gives a different number: the refusal is not cosmetic
        assert m.score(X[test], lengths=[len(test)]) != pytest.approx(want[-1], abs=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # a model fitted from lengths, or scored with explicit sequences, is unaffected
    m = VBHiddenMarkov(2, max_iter=5, n_init=1, random_state=0).fit(X, lengths=lengths)
    assert np.isfinite(m.score(X))
    Y = np.random.default_rng(0).normal(size=(60, 2))
    lds = VBLinearDynamicalSystem(n_states=1, max_iter=3, n_init=1, random_state=0)
    lds.fit(Y, sequence_ids=np.repeat([0, 1], 30))
    with pytest.raises(ValueError, match="sequence_ids"):
        lds.score(Y)
    assert np.isfinite(lds.score(Y, lengths=[60]))


# ---------------------------------------------------------------- edge of the grid
def test_structure_search_warns_at_the_edge_of_the_grid():
    rng = np.random.default_rng(4)
    X = np.concatenate([rng.normal(m, 0.1, size=(30, 1)) for m in (-6, -2, 2, 6)])
    est = VBHiddenMarkov(emission="gaussian", max_iter=50, n_init=2)
    with pytest.warns(UserWarning, match="largest value of the grid"):
        StructureSearch(est, {"n_components": [1, 2, 3]}, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        search = StructureSearch(est, {"n_components": [2, 4, 7]}, random_state=0).fit(X)
    assert search.best_params_ == {"n_components": 4}


# ---------------------------------------------------------------- non-finite input
@pytest.mark.parametrize("make, supported", [
    (lambda: VBMixtureFactorAnalysers(max_iter=2, search=False, learning_method="online"),
     "learning_method='batch'"),
])
def test_missing_values_refused_where_not_supported_say_what_is(make, supported):
    X = np.abs(np.random.default_rng(5).normal(size=(30, 2))).round()
    X[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"X (contains|has) missing values \(NaN\)") as info:
        make().fit(X)
    assert supported in str(info.value) and "HistGradientBoosting" not in str(info.value)
    X[4, 1] = np.inf
    with pytest.raises(ValueError, match="X contains infinity"):
        make().fit(X)


@pytest.mark.parametrize("make", [
    lambda: VBHiddenMarkov(emission="poisson", max_iter=2),
    lambda: VBHiddenMarkov(emission="gaussian", covariance_type="diag", max_iter=2),
    lambda: VBHiddenMarkov(emission="gaussian", covariance_type="full", max_iter=2),
    lambda: VBLinearDynamicalSystem(n_states=1, max_iter=2),
    lambda: VBLinearDynamicalSystem(n_states=1, max_iter=2, method="map"),
    lambda: VBMixtureFactorAnalysers(search=False, max_iter=2),
    lambda: VBMixtureFactorAnalysers(max_iter=2),
])
def test_missing_entries_are_marginalised_where_supported_and_infinity_still_refused(make):
    X = np.abs(np.random.default_rng(5).normal(size=(30, 2))).round()
    X[4, 1] = np.nan
    assert np.isfinite(make().fit(X).score(X))
    X[4, 1] = np.inf
    with pytest.raises(ValueError, match="X contains infinity"):
        make().fit(X)


def _vb_cases():
    from sklearn_vb import VBSigmoidBeliefNetwork
    from sklearn_vb.bdmc_models import BayesianBinaryAttributes, BayesianClustering, BayesianLowRank

    rng = np.random.default_rng(4)
    G = rng.normal(size=(40, 3))
    B = (rng.random((40, 3)) < 0.4).astype(float)
    lengths = np.array([25, 15])
    return {
        "hmm": (VBHiddenMarkov(2, n_symbols=3, max_iter=10, random_state=0), _symbols(40),
                {"lengths": lengths}),
        "lds": (VBLinearDynamicalSystem(n_states=2, max_iter=5, random_state=0), G,
                {"U": rng.normal(size=(40, 1)), "sequence_ids": np.repeat([3, 1], lengths)}),
        "mfa": (VBMixtureFactorAnalysers(n_components=2, search=False, max_iter=10, random_state=0),
                G, {}),
        "dag": (VBDiscreteDAG(n_components=2, max_iter=10, random_state=0),
                rng.integers(0, 3, size=(40, 3)), {}),
        "sbn": (VBSigmoidBeliefNetwork(n_init=1, max_iter=5, random_state=0), B, {}),
        "clustering": (BayesianClustering(n_components=2, random_state=0), G, {}),
        "low-rank": (BayesianLowRank(n_components=2, random_state=0), G, {}),
        "binary": (BayesianBinaryAttributes(n_components=2, random_state=0), G, {}),
    }


@pytest.mark.parametrize("name", ["hmm", "lds", "mfa", "dag", "sbn", "clustering", "low-rank",
                                  "binary"])
def test_vb_score_refuses_data_other_than_the_training_data(name):
    est, X, kw = _vb_cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, **kw)
    # the training data, also as a copy, a list or with the fit parameters left out
    assert score(est, X.copy(), "vb", **kw).log_evidence == est.lower_bound_
    assert score(est, X.tolist(), "vb", **kw).log_evidence == est.lower_bound_
    if "U" not in kw:
        assert score(est, X, "vb").log_evidence == est.lower_bound_
    # other valid data: one value changed, or fewer rows
    other = X.copy()
    if name == "sbn":
        other[0, 0] = 1 - X[0, 0]
    elif name in ("hmm", "dag"):
        other[0, 0] = (X[0, 0] + 1) % 3
    else:
        other[0, 0] += 0.5
    for data, fit_kw in ((other, kw), (X[:20], {k: v[:20] for k, v in kw.items()
                                                if k != "lengths"})):
        with pytest.raises(ValueError, match=r"(?s)X is not the data.*training data.*clone"):
            score(est, data, "vb", **fit_kw)
    if "lengths" in kw or "sequence_ids" in kw:
        key = "lengths" if "lengths" in kw else "sequence_ids"
        with pytest.raises(ValueError, match=f"{key} is not the {key} this"):
            score(est, X, "vb", **{**kw, key: kw[key][::-1].copy()})
    # refitting a copy on the other data is the way to its bound
    refit = clone(est).fit(other, **kw)
    assert score(refit, other, "vb", **kw).log_evidence == refit.lower_bound_


def test_vb_score_refuses_an_estimator_without_a_training_fingerprint():
    est, X, kw = _vb_cases()["mfa"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    del est._fit_data_fingerprint  # as fitted by a version that did not record one
    with pytest.raises(ValueError, match="X is not the data"):
        score(est, X, "vb")


def test_mfa_cs_far_from_the_training_data_is_accurate_or_refused():
    """The CS formulas cancel uncentred sums of squares: rows 1e5 away still give a value
    (both formulas agree within their round-off), rows 1e9 away are refused with a
    ValueError naming the round-off, not a RuntimeError from the self-check."""
    rng = np.random.default_rng(0)
    G = rng.normal(size=(30, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBMixtureFactorAnalysers(search=False, max_iter=3, random_state=0).fit(G)
        for far, ok in ((1e3, True), (1e5, True), (1e9, False), (1e30, False)):
            X = G.copy()
            X[:3] = [far, -far]
            if ok:
                assert np.isfinite(score(est, X, "cs", random_state=0).log_evidence)
            else:
                with pytest.raises(ValueError, match=r"(?s)X has rows too far.*round-off"):
                    score(est, X, "cs", random_state=0)
