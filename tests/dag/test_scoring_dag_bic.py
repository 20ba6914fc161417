"""The "bic" score of a discrete DAG is the textbook BIC at the maximum-likelihood tables;
"bic_map" keeps Beal's BIC at the MAP tables."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.scoring import score

# a small fully observed network: a -> b, a -> c, b -> c, d isolated (cardinalities 2, 3, 2, 3)
STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"], "d": []}
CARDS = {"a": 2, "b": 3, "c": 2, "d": 3}
NAMES = list(STRUCTURE)


def _network_data(n, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < 0.3).astype(int)
    pb = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])[a]
    b = (rng.random(n)[:, None] > np.cumsum(pb, axis=1)).sum(axis=1)
    pc = np.array([[0.9, 0.5, 0.2], [0.4, 0.1, 0.05]])[a, b]
    c = (rng.random(n) > pc).astype(int)
    d = rng.integers(0, 3, n)
    d[:5] = 0  # at least one row of every table exercised; some (a, b) cells stay rare
    return np.column_stack([a, b, c, d])


def _textbook_bic(X):
    """sum_j sum_{l,k} N_jlk ln(N_jlk / N_jl) - (d/2) ln n, by counting, d = sum_j (r_j - 1) q_j."""
    n = X.shape[0]
    loglik, d = 0.0, 0
    col = {name: i for i, name in enumerate(NAMES)}
    for name, parents in STRUCTURE.items():
        r = CARDS[name]
        q = int(np.prod([CARDS[p] for p in parents])) if parents else 1
        d += (r - 1) * q
        keys = [tuple(row) for row in X[:, [col[p] for p in parents]]]
        child = X[:, col[name]]
        for cfg in set(keys):
            rows = np.array([k == cfg for k in keys])
            n_row = rows.sum()
            for k in range(r):
                n_k = np.sum(child[rows] == k)
                if n_k:
                    loglik += n_k * np.log(n_k / n_row)
    return loglik - 0.5 * d * np.log(n), d


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return VBDiscreteDAG(structure=STRUCTURE, cardinalities=CARDS, random_state=0,
                             **kw).fit(X)


@pytest.mark.parametrize("method", ["vb", "map"])
def test_bic_of_a_fully_observed_dag_is_the_textbook_bic(method):
    X = _network_data(150)
    expected, d = _textbook_bic(X)
    est = _fit(X, method=method)
    r = score(est, X, "bic")
    assert r.diagnostics["d"] == d == 1 + 2 * 2 + 1 * 6 + 2
    assert r.log_evidence == pytest.approx(expected, rel=1e-12, abs=1e-9)
    # the estimate of the fit (MAP basis, prior) does not enter the textbook BIC
    for basis in ("softmax", "natural"):
        other = _fit(X, method="map", map_basis=basis)
        assert score(other, X, "bic").log_evidence == pytest.approx(expected, rel=1e-12, abs=1e-9)


def test_bic_map_is_the_bic_at_the_smoothed_tables():
    X = _network_data(150)
    expected, d = _textbook_bic(X)
    est = _fit(X)
    ml = score(est, X, "bic")
    smoothed = score(est, X, "bic_map")
    # add-one smoothing (softmax basis, uniform prior): theta = (N + 1) / (N_row + r)
    col = {name: i for i, name in enumerate(NAMES)}
    loglik = 0.0
    for name, parents in STRUCTURE.items():
        r = CARDS[name]
        for row in X:
            cfg = tuple(row[[col[p] for p in parents]])
            same = np.all(X[:, [col[p] for p in parents]] == cfg, axis=1) if parents else \
                np.ones(len(X), bool)
            n_k = np.sum(X[same, col[name]] == row[col[name]])
            loglik += np.log((n_k + 1) / (same.sum() + r))
    assert smoothed.log_evidence == pytest.approx(loglik - 0.5 * d * np.log(len(X)), rel=1e-12)
    assert smoothed.log_evidence < ml.log_evidence - 1.0
    # the natural basis under the uniform prior is the ML point: BIC-MAP = BIC there
    assert score(est, X, "bic_map", basis="natural").log_evidence == pytest.approx(
        ml.log_evidence, rel=1e-12)


def test_bic_with_a_hidden_node_is_at_the_ml_em_point():
    # one binary hidden parent of three observed ternary columns: "bic" is l(theta_ML) -
    # (d/2) ln n at the best EM optimum, which is at least the likelihood at the MAP
    rng = np.random.default_rng(1)
    z = rng.integers(0, 2, 200)
    X = np.where(rng.random((200, 3)) < 0.8, np.where(z[:, None] == 1, 2, 0),
                 rng.integers(0, 3, (200, 3)))
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=2, random_state=0).fit(X)
    ml = score(est, X, "bic", random_state=0)
    mp = score(est, X, "bic_map", random_state=0)
    ml_fit = VBDiscreteDAG(n_components=2, cardinalities=3, method="ml", n_init=5,
                           tol=1e-10, random_state=0).fit(X)
    assert ml.diagnostics["loglik"] == pytest.approx(ml_fit.log_likelihood_, abs=1e-4)
    assert ml.diagnostics["loglik"] > mp.diagnostics["loglik"]
    assert ml.log_evidence == pytest.approx(-0.5 * ml_fit.bic(X), abs=1e-4)


def test_bic_equals_pgmpy_bic_score():
    pd = pytest.importorskip("pandas")
    pgmpy_estimators = pytest.importorskip("pgmpy.estimators")
    pgmpy_models = pytest.importorskip("pgmpy.models")
    X = _network_data(150)
    est = _fit(X)
    ours = score(est, X, "bic").log_evidence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = pd.DataFrame(X, columns=NAMES)
        model_cls = getattr(pgmpy_models, "DiscreteBayesianNetwork", None) or \
            pgmpy_models.BayesianNetwork
        model = model_cls([(p, c) for c, ps in STRUCTURE.items() for p in ps])
        model.add_nodes_from(NAMES)
        bic_cls = getattr(pgmpy_estimators, "BIC", None) or pgmpy_estimators.BicScore
        state_names = {name: list(range(CARDS[name])) for name in NAMES}
        theirs = bic_cls(frame, state_names=state_names).score(model)
    assert ours == pytest.approx(theirs, rel=1e-10)
