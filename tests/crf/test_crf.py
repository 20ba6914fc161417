"""LinearChainCRF: exact inference against enumeration, derivatives against finite
differences, fitting, prediction and input handling."""

import itertools

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV

from sklearn_vb import LinearChainCRF
from sklearn_vb.crf._layout import CRFData, CRFEngine, CRFLayout
from sklearn_vb.model_selection import SequenceKFold


# ---------------------------------------------------------------- oracles
def features_by_hand(t, g, L, s_cols, t_cols, bias=False):
    """f(t, x) of one sequence written out position by position (independent of the
    package's vectorised statistics)."""
    gs = [list(g[i, s_cols]) + ([1.0] if bias else []) for i in range(len(t))]
    gt = [list(g[i, t_cols]) + ([1.0] if bias else []) for i in range(len(t))]
    Gs, Gt = len(s_cols) + bias, len(t_cols) + bias
    f_state = np.zeros((L - 1, Gs))
    f_trans = np.zeros((L - 1, L - 1, Gt))
    for i in range(len(t)):
        if t[i] >= 1:
            f_state[t[i] - 1] += gs[i]
        if i + 1 < len(t) and t[i] >= 1 and t[i + 1] >= 1:
            f_trans[t[i] - 1, t[i + 1] - 1] += gt[i]
    return np.concatenate([f_state.ravel(), f_trans.ravel()])


def enumerate_sequence(coef, g, L, s_cols, t_cols, bias=False):
    """ln Z, label marginals, E f and Cov f of one sequence by enumeration."""
    T = g.shape[0]
    labels = list(itertools.product(range(L), repeat=T))
    Phi = np.array([features_by_hand(t, g, L, s_cols, t_cols, bias) for t in labels])
    en = Phi @ coef
    lz = np.log(np.sum(np.exp(en - en.max()))) + en.max()
    p = np.exp(en - lz)
    node = np.zeros((T, L))
    for pr, t in zip(p, labels):
        node[np.arange(T), t] += pr
    kappa = p @ Phi
    D = Phi - kappa
    cov = (D * p[:, None]).T @ D
    best = labels[int(np.argmax(en))]
    return lz, node, kappa, cov, np.array(best), Phi, labels


def random_problem(rng, L, lengths, G=3, s_cols=(0, 1, 2), t_cols=(0, 2), bias=False):
    X = (rng.random((sum(lengths), G)) < 0.5).astype(float)
    X[:, -1] += rng.normal(size=X.shape[0])  # one real-valued input
    layout = CRFLayout(L, G, s_cols, t_cols, bias)
    coef = rng.normal(scale=1.0, size=layout.n_features)
    return X, layout, coef


# ---------------------------------------------------------------- exact inference
def test_second_order_pass_reference_chain():
    """A reference chain (T = 5, two inputs): ln Z, E f and Cov f against hard-coded values."""
    g = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0]], float)
    layout = CRFLayout(2, 2, [0, 1], [0, 1])
    m = CRFEngine(layout, CRFData.build(layout, g, None, [5])).moments(
        np.array([0.5, -0.3, 0.8, -1.0]))
    N = 5.0
    assert m.log_partition * N == pytest.approx(4.413617054928418, abs=1e-12)
    np.testing.assert_allclose(m.kappa * N, [2.0697175734, 0.9309917636, 1.1530011261,
                                             0.2942046223], atol=1e-10)
    C = np.array([[0.7158861107, 0.2040641456, 0.5061987161, 0.0728071245],
                  [0.2040641456, 0.3957454061, 0.3144103495, 0.2680135084],
                  [0.5061987161, 0.3144103495, 0.6844073865, 0.2483345135],
                  [0.0728071245, 0.2680135084, 0.2483345135, 0.3715708886]])
    np.testing.assert_allclose(m.cov * N, C, atol=1e-10)


