"""The default LinearChainCRF is the classic linear-chain CRF: a bias per label, constant
label-pair (transition) weights and state features, no input-dependent transitions; it
learns that labels persist, and the evidence scores count its constant weights."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from sklearn_vb import LinearChainCRF
from sklearn_vb.crf._kernels import crf_marginals
from sklearn_vb.scoring import score

STAY, P1, P0 = 0.85, 0.65, 0.35  # label persistence; p(x_ia = 1 | t_i = 1), (| t_i = 0)


def persistent_sequences(rng, n_seq, T, G=3):
    """Two labels that keep their value with probability ``STAY`` and ``G`` binary inputs,
    each only weakly informative of the label of its own row (an HMM)."""
    flips = rng.random((n_seq, T)) >= STAY
    t = np.empty((n_seq, T), dtype=np.int64)
    t[:, 0] = rng.integers(0, 2, n_seq)
    for i in range(1, T):
        t[:, i] = np.where(flips[:, i], 1 - t[:, i - 1], t[:, i - 1])
    y = t.ravel()
    X = (rng.random((y.size, G)) < np.where(y[:, None] == 1, P1, P0)).astype(float)
    return X, y, np.full(n_seq, T)


def bayes_accuracy(X, y, lengths):
    """Accuracy of the argmax of the true posterior marginals (the HMM that generated the
    data): the best per-row accuracy any classifier can expect."""
    k = X.sum(axis=1)
    G = X.shape[1]
    U = np.stack([k * np.log(P0) + (G - k) * np.log(1 - P0),
                  k * np.log(P1) + (G - k) * np.log(1 - P1)], axis=1)
    A = np.log([[STAY, 1 - STAY], [1 - STAY, STAY]])
    B = np.ascontiguousarray(np.broadcast_to(A, (y.size, 2, 2)))
    ends = np.cumsum(lengths)
    _, node, _ = crf_marginals(np.ascontiguousarray(U), B, ends - lengths, ends)
    return float(np.mean(node.argmax(axis=1) == y))


@pytest.fixture(scope="module")
def persistent():
    rng = np.random.default_rng(0)
    return persistent_sequences(rng, 150, 20), persistent_sequences(rng, 250, 20)


def test_default_learns_that_labels_persist(persistent):
    (X, y, lengths), (Xt, yt, lt) = persistent
    crf = LinearChainCRF().fit(X, y, lengths=lengths)
    acc = crf.score(Xt, yt, lengths=lt)
    logistic = LogisticRegression().fit(X, y).score(Xt, yt)
    bayes = bayes_accuracy(Xt, yt, lt)
    # the inputs alone give about 0.72; the label order lifts the best possible to about
    # 0.80, and Viterbi decoding of the true model reaches about 0.77
    assert acc > logistic + 0.03
    assert acc > bayes - 0.045
    # the constant transition weight says "stay": positive, near the true 2 ln(STAY / (1 - STAY))
    assert 1.5 < crf.transition_[1, 1] < 5.0


def test_default_has_label_bias_and_transition_weights():
    rng = np.random.default_rng(1)
    X = rng.random((60, 2))
    y = rng.integers(0, 3, 60)
    crf = LinearChainCRF().fit(X, y, lengths=[20, 25, 15])
    L, G = 3, 2
    # state weights of every input plus a bias per label; one weight per label pair
    assert crf.n_parameters_ == (L - 1) * (G + 1) + (L - 1) ** 2
    assert crf.feature_names_ == ["state[1]:x0", "state[1]:x1", "state[1]:1",
                                  "state[2]:x0", "state[2]:x1", "state[2]:1",
                                  "transition[1,1]:1", "transition[1,2]:1",
                                  "transition[2,1]:1", "transition[2,2]:1"]
    assert crf.bias_.shape == (L,) and crf.transition_.shape == (L, L)
    # label 0 is the reference: its bias, row and column are zero
    assert crf.bias_[0] == 0 and not crf.transition_[0].any() and not crf.transition_[:, 0].any()
    np.testing.assert_array_equal(crf.bias_[1:], crf.coef_[[2, 5]])
    np.testing.assert_array_equal(crf.transition_[1:, 1:].ravel(), crf.coef_[6:])
    assert crf.transition_features_.size == 0
    # the input-dependent transitions stay available
    full = LinearChainCRF(transition_features="all").fit(X, y, lengths=[20, 25, 15])
    assert full.n_parameters_ == (L - 1) * (G + 1) + (L - 1) ** 2 * (G + 1)
    np.testing.assert_array_equal(full.transition_, full.transition_coef_[:, :, -1])


def test_evidence_counts_the_constant_weights():
    """Laplace's approximation of the default model (state, bias and transition weights)
    against quadrature over its three weights; BIC's dimension is the weight count."""
    rng = np.random.default_rng(2)
    X, y, lengths = persistent_sequences(rng, 4, 6, G=1)
    crf = LinearChainCRF(solver="newton").fit(X, y, lengths=lengths)
    assert crf.n_parameters_ == 3
    exact = quadrature_log_evidence(crf, X, y, lengths)
    lap = score(crf, X, "bethe_laplace", y=y, lengths=lengths)
    # Laplace's error is O(1/N); a miscounted weight would shift it by ~0.9 nats or more
    assert abs(lap.log_evidence - exact) < 0.15
    assert score(crf, X, "laplace", y=y, lengths=lengths).log_evidence == pytest.approx(
        lap.log_evidence, abs=1e-4)
    bic = score(crf, X, "bic", y=y, lengths=lengths)
    assert bic.diagnostics["d"] == 3 and bic.diagnostics["n"] == 24
    assert lap.diagnostics["terms"]["T5"] == pytest.approx(-1.5 * np.log(24))


