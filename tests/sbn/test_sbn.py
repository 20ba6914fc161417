"""VBSigmoidBeliefNetwork: the Jaakkola–Jordan VBEM against exact oracles."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logsumexp
from sklearn.linear_model import LogisticRegression

from sklearn_vb import VBSigmoidBeliefNetwork
from sklearn_vb.base import BoundDecreaseError
from sklearn_vb.scoring import scoring_model_for


def brute_loglik(structure, coefs, X):
    """ln p(X | w) by summing over the hidden nodes in numpy (independent of the kernels).
    ``coefs``: list per node of (C, d_j) arrays; X (n, n_observed) 0/1."""
    obs, hid = list(structure.observed), list(structure.hidden_nodes)
    C = coefs[0].shape[0]
    total = np.zeros(C)
    uniq, counts = np.unique(np.asarray(X, dtype=float), axis=0, return_counts=True)
    for x, count in zip(uniq, counts):
        terms = []
        for hv in itertools.product([0, 1], repeat=len(hid)):
            s = np.zeros(structure.n_nodes)
            s[obs] = x
            s[hid] = hv
            t = np.zeros(C)
            for j in range(structure.n_nodes):
                u = np.concatenate([[1.0], s[list(structure.parents[j])]])
                a = coefs[j] @ u
                t += np.log(expit((2 * s[j] - 1) * a))
            terms.append(t)
        total += count * logsumexp(np.array(terms), axis=0)
    return total


def grid_log_evidence(structure, X, v, half_width, n_points):
    """ln p(X) by a Riemann sum on a regular grid over every weight (<= 3 weights)."""
    dims = [1 + len(p) for p in structure.parents]
    D = sum(dims)
    axis = np.linspace(-half_width, half_width, n_points)
    h = axis[1] - axis[0]
    W = np.stack(np.meshgrid(*[axis] * D, indexing="ij"), axis=-1).reshape(-1, D)
    coefs = np.split(W, np.cumsum(dims)[:-1], axis=1)
    log_prior = -0.5 * np.sum(W**2, axis=1) / v - 0.5 * D * np.log(2 * np.pi * v)
    return logsumexp(log_prior + brute_loglik(structure, coefs, X)) + D * np.log(h)


def hidden_data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.random(n) < 0.5
    return np.column_stack([rng.random(n) < np.where(h, 0.85, 0.2) for _ in range(3)]).astype(float)


def test_fully_observed_map_equals_logistic_regression():
    rng = np.random.default_rng(1)
    n = 150
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.3
    y = rng.random(n) < expit(-0.5 + 1.5 * a - 2.0 * b)
    X = pd.DataFrame({"a": a, "b": b, "y": y}).astype(float)
    v = 2.0
    est = VBSigmoidBeliefNetwork({"y": ["a", "b"], "a": [], "b": []}, prior_variance=v,
                                 n_init=1, random_state=0).fit(X)
    model = scoring_model_for(est)
    w = model.fit_point(model.prepare_data(X), rng=0)["w[y]"][0]
    lr = LogisticRegression(C=v, fit_intercept=False, tol=1e-12, max_iter=10000)
    U = np.column_stack([np.ones(n), X["a"], X["b"]])
    lr.fit(U, X["y"].astype(int))
    np.testing.assert_allclose(w, lr.coef_[0], atol=2e-5)
    # the VB posterior mean sits near the MAP (posterior nearly Gaussian at n = 150)
    np.testing.assert_allclose(est.coef_[est.structure_.index("y")], w, atol=0.15)


@pytest.mark.parametrize("structure,v,half,npts", [
    ({"x": []}, 100.0, 30.0, 4001),              # one weight
    ({"y": ["a"], "a": []}, 100.0, 30.0, 301),   # one bias (a) and a 2-d node (y)
])
def test_bound_below_exact_evidence_fully_observed(structure, v, half, npts):
    rng = np.random.default_rng(3)
    names = list(structure)
    X = pd.DataFrame({k: (rng.random(25) < 0.3 + 0.4 * i) for i, k in enumerate(names)}).astype(float)
    est = VBSigmoidBeliefNetwork(structure, prior_variance=v, n_init=1, tol=1e-9,
                                 random_state=0).fit(X)
    s = est.structure_
    # the evidence factorises over nodes when nothing is hidden: a grid per node
    exact = 0.0
    for j in range(s.n_nodes):
        cols = [s.names[j]] + [s.names[p] for p in s.parents[j]]
        # only node j's own factor: integrate its weights; parents enter as inputs
        dims = 1 + len(s.parents[j])
        axis = np.linspace(-half, half, npts if dims == 2 else 4001)
        h = axis[1] - axis[0]
        W = np.stack(np.meshgrid(*[axis] * dims, indexing="ij"), -1).reshape(-1, dims)
        U = np.column_stack([np.ones(len(X))] + [X[c].to_numpy() for c in cols[1:]])
        sgn = 2 * X[cols[0]].to_numpy() - 1
        ll = -np.logaddexp(0.0, -(W @ U.T) * sgn).sum(axis=1)
        lp = -0.5 * np.sum(W**2, 1) / v - 0.5 * dims * np.log(2 * np.pi * v)
        exact += logsumexp(lp + ll) + dims * np.log(h)
    print(est.lower_bound_, exact)
    assert est.lower_bound_ <= exact + 1e-6
    assert est.lower_bound_ > exact - 1.0  # the JJ bound is close in logistic regression


def test_bound_below_exact_evidence_with_hidden_node():
    rng = np.random.default_rng(4)
    n = 30
    h = rng.random(n) < 0.4
    X = pd.DataFrame({"x": rng.random(n) < np.where(h, 0.9, 0.1)}).astype(float)
    v = 1.0
    est = VBSigmoidBeliefNetwork({"x": ["h"], "h": []}, hidden=["h"], prior_variance=v,
                                 n_init=3, tol=1e-9, random_state=0).fit(X)
    exact = grid_log_evidence(est.structure_, X.to_numpy(), v, 7.0, 101)
    print(est.lower_bound_, exact)
    assert est.lower_bound_ <= exact
    assert est.lower_bound_ > exact - 2.0


@pytest.mark.parametrize("seed", range(4))
def test_jj_em_monotone_at_every_step(seed):
    X = hidden_data(80, seed)
    structure = {"x0": ["h1", "h2"], "x1": ["h1"], "x2": ["h2", "x0"], "h1": [], "h2": ["h1"]}
    df = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    df.iloc[::7, 1] = np.nan  # missing values are hidden for those cases
    est = VBSigmoidBeliefNetwork(structure, hidden=["h1", "h2"], prior_variance=10.0, n_init=1,
                                 max_iter=60, bound_check="steps", random_state=seed)
    est.fit(df)  # raises BoundDecreaseError naming the step on any decrease
    assert np.all(np.diff(est.lower_bounds_) >= -1e-9)
    assert est.lower_bounds_[-1] > est.lower_bounds_[0]


def test_each_step_maximises_its_argument():
    X = hidden_data(50, 5)
    est = VBSigmoidBeliefNetwork(hidden=None, prior_variance=10.0, n_init=1, max_iter=5,
                                 random_state=0)
    est.fit(X)
    data = est._check_fit_data(X)
    base = est._lower_bound(data)
    # xi: any perturbation lowers the bound
    xi = est._xi_.copy()
    est._xi_ = xi * 1.05
    assert est._lower_bound(data) < base
    est._xi_ = xi
    # q(w): the VBM step from the current (q(h), xi) is at least as good as the stored
    # q(w), and perturbing its mean lowers the bound
    est._step_vbm(data, 0)
    opt = est._lower_bound(data)
    assert opt >= base - 1e-9
    est._mean_ = est._mean_ + 0.05
    assert est._lower_bound(data) < opt


def test_log_likelihood_matches_brute_force_and_normalises():
    X = hidden_data(20, 2)
    structure = {"x0": ["h"], "x1": ["h", "x0"], "x2": ["x1"], "h": []}
    est = VBSigmoidBeliefNetwork(structure, hidden="h", n_init=1, max_iter=3,
                                 random_state=0).fit(pd.DataFrame(X, columns=["x0", "x1", "x2"]))
    model = scoring_model_for(est)
    params = model.sample_prior(np.random.default_rng(0), 4)
    params = {k: v / 5 for k, v in params.items()}
    data = model.prepare_data(pd.DataFrame(X, columns=["x0", "x1", "x2"]))
    s = est.structure_
    coefs = [params[f"w[{n}]"] for n in s.names]
    np.testing.assert_allclose(model.log_likelihood(params, data), brute_loglik(s, coefs, X),
                               rtol=1e-10)
    allx = pd.DataFrame(list(itertools.product([0.0, 1.0], repeat=3)), columns=["x0", "x1", "x2"])
    per_case = model.log_likelihood_per_case(params, model.prepare_data(allx))
    np.testing.assert_allclose(np.exp(per_case).sum(axis=1), 1.0, rtol=1e-12)
    # prior: a product of N(0, v) densities
    W = np.concatenate([params[f"w[{n}]"] for n in s.names], axis=1)
    np.testing.assert_allclose(model.log_prior(params),
                               -0.5 * (W**2).sum(1) / 100 - 0.5 * W.shape[1] * np.log(200 * np.pi))


def test_predict_proba_matches_enumeration_and_sample_shapes():
    X = hidden_data(40, 6)
    est = VBSigmoidBeliefNetwork(n_init=2, random_state=0).fit(X)
    p = est.predict_proba(X[:5])
    s = est.structure_
    coefs = [c[None] for c in est.coef_]
    h = s.hidden_nodes[0]
    for i in range(5):
        joint = []
        for hv in (0, 1):
            st = np.zeros(s.n_nodes)
            st[list(s.observed)] = X[i]
            st[h] = hv
            joint.append(sum(np.log(expit((2 * st[j] - 1) * (coefs[j][0] @ np.r_[1.0, st[list(s.parents[j])]])))
                             for j in range(s.n_nodes)))
        np.testing.assert_allclose(p[i, 1], np.exp(joint[1] - logsumexp(joint)), rtol=1e-10)
    rows = [brute_loglik(s, coefs, X[i:i + 1])[0] for i in range(5)]
    np.testing.assert_allclose(est.score_samples(X[:5]), rows, rtol=1e-10)
    Xs, Hs = est.sample(7)
    assert Xs.shape == (7, 3) and Hs.shape == (7, 1)
    assert set(np.unique(Xs)) <= {0, 1}


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="0/1"):
        VBSigmoidBeliefNetwork().fit(np.array([[0.0, 2.0], [1.0, 0.0]]))
    X = pd.DataFrame({"a": [0.0, 1.0], "h": [1.0, 0.0]})
    with pytest.raises(ValueError, match="hidden"):
        VBSigmoidBeliefNetwork({"a": ["h"], "h": []}, hidden="h").fit(X)
    est = VBSigmoidBeliefNetwork(binarize=0.5, n_init=1, max_iter=3).fit(np.array([[0.2, 0.9], [0.7, 0.1]]))
    assert est.n_parameters_ == 1 + 2 * 2


def test_bound_check_raise_is_active():
    # a deliberately broken VBM step must be caught
    class Broken(VBSigmoidBeliefNetwork):
        def _step_vbm(self, data, iteration):
            super()._step_vbm(data, iteration)
            if iteration > 2:
                self._mean_ = self._mean_ + 0.5

    with pytest.raises(BoundDecreaseError):
        Broken(n_init=1, max_iter=10, tol=0.0, random_state=0).fit(hidden_data(40, 0))