@pytest.mark.parametrize("L", [2, 3])
@pytest.mark.parametrize("bias", [False, True])
def test_inference_equals_enumeration(L, bias):
    rng = np.random.default_rng(10 * L + bias)
    lengths = [1, 4, 6] if L == 2 else [1, 3, 5]
    X, layout, coef = random_problem(rng, L, lengths, bias=bias)
    s_cols, t_cols = [0, 1, 2], [0, 2]
    data = CRFData.build(layout, X, None, lengths)
    eng = CRFEngine(layout, data)
    log_z, node, pair = eng.marginals(coef)
    m = eng.moments(coef)
    path = eng.viterbi(coef)
    lz_tot, kap_tot, cov_tot = 0.0, 0.0, 0.0
    for q, (a, b) in enumerate(zip(data.starts, data.ends)):
        lz, nd, kap, cov, best, _, _ = enumerate_sequence(coef, X[a:b], L, s_cols, t_cols, bias)
        assert log_z[q] == pytest.approx(lz, abs=1e-12)
        np.testing.assert_allclose(node[a:b], nd, atol=1e-12)
        np.testing.assert_array_equal(path[a:b], best)
        lz_tot, kap_tot, cov_tot = lz_tot + lz, kap_tot + kap, cov_tot + cov
    N = data.N
    assert m.log_partition * N == pytest.approx(lz_tot, abs=1e-11)
    np.testing.assert_allclose(m.kappa * N, kap_tot, atol=1e-11)
    np.testing.assert_allclose(m.cov * N, cov_tot, atol=1e-11)
    # forward-backward expectations = second-order pass expectations
    np.testing.assert_allclose(eng.value_and_gradient(coef)[1], kap_tot, atol=1e-11)
    # batched ln Z
    batch = np.stack([coef, 0.5 * coef])
    np.testing.assert_allclose(eng.log_partition(batch)[0], lz_tot, atol=1e-11)
    # pair marginals sum to the label marginals
    inner = np.setdiff1d(np.arange(X.shape[0]), data.ends - 1)
    np.testing.assert_allclose(pair[inner].sum(axis=2), node[inner], atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 3000.0])
def test_forward_backward_with_extreme_potentials(scale):
    """The fit's forward-backward against log-space enumeration of the potentials, with
    moderate ones and with ones so extreme (thousands of nats apart) that exponentiated
    potentials underflow (the pass then works in log space for that sequence)."""
    from scipy.special import logsumexp

    from sklearn_vb.crf._kernels import crf_marginals

    rng = np.random.default_rng(5)
    L, lengths = 3, np.array([4, 1, 5])
    n = lengths.sum()
    U = scale * rng.normal(size=(n, L))
    B = scale * rng.normal(size=(n, L, L))
    U[0] = [0.0, -scale, -scale]  # the first sequence starts in label 0 ...
    B[0, 0] = -2 * scale           # ... from which every transition is very unlikely
    ends = np.cumsum(lengths)
    starts = ends - lengths
    log_z, node, pair = crf_marginals(U, B, starts, ends)
    for q, (a, b) in enumerate(zip(starts, ends)):
        paths = np.array(list(itertools.product(range(L), repeat=b - a)))
        pos = np.arange(b - a)
        e = U[a + pos, paths].sum(axis=1)
        if b - a > 1:
            e += B[a + pos[:-1], paths[:, :-1], paths[:, 1:]].sum(axis=1)
        lz = logsumexp(e)
        assert log_z[q] == pytest.approx(lz, rel=1e-12, abs=1e-9)
        p = np.exp(e - lz)
        for i in range(b - a):
            np.testing.assert_allclose(node[a + i], np.bincount(paths[:, i], p, L), atol=1e-12)
        for i in range(b - a - 1):
            joint = np.bincount(paths[:, i] * L + paths[:, i + 1], p, L * L).reshape(L, L)
            np.testing.assert_allclose(pair[a + i], joint, atol=1e-12)


def test_statistics_equal_features_by_hand():
    rng = np.random.default_rng(3)
    lengths = [3, 1, 5]
    X, layout, _ = random_problem(rng, 3, lengths)
    codes = rng.integers(0, 3, size=sum(lengths))
    data = CRFData.build(layout, X, codes, lengths)
    S = sum(features_by_hand(codes[a:b], X[a:b], 3, [0, 1, 2], [0, 2])
            for a, b in zip(data.starts, data.ends))
    np.testing.assert_allclose(data.S, S, atol=1e-12)


