"""The conditional evidence of LinearChainCRF: Laplace-Exact against quadrature and the
reference values, belief propagation with linear response on the input-clamped chains,
the generic scorers and AIS."""

import numpy as np
import pytest

from sklearn_vb import LinearChainCRF
from sklearn_vb.crf._layout import CRFData, CRFEngine, CRFLayout
from sklearn_vb.mrf.inference import BPEngine
from sklearn_vb.mrf.layout import MRFLayout
from sklearn_vb.scoring import score, scoring_model_for

# two documents with one observation feature (a reference model with hard-coded values):
# g = (1, 0, 1, 1), t = (1, 0, 1, 1) and g = (0, 1, 1, 0, 1), t = (0, 1, 1, 0, 0)
C1_X = np.array([1, 0, 1, 1, 0, 1, 1, 0, 1], float)[:, None]
C1_Y = np.array([1, 0, 1, 1, 0, 1, 1, 0, 0])
C1_LENGTHS = [4, 5]
C1_EXACT = -6.074227025931677  # 2-D quadrature
C1_LAPLACE = -6.108841046658278


@pytest.fixture(scope="module")
def c1():
    # the paper's features (no constant ones): F = 2, as the reference values
    return LinearChainCRF("all", "all", bias=False, solver="newton").fit(C1_X, C1_Y, lengths=C1_LENGTHS)


def c1_score(crf, method, **kw):
    return score(crf, C1_X, method, y=C1_Y, lengths=C1_LENGTHS, **kw)


def test_reference_values(c1):
    np.testing.assert_allclose(c1.coef_, [0.76074818, 0.18419619], atol=1e-8)
    lap = c1_score(c1, "bethe_laplace", gradient="exact", covariance="exact")
    assert lap.log_evidence == pytest.approx(C1_LAPLACE, abs=1e-9)
    # on a chain BP is exact: the BP variant is Laplace-Exact
    assert c1_score(c1, "bethe_laplace").log_evidence == pytest.approx(C1_LAPLACE, abs=1e-9)
    assert c1_score(c1, "bethe_laplace", terms="map").log_evidence == pytest.approx(
        -7.232068219849, abs=1e-9)
    # BIC-MAP with n = 9 labelled lines
    assert c1_score(c1, "bethe_laplace", terms="bic").log_evidence == pytest.approx(
        -7.285082718275, abs=1e-9)
    assert c1_score(c1, "bic_map").log_evidence == pytest.approx(-7.285082718275, abs=1e-9)
    # the textbook BIC: the same penalty at the maximum-likelihood weights, whose
    # likelihood is at least the MAP weights'
    assert c1_score(c1, "bic").log_evidence > c1_score(c1, "bic_map").log_evidence
    terms = lap.diagnostics["terms"]
    assert terms["T1"] + terms["T2"] == pytest.approx(
        c1.conditional_log_likelihood(C1_X, C1_Y, lengths=C1_LENGTHS), abs=1e-10)


def quadrature_log_evidence(crf, X, y, lengths, n=241, width=9.0):
    """ln int p(t | x, lambda) p(lambda) d lambda on a grid over +-width posterior sd
    (two parameters; trapezoid rule in the Laplace-whitened coordinates)."""
    model = scoring_model_for(crf)
    data = model.prepare_data(X, y=y, lengths=lengths)
    mean, cov, _ = model._laplace_gaussian(data)
    Lc = np.linalg.cholesky(cov)
    u = np.linspace(-width, width, n)
    U1, U2 = np.meshgrid(u, u, indexing="ij")
    Z = np.stack([U1.ravel(), U2.ravel()], axis=1)
    lam = mean + Z @ Lc.T
    params = {"coef": lam}
    lj = model.log_likelihood(params, data) + model.log_prior(params)
    mx = lj.max()
    h = u[1] - u[0]
    w = np.full(n, h)
    w[[0, -1]] *= 0.5
    W = np.outer(w, w).ravel()
    return mx + np.log(np.sum(W * np.exp(lj - mx))) + np.log(abs(np.linalg.det(Lc)))


def test_laplace_within_its_error_of_quadrature(c1):
    exact = quadrature_log_evidence(c1, C1_X, C1_Y, C1_LENGTHS)
    assert exact == pytest.approx(C1_EXACT, abs=1e-8)
    lap = c1_score(c1, "bethe_laplace", gradient="exact", covariance="exact").log_evidence
    # the Laplace error is O(1/N) per case: a few hundredths of a nat here
    assert 0.01 < abs(lap - exact) < 0.05
    # BIC-MAP and MAP are much further off
    assert abs(c1_score(c1, "bic_map").log_evidence - exact) > 1.0
    assert abs(c1_score(c1, "bethe_laplace", terms="map").log_evidence - exact) > 1.0


