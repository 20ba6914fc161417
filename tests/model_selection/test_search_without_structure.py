"""The edge searches on a categorical table without a given structure.

``DAGStructureSearch(VBDiscreteDAG())`` takes its nodes from the columns of ``X`` and
searches the edges between them; ``PairwiseMRF(n_states=None)``, around which
``MRFStructureSearch`` searches, learns integer categories and refuses continuous values
(each distinct float would otherwise be a state).
"""

import numpy as np
import pytest

from sklearn_vb import PairwiseMRF, VBDiscreteDAG
from sklearn_vb.model_selection import DAGStructureSearch, MRFStructureSearch


def _table(n, seed, flip=0.1):
    """Four ternary columns: x1 copies x0 except in a fraction ``flip`` of the rows
    (drawn uniformly there), x2 and x3 independent and uniform."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, size=n)
    b = np.where(rng.random(n) < flip, rng.integers(0, 3, size=n), a)
    return np.column_stack([a, b, rng.integers(0, 3, size=n), rng.integers(0, 3, size=n)])


def _skeleton(structure):
    return {frozenset((p, c)) for c, ps in structure.items() for p in ps}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_dag_search_takes_its_nodes_from_the_columns(seed):
    X = _table(400, seed)
    search = DAGStructureSearch(VBDiscreteDAG(), random_state=0).fit(X)
    assert list(search.best_structure_) == ["x0", "x1", "x2", "x3"]
    # the dependent pair becomes an edge (either direction)
    assert frozenset(("x0", "x1")) in _skeleton(search.best_structure_)
    best = search.best_estimator_
    assert best.n_features_in_ == 4 and not any(best.structure_.hidden)
    assert best.cardinalities_ == {"x0": 3, "x1": 3, "x2": 3, "x3": 3}
    # about 0.8 nats of mutual information per row: hundreds of nats over no edges
    empty = search.path_[0]
    assert empty["move"] is None and _skeleton(empty["structure"]) == set()
    assert search.best_score_ - empty["score"] > 100.0
    # and at least the evidence of the graph that drew the data (on one sample a spurious
    # family may score higher still)
    truth = VBDiscreteDAG({"x0": [], "x1": ["x0"], "x2": [], "x3": []}).fit(X)
    assert search.best_score_ >= truth.lower_bound_ - 1e-6
    np.testing.assert_allclose(search.score_samples(X[:7]), best.score_samples(X[:7]))


def test_default_dag_search_names_its_nodes_after_the_dataframe_columns():
    pd = pytest.importorskip("pandas")
    X = _table(300, 0)
    labels = np.array(["low", "mid", "high"], dtype=object)
    df = pd.DataFrame({"smoker": labels[X[:, 0]], "cough": labels[X[:, 1]],
                       "age": X[:, 2], "noise": X[:, 3]})
    search = DAGStructureSearch(VBDiscreteDAG(), random_state=0).fit(df)
    assert list(search.best_structure_) == ["smoker", "cough", "age", "noise"]
    assert _skeleton(search.best_structure_) == {frozenset(("smoker", "cough"))}
    assert list(search.best_estimator_.feature_names_in_) == list(df.columns)


def test_default_dag_search_uses_the_estimators_cardinalities():
    X = _table(200, 1)
    search = DAGStructureSearch(VBDiscreteDAG(cardinalities=4), random_state=0).fit(X)
    assert set(search.best_estimator_.cardinalities_.values()) == {4}


def test_dag_search_predicts_only_with_a_hidden_node():
    """predict / predict_proba of VBDiscreteDAG predict its first hidden node by
    default; the search offers them only when the selected structure has one."""
    X = _table(200, 0)
    search = DAGStructureSearch(VBDiscreteDAG(), random_state=0).fit(X)
    assert not hasattr(search, "predict") and not hasattr(search, "predict_proba")
    with pytest.raises(AttributeError) as info:
        search.predict(X)
    assert "hidden node" in str(info.value.__cause__) and "node=" in str(info.value.__cause__)
    # an observed node is still predicted from the others by the best estimator
    proba = search.best_estimator_.predict_proba(X[:5], node="x1")
    assert proba.shape == (5, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)

    latent = {"h": [], "x0": ["h"], "x1": ["h"], "x2": [], "x3": []}
    est = VBDiscreteDAG(latent, cardinalities={"h": 2}, hidden="h", n_init=1, random_state=0)
    search = DAGStructureSearch(est, moves=("remove",), random_state=0).fit(X)
    assert search.predict_proba(X[:5]).shape == (5, 2)
    np.testing.assert_array_equal(search.predict(X[:5]), search.best_estimator_.predict(X[:5]))


def test_mrf_with_learned_categories_refuses_continuous_values():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    with pytest.raises(ValueError, match=r"X: column 0 holds non-integral values"):
        PairwiseMRF(n_states=None).fit(X)
    with pytest.raises(ValueError, match=r"\bX\b.*non-integral"):
        MRFStructureSearch(PairwiseMRF(n_states=None)).fit(X)
    codes = np.round(X)  # integer codes, negative ones among them, as floats
    mrf = PairwiseMRF(n_states=None).fit(codes)
    assert [c.tolist() for c in mrf.categories_] == [np.unique(codes[:, j]).tolist()
                                                     for j in range(3)]
    np.testing.assert_allclose(PairwiseMRF(n_states=None).fit(codes.astype(int)).coef_,
                               mrf.coef_)


def test_default_mrf_search_on_learned_categories_finds_the_dependent_pair():
    X = _table(300, 0)[:, :3] - 1  # categories -1, 0, 1
    search = MRFStructureSearch(PairwiseMRF(n_states=None), random_state=0).fit(X)
    assert search.best_structure_ == [(0, 1)]
    assert search.best_estimator_.n_states_.tolist() == [3, 3, 3]
