"""Evidence scores of PairwiseMRF structures: the Bethe-Laplace family against reference
values and quadrature-exact evidences; the generic scorers on MRFs with exact ln Z."""

import numpy as np
import pytest
from scipy import integrate, stats

from sklearn_vb import PairwiseMRF
from sklearn_vb.mrf.inference import BPConvergenceWarning
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.mrf.scoring_model import MRFData


def rows(counts, p):
    return np.array([[int(b) for b in np.binary_repr(s, p)] for s in range(2**p)
                     for _ in range(counts[s])])


X_RM4 = rows([6, 3, 1, 2, 7, 13, 8, 10], 3)
TRIANGLE = [(0, 1), (1, 2), (0, 2)]
X_L1 = np.array([[1]] * 7 + [[0]] * 3)
X_L2 = rows([7, 3, 4, 6], 2)  # S = (10, 9, 6)
X_L2A = np.array([[1, 1]] * 9 + [[1, 0]] + [[0, 0]] * 10)  # S = (10, 9)


def tolerance_ok(est, exact, stderr):
    return abs(est - exact) <= max(0.05, 4 * stderr) and abs(est - exact) <= 0.5


@pytest.mark.parametrize("kwargs, value", [
    (dict(method="bethe_laplace", gradient="exact", covariance="exact"), -101.049984026600),
    (dict(method="bethe_laplace", gradient="exact"), -101.065812261303),
    (dict(method="bethe_laplace", gradient="bp", covariance="linear_response"), -101.080131332837),
    (dict(method="bethe_laplace"), -101.049984026600),  # the default: exact Laplace here
    (dict(method="bethe_laplace", gradient="exact", terms="map"), -100.722541910467),
    (dict(method="bethe_laplace", gradient="bp", terms="map"), -100.735040517283),
    (dict(method="bic", estimate="ml"), -105.962769689312),
    (dict(method="bic", estimate="map"), -106.236719220971),
])
def test_triangle_reference_scores(kwargs, value):
    est = PairwiseMRF(TRIANGLE).fit(X_RM4)
    r = score(est, X_RM4, **kwargs)
    assert r.log_evidence == pytest.approx(value, abs=1e-6)


def test_loopy_five_node_reference_scores():
    # a five-node loop with a chord; the reference statistics are listed in the edge order
    # (0,1),(1,2),(2,3),(3,4),(0,4),(1,3)
    ref_edges = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (1, 3)]
    S_ref = np.array([60, 15, 74, 69, 81, 3, 9, 56, 61, 54, 6.0])
    est = PairwiseMRF(ref_edges).fit(np.eye(5, dtype=int))
    order = [ref_edges.index(tuple(e)) for e in est.edges_.tolist()]
    data = MRFData(np.concatenate([S_ref[:5], S_ref[5:][order]]), 100.0)
    # the reference MAP is given to 6 decimals; ln det A moves to first order with the
    # point, so the Laplace values agree to ~3e-6 (t itself to 1e-10)
    assert scoring_model_for(est).map_fit(data).objective == pytest.approx(-272.680832275255,
                                                                          abs=1e-9)
    le = score(est, data, "bethe_laplace", gradient="exact", covariance="exact")
    assert le.log_evidence == pytest.approx(-274.553817662183, abs=1e-5)
    assert le.diagnostics["log_partition_exact"] == pytest.approx(4.275682985325, abs=1e-6)
    assert le.diagnostics["log_partition_bethe"] == pytest.approx(4.271227216010, abs=1e-6)
    assert score(est, data, "bethe_laplace", gradient="exact",
                 covariance="linear_response").log_evidence == pytest.approx(-274.570334521224, abs=1e-5)
    assert score(est, data, "bethe_laplace").log_evidence == pytest.approx(le.log_evidence, abs=1e-9)
    bp = score(est, data, "bethe_laplace", gradient="bp", covariance="linear_response")
    assert bp.log_evidence == pytest.approx(-274.054184334326, abs=1e-5)
    d = bp.diagnostics
    assert d["bp_converged"] and not d["lr_not_pd"] and d["covariance_term_included"]
    assert set(d["terms"]) == {"T1", "T2", "T3", "T4", "T5", "T6"}
    assert sum(d["terms"].values()) == pytest.approx(bp.log_evidence, abs=1e-9)
    assert score(est, data, "bic", estimate="ml").log_evidence == pytest.approx(
        -283.533808528412, abs=1e-6)
    assert score(est, data, "bic", estimate="map").log_evidence == pytest.approx(
        -284.429527615902, abs=1e-6)
    noc = score(est, data, "bethe_laplace", gradient="bp", covariance="none")
    assert noc.log_evidence == pytest.approx(bp.log_evidence - bp.diagnostics["terms"]["T6"], abs=1e-9)