def test_laplace_tracks_quadrature_on_a_larger_data_set():
    """With more data Laplace's error shrinks (two parameters, 30 sequences)."""
    rng = np.random.default_rng(0)
    lengths = [6] * 30
    X = (rng.random((180, 1)) < 0.5).astype(float)
    y = ((X[:, 0] + rng.random(180)) > 0.9).astype(int)
    crf = LinearChainCRF("all", "all", bias=False, solver="newton").fit(X, y, lengths=lengths)
    exact = quadrature_log_evidence(crf, X, y, lengths, n=161)
    lap = score(crf, X, "bethe_laplace", y=y, lengths=lengths).log_evidence
    assert abs(lap - exact) < 0.5 * abs(C1_LAPLACE - C1_EXACT)


def test_generic_laplace_equals_laplace_exact(c1):
    fd = c1_score(c1, "laplace").log_evidence
    assert fd == pytest.approx(C1_LAPLACE, abs=1e-5)


def test_ais_within_its_error_of_quadrature(c1):
    r = c1_score(c1, "ais", random_state=0)
    err = abs(r.log_evidence - C1_EXACT)
    assert err <= max(0.05, 4 * r.stderr) and err <= 0.5


def test_evidence_needs_labels(c1):
    with pytest.raises(ValueError, match="y="):
        score(c1, C1_X, "bethe_laplace", lengths=C1_LENGTHS)


def test_per_case_likelihood_sums_to_total():
    rng = np.random.default_rng(1)
    lengths = [3, 4, 2]
    X = rng.random((9, 2))
    y = rng.integers(0, 3, 9)
    crf = LinearChainCRF().fit(X, y, lengths=lengths)
    model = scoring_model_for(crf)
    data = model.prepare_data(X, y=y, lengths=lengths)
    params = {"coef": np.stack([crf.coef_, 0.5 * crf.coef_])}
    per = model.log_likelihood_per_case(params, data)
    np.testing.assert_allclose(per.sum(axis=1), model.log_likelihood(params, data), atol=1e-12)
    np.testing.assert_allclose(per[0], crf.sequence_log_likelihood(X, y, lengths=lengths),
                               atol=1e-12)


# ------------------------------------------------- BP with linear response on the chains
def bp_moments_by_clamping(layout, data, coef):
    """Sum over sequences of ln Z_B, kappa_B and C_LR of the input-clamped chain (a
    pairwise MRF with ``L`` states per position) mapped to the tied CRF features."""
    L = layout.n_labels
    U, B = layout.potentials(coef, data.gs, data.gt)
    U, B = U[0], B[0]
    lz = 0.0
    kappa = np.zeros(layout.n_features)
    cov = np.zeros((layout.n_features, layout.n_features))
    for a, b in zip(data.starts, data.ends):
        T = b - a
        mrf = MRFLayout(np.full(T, L), [(i, i + 1) for i in range(T - 1)])
        # M maps the tied CRF weights to the MRF's indicator weights: coef_mrf = M lambda
        M = np.zeros((mrf.n_features, layout.n_features))
        for i in range(T):
            for k in range(1, L):
                M[mrf.node_offset[i] + k - 1, (k - 1) * layout.n_state_inputs
                  + np.arange(layout.n_state_inputs)] = data.gs[a + i]
        for i in range(T - 1):
            for k in range(1, L):
                for m in range(1, L):
                    cols = (layout.n_state + ((k - 1) * (L - 1) + m - 1) * layout.n_transition_inputs
                            + np.arange(layout.n_transition_inputs))
                    M[mrf.edge_offset[i] + (k - 1) * (L - 1) + m - 1, cols] = data.gt[a + i]
        coef_mrf = M @ coef
        # the MRF's canonical potentials are the CRF's log potentials
        np.testing.assert_allclose(coef_mrf[mrf.node_offset[0]:mrf.node_offset[1]],
                                   U[a, 1:], atol=1e-12)
        m_bp = BPEngine(mrf, tol=1e-13).moments(coef_mrf)
        assert m_bp.info["bp_converged"]
        lz += m_bp.log_partition
        kappa += M.T @ m_bp.kappa
        cov += M.T @ m_bp.cov @ M
    return lz, kappa, cov


@pytest.mark.parametrize("L", [2, 3])
def test_bp_linear_response_on_chains_equals_exact(L):
    """Loopy-BP machinery (the pairwise-MRF kernels) on each input-clamped chain: its
    Bethe ln Z, belief moments and linear-response covariance, tied back to the CRF
    features, equal the CRF's exact forward-backward and second-order pass."""
    rng = np.random.default_rng(L)
    lengths = [1, 4, 6]
    X = (rng.random((11, 3)) < 0.5).astype(float)
    layout = CRFLayout(L, 3, [0, 1], [1, 2], bias=True)
    data = CRFData.build(layout, X, None, lengths)
    coef = rng.normal(size=layout.n_features)
    lz, kappa, cov = bp_moments_by_clamping(layout, data, coef)
    m = CRFEngine(layout, data).moments(coef)
    assert lz == pytest.approx(m.log_partition * data.N, abs=1e-9)
    np.testing.assert_allclose(kappa, m.kappa * data.N, atol=1e-9)
    np.testing.assert_allclose(cov, m.cov * data.N, atol=1e-8)