def test_long_sequence_is_stable():
    """No underflow or cancellation on a long chain with large weights: the covariance
    of a 2000-position chain with state features only is the sum of its independent
    halves'."""
    rng = np.random.default_rng(5)
    X = (rng.random((2000, 2)) < 0.5).astype(float)
    layout = CRFLayout(2, 2, [0, 1], [])
    coef = np.array([8.0, -7.0])
    whole = CRFEngine(layout, CRFData.build(layout, X, None, [2000])).moments(coef)
    parts = CRFEngine(layout, CRFData.build(layout, X, None, [1000, 1000])).moments(coef)
    assert np.isfinite(whole.log_partition)
    assert whole.log_partition == pytest.approx(parts.log_partition, rel=1e-12)
    np.testing.assert_allclose(whole.kappa, parts.kappa, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(whole.cov, parts.cov, rtol=1e-8, atol=1e-12)


# ---------------------------------------------------------------- derivatives
def test_gradient_and_hessian_equal_finite_differences():
    rng = np.random.default_rng(7)
    lengths = [4, 7, 2]
    X, layout, coef = random_problem(rng, 3, lengths)
    codes = rng.integers(0, 3, size=sum(lengths))
    data = CRFData.build(layout, X, codes, lengths)
    eng = CRFEngine(layout, data)
    P = np.full(layout.n_features, 0.7)

    def t(c):
        return c @ data.S - eng.log_partition(c[None])[0] - 0.5 * np.sum(P * c * c)

    def grad(c):
        return data.S - eng.value_and_gradient(c)[1] - P * c

    h = 1e-6
    E = np.eye(layout.n_features)
    fd = np.array([(t(coef + h * e) - t(coef - h * e)) / (2 * h) for e in E])
    np.testing.assert_allclose(grad(coef), fd, atol=1e-6)
    m = eng.moments(coef)
    H = -(data.N * m.cov + np.diag(P))
    fdH = np.array([(grad(coef + h * e) - grad(coef - h * e)) / (2 * h) for e in E])
    np.testing.assert_allclose(H, fdH, atol=1e-6)


# ---------------------------------------------------------------- the estimator
def chain_data(seed=0, n_seq=20, T=15, G=4):
    """Two-label sequences with sticky labels and informative inputs."""
    rng = np.random.default_rng(seed)
    ys, Xs = [], []
    for _ in range(n_seq):
        t = np.zeros(T, dtype=int)
        t[0] = rng.integers(2)
        for i in range(1, T):
            t[i] = t[i - 1] if rng.random() < 0.8 else 1 - t[i - 1]
        x = (rng.random((T, G)) < np.where(t[:, None] == 1, 0.7, 0.25)).astype(float)
        x[:, -1] = rng.random(T) < 0.5  # noise input
        ys.append(t)
        Xs.append(x)
    return np.vstack(Xs), np.concatenate(ys), np.full(n_seq, T)


@pytest.mark.parametrize("solver", ["lbfgs", "newton"])
def test_fit_reaches_the_map(solver):
    X, y, lengths = chain_data()
    crf = LinearChainCRF(bias=True, solver=solver).fit(X, y, lengths=lengths)
    assert crf.converged_
    data = crf.check_data(X, y, lengths=lengths)
    eng = CRFEngine(crf.layout_, data)
    g = data.S - eng.value_and_gradient(crf.coef_)[1] - crf.coef_
    assert np.max(np.abs(g)) < 1e-5
    # objective = conditional log-likelihood + log prior
    F = crf.n_parameters_
    lp = -0.5 * F * np.log(2 * np.pi) - 0.5 * crf.coef_ @ crf.coef_
    assert crf.objective_ == pytest.approx(
        crf.conditional_log_likelihood(X, y, lengths=lengths) + lp, abs=1e-8)
    assert crf.score(X, y, lengths=lengths) > 0.75


def test_solvers_agree_and_fit_is_deterministic():
    X, y, lengths = chain_data(seed=1)
    a = LinearChainCRF(solver="lbfgs", tol=1e-10).fit(X, y, lengths=lengths)
    b = LinearChainCRF(solver="newton").fit(X, y, lengths=lengths)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-5)
    c = LinearChainCRF(solver="lbfgs", tol=1e-10).fit(X, y, lengths=lengths)
    np.testing.assert_array_equal(a.coef_, c.coef_)


def test_sequence_log_likelihood_by_enumeration():
    rng = np.random.default_rng(11)
    lengths = [3, 5]
    X = (rng.random((8, 3)) < 0.5).astype(float)
    y = np.array(["q", "a", "a", "b", "q", "q", "a", "b"])
    crf = LinearChainCRF(state_features=[0, 2], transition_features=[1]).fit(X, y, lengths=lengths)
    assert list(crf.classes_) == ["a", "b", "q"]
    codes = np.searchsorted(crf.classes_, y)
    ll = crf.sequence_log_likelihood(X, y, lengths=lengths)
    for q, (a, b) in enumerate([(0, 3), (3, 8)]):
        lz, node, *_ = enumerate_sequence(crf.coef_, X[a:b], 3, [0, 2], [1], bias=True)
        f = features_by_hand(codes[a:b], X[a:b], 3, [0, 2], [1], bias=True)
        assert ll[q] == pytest.approx(f @ crf.coef_ - lz, abs=1e-12)
        np.testing.assert_allclose(crf.predict_proba(X[a:b]), node, atol=1e-12)
    pred = crf.predict(X, lengths=lengths)
    assert pred.dtype == y.dtype and set(pred) <= set(y)


