"""VBSigmoidBeliefNetwork's prior mean, fixed biases and spin-coded parents against
exact oracles (grid quadrature with enumeration of the hidden parent, penalised
logistic regression)."""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit, logit, logsumexp
from sklearn.linear_model import LogisticRegression

from sklearn_vb import VBSigmoidBeliefNetwork
from sklearn_vb.scoring import scoring_model_for

STRUCTURE = {"y": ["h", "x"], "h": [], "x": []}


def bimodal_data(n=30, seed=0, spin=True):
    rng = np.random.default_rng(seed)
    h = rng.random(n) < 0.6
    x = rng.random(n) < 0.5
    code = (lambda v: 2.0 * v - 1.0) if spin else (lambda v: v.astype(float))
    y = rng.random(n) < expit(2.0 + 2.0 * code(h) - code(x))
    return pd.DataFrame({"x": x, "y": y}).astype(float)


def exact_log_posterior(A, B, X, prior_mean, v, spin):
    """ln p(w) + ln p(X | w) of the child's two weights on a grid, the hidden parent
    enumerated per case (numpy only)."""
    code = (lambda v: 2.0 * v - 1.0) if spin else (lambda v: v)
    out = -0.5 * ((A - prior_mean) ** 2 + (B - prior_mean) ** 2) / v - np.log(2 * np.pi * v)
    for xv, yv in zip(X["x"], X["y"]):
        s = 2 * yv - 1
        terms = [np.log(ph) - np.logaddexp(0.0, -s * (2.0 + A * code(hv) + B * code(xv)))
                 for hv, ph in ((1.0, 0.6), (0.0, 0.4))]
        out = out + np.logaddexp(*terms) + np.log(0.5)  # x's own factor, p(x) = 1/2
    return out


@pytest.mark.parametrize("spin", [False, True])
def test_bound_below_exact_evidence_with_prior_mean_and_fixed_biases(spin):
    X = bimodal_data(30, 1, spin)
    v, mu = 10.0, 3.0
    est = VBSigmoidBeliefNetwork(STRUCTURE, hidden=["h"], prior_variance=v, prior_mean=mu,
                                 fixed_bias={"y": 2.0, "h": logit(0.6), "x": 0.0},
                                 parent_coding="spin" if spin else "binary", n_init=3,
                                 tol=1e-9, random_state=0).fit(X)
    assert est.n_parameters_ == 2
    assert est.coef_[est.structure_.index("y")][0] == 2.0
    axis = np.linspace(mu - 25, mu + 25, 701)
    A, B = np.meshgrid(axis, axis, indexing="ij")
    lp = exact_log_posterior(A, B, X, mu, v, spin)
    exact = logsumexp(lp) + 2 * np.log(axis[1] - axis[0])
    print(est.lower_bound_, exact)
    assert est.lower_bound_ <= exact
    assert est.lower_bound_ > exact - 3.0
    # the ScoringModel's prior and likelihood are the same function of the two weights
    model = scoring_model_for(est)
    assert model.block_names == ["w[y]"]
    W = np.column_stack([A.ravel()[::997], B.ravel()[::997]])
    params = {"w[y]": W}
    got = model.log_prior(params) + model.log_likelihood(params, model.prepare_data(X))
    np.testing.assert_allclose(got, lp.ravel()[::997], rtol=1e-10)
    q = model.variational_posterior()
    assert q.blocks[0].mean_.shape == (2,) if hasattr(q.blocks[0], "mean_") else True


