"""The point-estimate EM shared by the scorers of one fitted estimator: scores with the
cache equal scores without it (also those that draw from the generator after the EM),
one EM serves BIC-MAP, BICp, MAP, CS and Laplace, and a refit, other data, another seed or
an unseeded call runs the EM again."""

import functools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.scoring import score
from sklearn_vb.scoring._point_cache import clear_point_cache, shared_fit_point
from sklearn_vb._core.evidence.dirichlet import DirichletBlocksModel
from sklearn_vb.hmm._scoring_dirichlet import DirichletCategoricalHMM


def _data(seed=0):
    r = np.random.default_rng(seed)
    K, V = 2, 4
    A = 0.7 * np.eye(K) + 0.3 * r.dirichlet(np.ones(K), size=K)
    B = r.dirichlet(np.full(V, 0.5), size=K)
    X, _, L = make_hmm_sequences(np.ones(K) / K, A, B, [25, 15], random_state=seed)
    return X, L


@pytest.fixture
def em_calls(monkeypatch):
    calls = []
    original = DirichletBlocksModel.fit_point

    @functools.wraps(original)
    def counted(self, X, **kwargs):
        calls.append(kwargs)
        return original(self, X, **kwargs)

    monkeypatch.setattr(DirichletBlocksModel, "fit_point", counted)
    clear_point_cache()
    yield calls
    clear_point_cache()


# every score at the MAP point ("bic" is at the ML point, a second EM)
METHODS = [("bic_map", {}), ("bicp", {}), ("map", {}), ("cs", {}),
           ("bic_map", {"dimension": "effective", "R": 12}), ("cs_dagger", {"R": 12}),
           ("laplace", {})]


def test_scores_with_the_shared_em_equal_scores_without_it(em_calls):
    X, L = _data()
    est = VBHiddenMarkov(2, n_symbols=4, random_state=3).fit(X, lengths=L)
    alone = []
    for method, opts in METHODS:
        clear_point_cache()
        alone.append(score(est, X, method, lengths=L, **opts).log_evidence)
    assert len(em_calls) == len(METHODS)
    clear_point_cache()
    del em_calls[:]
    shared = [score(est, X, method, lengths=L, **opts).log_evidence for method, opts in METHODS]
    # one EM for all (the effective dimensions draw from the generator after it: equal
    # values show the generator was left where the EM leaves it)
    assert len(em_calls) == 1
    assert shared == alone


def test_a_refit_other_data_or_another_seed_runs_the_em_again(em_calls):
    X, L = _data()
    est = VBHiddenMarkov(2, n_symbols=4, random_state=3).fit(X, lengths=L)
    first = score(est, X, "bic", lengths=L).log_evidence
    score(est, X, "bic", lengths=L)
    assert len(em_calls) == 1
    score(est, X, "bic", lengths=L, random_state=4)  # another seed
    assert len(em_calls) == 2
    score(est, X[:30], "bic", lengths=[30])  # other data
    assert len(em_calls) == 3
    X2, L2 = _data(1)
    est.fit(X2, lengths=L2)  # refitted in place: same object, new fitted state
    assert score(est, X, "bic", lengths=L).log_evidence != first
    assert len(em_calls) == 4
    est.set_params(random_state=5)  # a new default seed
    score(est, X, "bic", lengths=L)
    assert len(em_calls) == 5


def test_unseeded_scores_are_not_remembered(em_calls):
    X, L = _data()
    est = VBHiddenMarkov(2, n_symbols=4, random_state=None).fit(X, lengths=L)
    score(est, X, "bic", lengths=L)
    score(est, X, "bic", lengths=L)
    assert len(em_calls) == 2
    rng = np.random.default_rng(0)  # a Generator passed in is advanced by each call
    score(est, X, "bic", lengths=L, random_state=rng)
    score(est, X, "bic", lengths=L, random_state=rng)
    assert len(em_calls) == 4


class _SlowModel:
    """A stand-in whose EM warns and draws from the generator."""

    def __init__(self):
        self.calls = 0

    def fit_point(self, data, kind="map", rng=None, n_init=3):
        self.calls += 1
        warnings.warn("EM did not converge", ConvergenceWarning)
        return {"x": np.array([rng.standard_normal()])}


class _Est:
    random_state = 0

    def __init__(self):
        self.coef_ = np.arange(3.0)

    def get_params(self, deep=True):
        return {"random_state": self.random_state}


def test_a_remembered_em_replays_its_warnings_and_generator_state():
    clear_point_cache()
    model, est, data = _SlowModel(), _Est(), np.arange(4.0)
    rng1, rng2 = np.random.default_rng(7), np.random.default_rng(7)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        a = shared_fit_point(model, data, est, rng=rng1)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        b = shared_fit_point(model, data, est, rng=rng2)
    assert model.calls == 1
    assert a["x"][0] == b["x"][0]
    assert rng1.standard_normal() == rng2.standard_normal()
    b["x"][0] = 99.0  # the caller's copy: the remembered point is untouched
    rng3 = np.random.default_rng(7)
    with pytest.warns(ConvergenceWarning):
        assert shared_fit_point(model, data, est, rng=rng3)["x"][0] == a["x"][0]
    with pytest.warns(ConvergenceWarning):  # other keyword arguments: another EM
        shared_fit_point(model, data, est, rng=np.random.default_rng(7), n_init=5)
    assert model.calls == 2
    clear_point_cache()


def test_a_scoring_model_scored_directly_is_not_remembered(em_calls):
    # its configuration (priors, sizes) is not in fitted attributes a fingerprint sees
    X, L = _data()
    model = DirichletCategoricalHMM(2, 4)
    a = score(model, X, "bic", lengths=L, random_state=0).log_evidence
    model.prior_alpha["B"] = np.full((2, 4), 5.0)
    b = score(model, X, "bic", lengths=L, random_state=0).log_evidence
    assert len(em_calls) == 2 and a != b