def test_lengths_and_sequence_ids_agree():
    X, y, lengths = chain_data(seed=2, n_seq=6)
    ids = np.repeat(np.arange(6), lengths)
    a = LinearChainCRF().fit(X, y, lengths=lengths)
    b = LinearChainCRF().fit(X, y, sequence_ids=ids)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict(X, lengths=lengths), b.predict(X, sequence_ids=ids))
    with pytest.raises(ValueError, match="sequence_ids"):
        b.score(X, y)  # fitted on several sequences: refuses to join them


def test_structure_selects_features():
    X, y, lengths = chain_data(seed=3)
    crf = LinearChainCRF(state_features=[1, 3], transition_features="none", bias=False).fit(
        X, y, lengths=lengths)
    assert crf.n_parameters_ == 2
    assert crf.feature_names_ == ["state:x1", "state:x3"]
    assert np.all(crf.bias_ == 0) and np.all(crf.transition_ == 0)
    empty = LinearChainCRF(state_features="none", transition_features="none", bias=False).fit(
        X, y, lengths=lengths)
    assert empty.n_parameters_ == 0
    assert empty.conditional_log_likelihood(X, y, lengths=lengths) == pytest.approx(
        -X.shape[0] * np.log(2))
    mask = np.array([False, True, False, True])
    np.testing.assert_array_equal(
        LinearChainCRF(state_features=mask, transition_features="none", bias=False).fit(
            X, y, lengths=lengths).coef_, crf.coef_)


def test_ml_is_sharper_than_map():
    X, y, lengths = chain_data(seed=4)
    ml = LinearChainCRF(point="ml").fit(X, y, lengths=lengths)
    mp = LinearChainCRF(prior_variance=0.1).fit(X, y, lengths=lengths)
    assert (ml.conditional_log_likelihood(X, y, lengths=lengths)
            > mp.conditional_log_likelihood(X, y, lengths=lengths))


@pytest.mark.parametrize("kwargs, match", [
    ({"state_features": [0, 9]}, "state_features"),
    ({"transition_features": [1, 1]}, "transition_features"),
    ({"state_features": "some"}, "state_features"),
    ({"prior_variance": -1.0}, "prior_variance"),
    ({"prior_variance": {"edge": 1.0}}, "prior_variance"),
])
def test_bad_parameters_name_the_argument(kwargs, match):
    X, y, lengths = chain_data(n_seq=3)
    with pytest.raises(ValueError, match=match):
        LinearChainCRF(**kwargs).fit(X, y, lengths=lengths)


def test_bad_data_name_the_argument():
    X, y, lengths = chain_data(n_seq=3)
    with pytest.raises(ValueError, match="lengths"):
        LinearChainCRF().fit(X, y, lengths=[5, 5])
    with pytest.raises(ValueError, match="class"):
        LinearChainCRF().fit(X, np.zeros_like(y), lengths=lengths)
    crf = LinearChainCRF().fit(X, y, lengths=lengths)
    with pytest.raises(ValueError, match="labels not seen"):
        crf.conditional_log_likelihood(X, y + 5, lengths=lengths)
    with pytest.raises(ValueError, match="features"):
        crf.predict(X[:, :2], lengths=lengths)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LinearChainCRF().fit(Xn, y, lengths=lengths)


def test_inputs_not_modified():
    X, y, lengths = chain_data(n_seq=3)
    X0, y0 = X.copy(), y.copy()
    LinearChainCRF().fit(X, y, lengths=lengths).predict(X, lengths=lengths)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_grid_search_with_sequence_kfold():
    X, y, lengths = chain_data(seed=6, n_seq=12)
    ids = np.repeat(np.arange(12), lengths)
    with sklearn.config_context(enable_metadata_routing=True):
        est = LinearChainCRF().set_fit_request(sequence_ids=True).set_score_request(
            sequence_ids=True)
        search = GridSearchCV(est, {"prior_variance": [0.1, 1.0]}, cv=SequenceKFold(3))
        search.fit(X, y, sequence_ids=ids, groups=ids)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_score_ > 0.7