def test_map_with_fixed_zero_bias_equals_logistic_regression_without_intercept():
    rng = np.random.default_rng(2)
    n = 120
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.4
    y = rng.random(n) < expit(1.5 * a - 2.0 * b)
    X = pd.DataFrame({"a": a, "b": b, "y": y}).astype(float)
    v = 3.0
    est = VBSigmoidBeliefNetwork({"y": ["a", "b"], "a": [], "b": []}, prior_variance=v,
                                 fixed_bias={"y": 0.0}, n_init=1, random_state=0).fit(X)
    model = scoring_model_for(est)
    w = model.fit_point(model.prepare_data(X), rng=0, tol_per_case=1e-15, max_iter=20000)["w[y]"][0]
    lr = LogisticRegression(C=v, fit_intercept=False, tol=1e-12, max_iter=10000)
    lr.fit(X[["a", "b"]].to_numpy(), X["y"].astype(int))
    np.testing.assert_allclose(w, lr.coef_[0], atol=2e-5)


@pytest.mark.parametrize("spin", [False, True])
def test_map_with_offset_and_prior_mean_equals_direct_optimisation(spin):
    rng = np.random.default_rng(3)
    n = 100
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.4
    y = rng.random(n) < expit(-1.0 + 1.5 * a - 2.0 * b)
    X = pd.DataFrame({"a": a, "b": b, "y": y}).astype(float)
    v, mu = 2.0, {"y": [0.0, 1.0, -0.5]}
    est = VBSigmoidBeliefNetwork({"y": ["a", "b"], "a": [], "b": []}, prior_variance=v,
                                 prior_mean=mu, fixed_bias={"y": -1.0},
                                 parent_coding="spin" if spin else "binary",
                                 n_init=1, random_state=0).fit(X)
    model = scoring_model_for(est)
    w = model.fit_point(model.prepare_data(X), rng=0, tol_per_case=1e-15, max_iter=20000)["w[y]"][0]
    U = X[["a", "b"]].to_numpy()
    U = 2 * U - 1 if spin else U
    s = 2 * X["y"].to_numpy() - 1
    m0 = np.array([1.0, -0.5])

    def neg(w):
        a = -1.0 + U @ w
        return np.logaddexp(0.0, -s * a).sum() + 0.5 * np.sum((w - m0) ** 2) / v

    ref = minimize(neg, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose(w, ref, atol=1e-5)
    np.testing.assert_allclose(est.prior_mean_[est.weight_layout_.w_ptr[est.structure_.index("y")]:][:2], m0)


def test_spin_coding_samples_and_likelihood_agree():
    X = bimodal_data(40, 0)
    est = VBSigmoidBeliefNetwork(STRUCTURE, hidden=["h"], parent_coding="spin",
                                 fixed_bias={"h": logit(0.6), "x": 0.0, "y": 2.0},
                                 n_init=1, random_state=0).fit(X)
    # ancestral sampling with coef_ reproduces the model's exact pattern probabilities
    est2 = VBSigmoidBeliefNetwork(STRUCTURE, hidden=["h"], parent_coding="spin",
                                  fixed_bias={"h": logit(0.6), "x": 0.0, "y": 2.0},
                                  n_init=1, random_state=0).fit(X)
    est2.random_state = 5
    Xs, _ = est2.sample(20000)
    obs = [est2.structure_.names[j] for j in est2.structure_.observed]
    xs, ys = Xs[:, obs.index("x")], Xs[:, obs.index("y")]
    freq = np.mean(ys[xs == 1])
    grid = pd.DataFrame({"x": [1.0, 1.0], "y": [0.0, 1.0]})
    p = np.exp(est.score_samples(grid))
    np.testing.assert_allclose(freq, p[1] / p.sum(), atol=0.02)


def test_bad_options_are_refused():
    X = bimodal_data(10, 0)
    with pytest.raises(ValueError, match="fixed_bias"):
        VBSigmoidBeliefNetwork(STRUCTURE, hidden=["h"], fixed_bias={"nope": 1.0}).fit(X)
    with pytest.raises(ValueError, match="prior_mean"):
        VBSigmoidBeliefNetwork(STRUCTURE, hidden=["h"], prior_mean={"y": [1.0, 2.0]}).fit(X)
    with pytest.raises(ValueError, match="parent_coding"):
        VBSigmoidBeliefNetwork(STRUCTURE, hidden=["h"], parent_coding="pm").fit(X)