def l1_exact():
    def f(t):
        return stats.norm.pdf(t) * np.exp(7 * t - 10 * np.logaddexp(0, t) + 6.94)
    return np.log(integrate.quad(f, -12, 12, epsabs=1e-14, epsrel=1e-13)[0]) - 6.94


@pytest.mark.parametrize("structure, X, exact, laplace", [
    (None, X_L1, -6.939176128227569, -6.951227733494181),
    (None, X_L2A, -29.414114018260943, -29.431333149721848),
    ([(0, 1)], X_L2, -29.501268826850186, -29.529696634739963),
])
def test_quadrature_oracles_laplace_and_ais(structure, X, exact, laplace):
    if X is X_L1:
        assert l1_exact() == pytest.approx(exact, abs=1e-9)
    est = PairwiseMRF(structure).fit(X)
    le = score(est, X, "bethe_laplace", gradient="exact", covariance="exact")
    assert le.log_evidence == pytest.approx(laplace, abs=1e-8)
    # on forests the BP variant is the exact Laplace approximation
    assert score(est, X, "bethe_laplace").log_evidence == pytest.approx(laplace, abs=1e-8)
    assert score(est, X, "laplace").log_evidence == pytest.approx(laplace, abs=1e-5)
    ais = score(est, X, "ais", n_temperatures=1000, n_chains=16, random_state=0)
    assert tolerance_ok(ais.log_evidence, exact, ais.stderr)
    imp = score(est, X, "is", random_state=0)
    assert tolerance_ok(imp.log_evidence, exact, imp.stderr)


def test_l1_and_l2_baselines():
    est = PairwiseMRF().fit(X_L1)
    assert est.coef_[0] == pytest.approx(0.582825971698, abs=1e-9)
    assert est.objective_ == pytest.approx(-7.273332052027, abs=1e-9)
    # the package's "map" score is the log-likelihood at the MAP (no prior term)
    m = score(est, X_L1, "map")
    assert m.log_evidence + scoring_model_for(est).log_prior({"coef": est.coef_[None]})[0] == (
        pytest.approx(-7.273332052027, abs=1e-9))
    assert score(est, X_L1, "bic", estimate="ml").log_evidence == pytest.approx(-7.259935567046, abs=1e-6)
    assert score(est, X_L1, "bic", estimate="map").log_evidence == pytest.approx(-7.335843008676, abs=1e-9)
    e2 = PairwiseMRF([(0, 1)]).fit(X_L2)
    assert e2.objective_ == pytest.approx(-30.018230683683, abs=1e-9)
    assert score(e2, X_L2, "bic", estimate="ml").log_evidence == pytest.approx(-31.195301712171, abs=1e-6)
    assert score(e2, X_L2, "bic", estimate="map").log_evidence == pytest.approx(-31.509509460759, abs=1e-9)


def test_is_and_ais_on_triangle_data():
    est = PairwiseMRF(TRIANGLE).fit(X_RM4)
    imp = score(est, X_RM4, "is", random_state=0)
    assert tolerance_ok(imp.log_evidence, -101.0097, imp.stderr)
    ais = score(est, X_RM4, "ais", n_temperatures=1000, n_chains=16, random_state=1)
    assert tolerance_ok(ais.log_evidence, -101.0097, ais.stderr)