def quadrature_log_evidence(crf, X, y, lengths, n=45, width=8.0):
    """ln int p(t | x, lambda) p(lambda) d lambda by the trapezoid rule on a grid over
    +-width posterior sd in the Laplace-whitened coordinates (any number of weights)."""
    from sklearn_vb.scoring import scoring_model_for

    model = scoring_model_for(crf)
    data = model.prepare_data(X, y=y, lengths=lengths)
    mean, cov, _ = model._laplace_gaussian(data)
    Lc = np.linalg.cholesky(cov)
    d = mean.size
    u = np.linspace(-width, width, n)
    Z = np.stack([g.ravel() for g in np.meshgrid(*[u] * d, indexing="ij")], axis=1)
    params = {"coef": mean + Z @ Lc.T}
    lj = model.log_likelihood(params, data) + model.log_prior(params)
    w = np.full(n, u[1] - u[0])
    w[[0, -1]] *= 0.5
    W = np.prod(np.stack(np.meshgrid(*[w] * d, indexing="ij")), axis=0).ravel()
    mx = lj.max()
    return mx + np.log(np.sum(W * np.exp(lj - mx))) + np.log(abs(np.linalg.det(Lc)))


def test_sparse_inputs_fit_and_score_as_dense():
    """One-hot window features as a CSR matrix: the same weights, predictions and evidence
    as the dense array, without densifying the inputs in the fit."""
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    words = rng.integers(0, 30, 240)
    X = np.zeros((240, 60))
    X[np.arange(240), words] = 1.0
    X[np.arange(1, 240), 30 + words[:-1]] = 1.0  # the previous word
    y = (words % 3 + (rng.random(240) < 0.2)) % 3
    lengths = [40] * 6
    Xs = sp.csr_matrix(X)
    dense = LinearChainCRF().fit(X, y, lengths=lengths)
    sparse = LinearChainCRF().fit(Xs, y, lengths=lengths)
    assert sp.issparse(sparse.check_data(Xs, y, lengths=lengths).gs)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-10)
    np.testing.assert_array_equal(sparse.predict(Xs, lengths=lengths),
                                  dense.predict(X, lengths=lengths))
    np.testing.assert_allclose(sparse.predict_proba(sp.csc_matrix(X), lengths=lengths),
                               dense.predict_proba(X, lengths=lengths), atol=1e-10)
    assert score(sparse, Xs, "bethe_laplace", y=y, lengths=lengths).log_evidence == pytest.approx(
        score(dense, X, "bethe_laplace", y=y, lengths=lengths).log_evidence, abs=1e-6)
    Xbad = Xs.copy()
    Xbad.data[5] = np.inf
    row = int(np.searchsorted(Xbad.indptr, 5, side="right") - 1)
    with pytest.raises(ValueError, match=f"X contains infinity \\(first at row {row}"):
        LinearChainCRF().fit(Xbad, y, lengths=lengths)
    assert Xs.data[5] == 1.0  # the input is not modified
