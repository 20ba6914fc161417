"""Boltzmann machines with hidden units: the visible likelihood, the MAP fit and the
evidence scores against enumeration, quadrature and finite differences."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import BoltzmannMachine
from sklearn_vb.boltzmann._inference import VisibleLikelihood
from sklearn_vb.mrf.inference import BPEngine, ExactEngine
from sklearn_vb.mrf.layout import MRFLayout
from sklearn_vb.boltzmann import boltzmann_edges
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._boltzmann import visible_vb_bound
from sklearn_vb.scoring._laplace import fd_gradient


def _layout(p, H, connectivity):
    return MRFLayout(np.full(p + H, 2), boltzmann_edges(p, H, connectivity))


def _data(rng, n, p):
    X = (rng.random((n, p)) < 0.4).astype(np.int64)
    X[:, 1] = np.where(rng.random(n) < 0.8, X[:, 0], X[:, 1])
    return X


@pytest.mark.parametrize("connectivity", ["restricted", "full", [(0, 1), (1, 3), (2, 4)]])
def test_visible_likelihood_equals_enumeration(connectivity):
    rng = np.random.default_rng(0)
    p, H = 3, 2
    L = _layout(p, H, connectivity)
    coef = rng.normal(size=L.n_features)
    X = _data(rng, 40, p)
    pats, inv = np.unique(X, axis=0, return_inverse=True)
    v = VisibleLikelihood(L, p, pats, np.bincount(inv.ravel()).astype(float), ExactEngine(L))
    # brute force: sum the joint probabilities over the hidden states of each row
    eng = ExactEngine(L)
    prob, _ = eng.probabilities(coef)
    vis = eng.states[:, :p]
    marg = {tuple(r): prob[(vis == r).all(axis=1)].sum() for r in np.unique(vis, axis=0)}
    expected = sum(np.log(marg[tuple(r)]) for r in X)
    assert v.log_likelihood(coef)[0] == pytest.approx(expected, abs=1e-10)
    # gradient and observed information by finite differences
    ev = v.evaluate(coef, hessian=True)
    g_fd = fd_gradient(v.log_likelihood, coef, rel_step=1e-6)
    np.testing.assert_allclose(ev.grad, g_fd, atol=1e-6)
    H_fd = np.stack([fd_gradient(lambda c: np.array([v.evaluate(ci).grad[j] for ci in c]),
                                 coef, rel_step=1e-6) for j in range(L.n_features)])
    np.testing.assert_allclose(-ev.information, H_fd, atol=1e-5)
    # the hidden entropy and the completed statistics: l = lambda^T S-bar - N ln Z + sum H
    assert ev.loglik == pytest.approx(coef @ ev.clamped_stats - v.N * ev.log_partition
                                      + ev.hidden_entropy, abs=1e-10)


def test_bp_on_a_tree_is_exact():
    # an RBM with one hidden unit is a star: BP is exact, so is the linear response
    rng = np.random.default_rng(1)
    L = _layout(4, 1, "restricted")
    coef = rng.normal(size=L.n_features)
    X = _data(rng, 30, 4)
    pats, inv = np.unique(X, axis=0, return_inverse=True)
    cnt = np.bincount(inv.ravel()).astype(float)
    ex = VisibleLikelihood(L, 4, pats, cnt, ExactEngine(L)).evaluate(coef, hessian=True)
    bp = VisibleLikelihood(L, 4, pats, cnt, BPEngine(L)).evaluate(coef, hessian=True)
    assert bp.loglik == pytest.approx(ex.loglik, abs=1e-9)
    np.testing.assert_allclose(bp.information, ex.information, atol=1e-8)


def test_fit_score_sample_transform():
    rng = np.random.default_rng(2)
    X = _data(rng, 80, 4).astype(float)
    bm = BoltzmannMachine(2, random_state=0, n_init=3).fit(X)
    assert bm.coef_.shape == (4 + 2 + 8,) and bm.converged_
    assert list(bm.feature_names_[:6]) == ["x0", "x1", "x2", "x3", "h0", "h1"]
    assert bm.feature_names_[6] == "x0*h0"
    assert bm.objective_ >= bm.start_objectives_.max() - 1e-9
    model = scoring_model_for(bm)
    d = model.prepare_data(X)
    val, grad = model.log_joint_gradient({"coef": bm.coef_[None]}, d)
    assert np.max(np.abs(grad["coef"])) < 1e-6 and val == pytest.approx(bm.objective_)
    # score_samples sums to the visible likelihood; probabilities of all patterns sum to 1
    assert bm.score_samples(X).sum() == pytest.approx(bm.loglik_, abs=1e-9)
    allx = np.indices((2,) * 4).reshape(4, -1).T.astype(float)
    assert np.exp(bm.score_samples(allx)).sum() == pytest.approx(1.0, abs=1e-12)
    T = bm.transform(X[:5])
    assert T.shape == (5, 2) and np.all((T >= 0) & (T <= 1))
    v, h = bm.sample(4000, random_state=1, return_hidden=True)
    assert v.shape == (4000, 4) and h.shape == (4000, 2)
    freq = (v[:, None, :] == allx[None]).all(-1).mean(0)
    assert np.max(np.abs(freq - np.exp(bm.score_samples(allx)))) < 0.03
    g = bm.sample(2000, method="gibbs", random_state=1, n_burnin=200, thin=2)
    assert abs(g.mean(0) - v.mean(0)).max() < 0.06
    # reproducible, input unchanged
    X0 = X.copy()
    bm2 = BoltzmannMachine(2, random_state=0, n_init=3).fit(X)
    np.testing.assert_array_equal(bm2.coef_, bm.coef_)
    np.testing.assert_array_equal(X, X0)
    assert bm.log_n_aliases() == pytest.approx(np.log(2))


def test_zero_hidden_units_is_the_independent_model():
    rng = np.random.default_rng(3)
    X = _data(rng, 50, 3).astype(float)
    bm = BoltzmannMachine(0).fit(X)
    assert bm.coef_.shape == (3,)
    # MAP of independent Bernoullis with a N(0, 1) prior on the logits: gradient zero
    m = X.mean(0)
    grad = 50 * (m - 1 / (1 + np.exp(-bm.coef_))) - bm.coef_
    assert np.max(np.abs(grad)) < 1e-8


def test_bad_input():
    X = np.array([[0, 1], [1, 0], [1, 1.0]])
    with pytest.raises(ValueError, match="binary"):
        BoltzmannMachine(1).fit(X + 0.5)
    with pytest.raises(ValueError, match="connectivity"):
        BoltzmannMachine(1, connectivity="dense").fit(X)
    with pytest.raises(ValueError, match="connectivity"):
        BoltzmannMachine(1, connectivity=[(0, 3)]).fit(X)
    with pytest.raises(ValueError, match="max_hidden"):
        BoltzmannMachine(3, max_hidden=2).fit(X)
    with pytest.raises(ValueError, match="exact"):
        BoltzmannMachine(1, inference="exact", max_exact_states=4).fit(X)


@pytest.fixture(scope="module")
def tiny():
    """One visible and one hidden unit (3 parameters): the evidence by quadrature."""
    rng = np.random.default_rng(1)
    X = (rng.random((30, 1)) < 0.3).astype(float)
    bm = BoltzmannMachine(1, random_state=0).fit(X)
    model = scoring_model_for(bm)
    d = model.prepare_data(X)
    g = np.linspace(-6.5, 6.5, 91)
    grid = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    lj = model.log_prior({"coef": grid}) + model.log_likelihood({"coef": grid}, d)
    return bm, X, float(logsumexp(lj) + 3 * np.log(g[1] - g[0]))


def test_scores_against_quadrature(tiny):
    bm, X, exact = tiny
    lap = score(bm, X, "hidden_laplace")
    assert abs(lap.log_evidence - exact) < 0.02
    # the generic Laplace scorer (finite differences of the exact gradient) agrees
    assert score(bm, X, "laplace").log_evidence == pytest.approx(lap.log_evidence, abs=1e-5)
    cs = score(bm, X, "cs")
    assert cs.bound == "approx" and abs(cs.log_evidence - exact) < 2.0
    vb = score(bm, X, "hidden_vb")
    assert vb.bound == "lower" and exact - 2.0 < vb.log_evidence < exact
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ais = score(bm, X, "ais", n_temperatures=500, n_chains=8, n_runs=8, random_state=0)
    assert abs(ais.log_evidence - exact) < 4 * ais.stderr + 0.05


def test_vb_bound_gradient_and_bound_at_any_point(tiny):
    bm, X, exact = tiny
    model = scoring_model_for(bm)
    d = model.prepare_data(X)
    v = model.visible_likelihood(d, "exact")
    F = 3
    val, m, Sigma, c, evaluate = visible_vb_bound(v, v.engine.Phi, model.precision, bm.coef_,
                                                  0.1 * np.eye(F), max_iter=5)
    rng = np.random.default_rng(0)
    for _ in range(5):
        z = rng.normal(size=3 * F + F * (F - 1) // 2) * 0.5
        b, g = evaluate(z)
        assert b < exact
        h = 1e-6
        fd = np.array([(evaluate(z + h * e)[0] - evaluate(z - h * e)[0]) / (2 * h)
                       for e in np.eye(z.size)])
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)


def test_cs_is_completed_laplace_plus_entropy():
    rng = np.random.default_rng(4)
    X = _data(rng, 60, 3).astype(float)
    bm = BoltzmannMachine(1, random_state=0, n_init=2).fit(X)
    model = scoring_model_for(bm)
    d = model.prepare_data(X)
    r = score(bm, X, "cs")
    e = model.e_step({"coef": bm.coef_[None]}, d)
    assert r.log_evidence == pytest.approx(model.log_complete_evidence(e.stats) + e.entropy,
                                           abs=1e-6)
    # hidden_laplace with terms: map = l + ln p at the MAP; bic = l - F/2 ln N
    m = score(bm, X, "hidden_laplace", terms="map").log_evidence
    assert m == pytest.approx(bm.objective_, abs=1e-8)
    b = score(bm, X, "hidden_laplace", terms="bic").log_evidence
    assert b == pytest.approx(bm.loglik_ - 0.5 * bm.n_parameters_ * np.log(60), abs=1e-6)