def test_reverse_ais_and_bdmc_bracket_a_simulated_evidence():
    # a prior draw that simulated the data is an exact posterior draw
    rng = np.random.default_rng(0)
    coef = rng.standard_normal(3)
    est = PairwiseMRF([(0, 1)]).fit(X_L2)
    model = scoring_model_for(est)
    X = model.simulate({"coef": coef[None]}, 30, rng)
    est = PairwiseMRF([(0, 1)]).fit(X)
    exact = score(est, X, "is", random_state=0)
    ex = {"coef": np.repeat(coef[None], 8, axis=0)}
    r = score(est, X, "rais", n_temperatures=300, n_chains=8, exact_posterior_samples=ex,
              random_state=0)
    assert r.log_evidence >= exact.log_evidence - 0.3
    b = score(est, X, "bdmc", n_temperatures=300, n_chains=8, exact_posterior_samples=ex,
              random_state=0)
    lo, hi = b.interval
    assert lo - 0.3 <= exact.log_evidence <= hi + 0.3


def test_spin_glass_bp_failure_is_reported():
    X = np.array([[0, 1, 1, 0, 1], [1, 0, 0, 1, 0], [1, 1, 0, 0, 1]] * 4)
    est = PairwiseMRF("complete").fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    # evaluate at the frustrated couplings: replace the fitted point by them
    coef = np.array([-4, 4, 4, 0, 4, 4, 4, 4, -4, -4, -4, -4, -4, -4, 4.0])
    model._cache[(id(data), "map", "bp", "pmm")] = (data, _fake_result(model, coef))
    with pytest.warns(BPConvergenceWarning):
        r = score(model, data, "bethe_laplace", gradient="bp", covariance="linear_response")
    assert np.isnan(r.log_evidence) and r.diagnostics["bp_converged"] is False
    assert np.isfinite(score(model, data, "bethe_laplace", gradient="exact",
                             covariance="exact").log_evidence)


def _fake_result(model, coef):
    class R:
        pass
    r = R()
    r.coef, r.n_iter, r.n_fallbacks, r.converged = coef, 0, 0, True
    r.engine = model.bp_engine(warn=False)
    return r


def test_covariance_auto_drops_the_term_when_the_bp_point_is_biased():
    rng = np.random.default_rng(2)
    from sklearn_vb.datasets import make_boltzmann_machine, sample_mrf
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (1, 3)]
    coef = make_boltzmann_machine(edges, 5, d=1.5, random_state=3)
    X = sample_mrf(coef, edges, 5, 20000, random_state=rng)
    est = PairwiseMRF(edges).fit(X)
    with pytest.warns(UserWarning, match="standard deviations"):
        r = score(est, X, "bethe_laplace", gradient="bp", covariance="auto")
    assert r.diagnostics["bp_bias_sd"] > 1 and not r.diagnostics["covariance_term_included"]
    small = score(est, X[:30], "bethe_laplace", gradient="bp", covariance="auto")
    assert small.diagnostics["covariance_term_included"]


def test_map_fit_start_changes_cost_not_optimum():
    # the scorer starts Newton from the estimator's own MAP when it is one: the optimum
    # of the concave objective is the same from every start, and from the fitted
    # weights Newton only confirms it
    est = PairwiseMRF(TRIANGLE).fit(X_RM4)
    model = scoring_model_for(est)
    data = model.prepare_data(X_RM4)
    fits = {init: model.map_fit(data, init=init) for init in ("fitted", "pmm", "zeros")}
    for init in ("pmm", "zeros"):
        np.testing.assert_allclose(fits["fitted"].coef, fits[init].coef, rtol=0, atol=1e-9)
        assert fits["fitted"].objective == pytest.approx(fits[init].objective, abs=1e-9)
    assert fits["fitted"].n_iter < fits["pmm"].n_iter
    np.testing.assert_allclose(fits["fitted"].coef, est.coef_, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="init"):
        model.map_fit(data, init="warm")
