"""Tests of the conjugate families in ``sklearn_vb._core.distributions``.

Oracles: scipy.stats densities and entropies, closed forms, and Monte Carlo
averages with a tolerance of a few standard errors (fixed seeds).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import digamma, gammaln, multigammaln

from sklearn_vb._core import distributions as dist

# Monte Carlo tolerance in standard errors; fixed seeds make every test deterministic.
Z = 5.0


def assert_mc(samples, expected, z=Z, atol=1e-12):
    """Assert the mean of ``samples`` (first axis) equals ``expected`` within z standard errors."""
    samples = np.asarray(samples, dtype=float)
    n = samples.shape[0]
    mean = samples.mean(axis=0)
    se = samples.std(axis=0, ddof=1) / np.sqrt(n)
    err = np.abs(mean - expected)
    assert np.all(err <= z * se + atol), (mean, expected, se)


def random_spd(rng, D, batch=()):
    A = rng.standard_normal(batch + (D, D))
    return A @ np.swapaxes(A, -1, -2) / D + 0.5 * np.eye(D)


# ---------------------------------------------------------------------------
# Dirichlet
# ---------------------------------------------------------------------------


def test_log_multivariate_beta_closed_form():
    alpha = np.array([[0.5, 2.0, 3.5], [1.0, 1.0, 1.0]])
    expected = [
        gammaln(0.5) + gammaln(2.0) + gammaln(3.5) - gammaln(6.0),
        -gammaln(3.0),  # ln(1/2!) : uniform density on the 2-simplex is 2
    ]
    np.testing.assert_allclose(dist.log_multivariate_beta(alpha), expected, rtol=1e-13)
    np.testing.assert_allclose(dist.log_multivariate_beta(alpha)[1], -np.log(2.0))


def test_dirichlet_log_pdf_entropy_mean_vs_scipy():
    rng = np.random.default_rng(0)
    for alpha in ([0.3, 1.0, 2.5], [5.0, 0.7], [1.0, 1.0, 1.0, 1.0], [0.05, 0.2, 30.0]):
        alpha = np.array(alpha)
        x = stats.dirichlet(alpha).rvs(size=5, random_state=rng)
        x = np.maximum(x, 1e-300)
        x /= x.sum(axis=1, keepdims=True)
        ref = np.array([stats.dirichlet.logpdf(xi, alpha) for xi in x])
        np.testing.assert_allclose(dist.dirichlet_log_pdf(x, alpha), ref, rtol=1e-10)
        np.testing.assert_allclose(
            dist.dirichlet_entropy(alpha), stats.dirichlet(alpha).entropy(), rtol=1e-10
        )
        np.testing.assert_allclose(dist.dirichlet_mean(alpha), stats.dirichlet(alpha).mean())


def test_dirichlet_batched_matches_loop():
    rng = np.random.default_rng(1)
    aq = rng.gamma(2.0, size=(4, 3, 5))
    ap = rng.gamma(2.0, size=(3, 5))
    kl = dist.dirichlet_kl(aq, ap)
    assert kl.shape == (4, 3)
    for i in range(4):
        for j in range(3):
            assert np.isclose(kl[i, j], dist.dirichlet_kl(aq[i, j], ap[j]), rtol=1e-12)
    assert dist.dirichlet_entropy(aq).shape == (4, 3)
    assert dist.dirichlet_expected_log(aq).shape == aq.shape


def test_dirichlet_expected_log_vs_samples():
    rng = np.random.default_rng(2)
    alpha = np.array([0.4, 1.5, 3.0])
    x = stats.dirichlet(alpha).rvs(size=40000, random_state=rng)
    assert_mc(np.log(x), dist.dirichlet_expected_log(alpha))


def test_dirichlet_kl_vs_monte_carlo():
    rng = np.random.default_rng(3)
    aq = np.array([2.0, 0.8, 4.0])
    ap = np.array([1.0, 3.0, 0.5])
    x = stats.dirichlet(aq).rvs(size=40000, random_state=rng)
    diff = dist.dirichlet_log_pdf(x, aq) - dist.dirichlet_log_pdf(x, ap)
    assert_mc(diff, dist.dirichlet_kl(aq, ap))
    # entropy is -E[ln q] as well
    assert_mc(-dist.dirichlet_log_pdf(x, aq), dist.dirichlet_entropy(aq))


def test_dirichlet_sampler_moments():
    rng = np.random.default_rng(4)
    alpha = np.array([[0.5, 1.0, 2.0], [3.0, 0.2, 0.2]])
    x = dist.dirichlet_sample(alpha, rng, size=30000)
    assert x.shape == (30000, 2, 3)
    np.testing.assert_allclose(x.sum(axis=-1), 1.0, atol=1e-12)
    assert_mc(x, dist.dirichlet_mean(alpha))
    assert_mc(np.log(x), dist.dirichlet_expected_log(alpha))
    # second moment E[x_k^2] = a_k (a_k + 1) / (a0 (a0 + 1))
    a0 = alpha.sum(-1, keepdims=True)
    assert_mc(x**2, alpha * (alpha + 1) / (a0 * (a0 + 1)))


def test_dirichlet_sample_tiny_alpha_no_zeros():
    rng = np.random.default_rng(5)
    alpha = np.full(6, 1e-3)
    x = dist.dirichlet_sample(alpha, rng, size=5000)
    assert np.all(np.isfinite(x))
    assert np.all(x > 0)
    np.testing.assert_allclose(x.sum(axis=-1), 1.0, atol=1e-12)
    lp = dist.dirichlet_log_pdf(x, alpha)
    assert np.all(np.isfinite(lp))
    # almost all mass on one coordinate, each coordinate equally likely to win
    assert np.mean(x.max(axis=-1) > 0.99) > 0.95
    winners = np.bincount(x.argmax(axis=-1), minlength=6) / 5000
    assert np.all(np.abs(winners - 1 / 6) < 5 * np.sqrt(1 / 6 * 5 / 6 / 5000))
    # even smaller concentrations still give finite, strictly positive points
    x = dist.dirichlet_sample(np.array([1e-8, 1e-8, 1e-8]), rng, size=100)
    assert np.all(np.isfinite(x)) and np.all(x > 0)
    assert np.all(np.isfinite(dist.dirichlet_expected_log(np.array([1e-8, 1e-8]))))


def test_dirichlet_tiny_and_large_concentrations_are_finite():
    tiny = np.array([1e-3, 1e-8, 1e-300])
    big = np.array([1e3, 1e6, 2.0])
    for f in (dist.dirichlet_entropy, dist.log_multivariate_beta):
        assert np.isfinite(f(tiny)) and np.isfinite(f(big))
    assert np.all(np.isfinite(dist.dirichlet_expected_log(tiny)))
    assert np.isfinite(dist.dirichlet_kl(tiny, big)) and dist.dirichlet_kl(tiny, big) > 0
    assert np.isfinite(dist.dirichlet_kl(big, tiny)) and dist.dirichlet_kl(big, tiny) > 0
    # a point with an exact zero where alpha_k = 1 has a finite density
    assert np.isfinite(dist.dirichlet_log_pdf(np.array([0.0, 0.4, 0.6]), np.array([1.0, 2.0, 3.0])))


def test_dirichlet_does_not_modify_inputs():
    aq = np.array([1.0, 2.0, 3.0])
    ap = np.array([0.5, 0.5, 0.5])
    x = np.array([0.2, 0.3, 0.5])
    copies = [aq.copy(), ap.copy(), x.copy()]
    dist.dirichlet_kl(aq, ap)
    dist.dirichlet_log_pdf(x, aq)
    dist.dirichlet_sample(aq, 0, size=3)
    for a, c in zip([aq, ap, x], copies):
        np.testing.assert_array_equal(a, c)


pos = st.floats(min_value=1e-2, max_value=50.0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(pos, pos), min_size=2, max_size=6))
def test_dirichlet_kl_nonnegative_and_zero_at_self(pairs):
    aq = np.array([p[0] for p in pairs])
    ap = np.array([p[1] for p in pairs])
    assert dist.dirichlet_kl(aq, ap) >= -1e-9
    assert abs(dist.dirichlet_kl(aq, aq)) < 1e-9


# ---------------------------------------------------------------------------
# Gamma (shape, rate)
# ---------------------------------------------------------------------------


GAMMA_PARAMS = [(0.3, 2.0), (1.0, 0.5), (4.5, 3.0), (50.0, 10.0)]


@pytest.mark.parametrize("a,b", GAMMA_PARAMS)
def test_gamma_vs_scipy(a, b):
    ref = stats.gamma(a, scale=1.0 / b)
    x = np.array([0.01, 0.3, 1.0, 2.7, 10.0])
    np.testing.assert_allclose(dist.gamma_log_pdf(x, a, b), ref.logpdf(x), rtol=1e-11)
    np.testing.assert_allclose(dist.gamma_entropy(a, b), ref.entropy(), rtol=1e-11)
    np.testing.assert_allclose(dist.gamma_mean(a, b), ref.mean(), rtol=1e-12)


def test_gamma_expected_log_and_kl_vs_monte_carlo():
    rng = np.random.default_rng(6)
    aq, bq, ap, bp = 2.5, 1.5, 0.7, 3.0
    x = stats.gamma(aq, scale=1 / bq).rvs(size=40000, random_state=rng)
    assert_mc(np.log(x), dist.gamma_expected_log(aq, bq))
    assert_mc(x, dist.gamma_mean(aq, bq))
    diff = dist.gamma_log_pdf(x, aq, bq) - dist.gamma_log_pdf(x, ap, bp)
    assert_mc(diff, dist.gamma_kl(aq, bq, ap, bp))


def test_gamma_sampler_moments_and_tiny_shape():
    rng = np.random.default_rng(7)
    a = np.array([0.5, 2.0, 7.0])
    b = np.array([1.0, 0.3, 4.0])
    x = dist.gamma_sample(a, b, rng, size=30000)
    assert x.shape == (30000, 3)
    assert_mc(x, a / b)
    assert_mc(np.log(x), digamma(a) - np.log(b))
    assert_mc((x - a / b) ** 2, a / b**2)
    y = dist.gamma_sample(1e-3, 1.0, rng, size=2000)
    assert np.all(np.isfinite(y)) and np.all(y > 0)
    assert np.all(np.isfinite(dist.gamma_log_pdf(y, 1e-3, 1.0)))
    # KS test of the sampler against scipy's cdf
    z = dist.gamma_sample(0.3, 2.0, rng, size=5000)
    assert stats.kstest(z, stats.gamma(0.3, scale=0.5).cdf).pvalue > 1e-3


@settings(max_examples=30, deadline=None)
@given(pos, pos, pos, pos)
def test_gamma_kl_nonnegative_and_zero_at_self(aq, bq, ap, bp):
    assert dist.gamma_kl(aq, bq, ap, bp) >= -1e-9 * max(1.0, abs(dist.gamma_kl(aq, bq, ap, bp)))
    assert abs(dist.gamma_kl(aq, bq, aq, bq)) < 1e-9


# ---------------------------------------------------------------------------
# Gaussian, full and diagonal covariance
# ---------------------------------------------------------------------------


def test_gaussian_log_pdf_entropy_vs_scipy():
    rng = np.random.default_rng(8)
    for D in (1, 3, 5):
        mean = rng.standard_normal(D)
        cov = random_spd(rng, D)
        x = rng.standard_normal((7, D))
        ref = stats.multivariate_normal(mean, cov)
        np.testing.assert_allclose(dist.gaussian_log_pdf(x, mean, cov), ref.logpdf(x).reshape(7))
        np.testing.assert_allclose(dist.gaussian_entropy(cov), ref.entropy())


def test_gaussian_batched_matches_loop():
    rng = np.random.default_rng(9)
    K, D = 3, 4
    means = rng.standard_normal((K, D))
    covs = random_spd(rng, D, (K,))
    x = rng.standard_normal((6, 1, D))
    lp = dist.gaussian_log_pdf(x, means, covs)
    assert lp.shape == (6, K)
    for k in range(K):
        ref = stats.multivariate_normal(means[k], covs[k]).logpdf(x[:, 0])
        np.testing.assert_allclose(lp[:, k], ref)
    kl = dist.gaussian_kl(means, covs, means[0], covs[0])
    assert kl.shape == (K,)
    assert abs(kl[0]) < 1e-10
    np.testing.assert_allclose(kl[1], dist.gaussian_kl(means[1], covs[1], means[0], covs[0]))
    np.testing.assert_allclose(dist.gaussian_entropy(covs)[2], dist.gaussian_entropy(covs[2]))


def test_gaussian_kl_closed_form_and_monte_carlo():
    rng = np.random.default_rng(10)
    D = 3
    mq, mp = rng.standard_normal(D), rng.standard_normal(D)
    Sq, Sp = random_spd(rng, D), random_spd(rng, D)
    Pp = np.linalg.inv(Sp)
    closed = 0.5 * (
        np.trace(Pp @ Sq)
        + (mp - mq) @ Pp @ (mp - mq)
        - D
        + np.log(np.linalg.det(Sp) / np.linalg.det(Sq))
    )
    np.testing.assert_allclose(dist.gaussian_kl(mq, Sq, mp, Sp), closed)
    x = stats.multivariate_normal(mq, Sq).rvs(size=40000, random_state=rng)
    diff = dist.gaussian_log_pdf(x, mq, Sq) - dist.gaussian_log_pdf(x, mp, Sp)
    assert_mc(diff, closed)


def test_gaussian_sampler_and_expected_outer():
    rng = np.random.default_rng(11)
    D = 3
    mean = np.array([1.0, -2.0, 0.5])
    cov = random_spd(rng, D)
    x = dist.gaussian_sample(mean, cov, rng, size=40000)
    assert x.shape == (40000, D)
    outer = x[:, :, None] * x[:, None, :]
    assert_mc(outer, dist.gaussian_expected_outer(mean, cov))
    assert_mc(x, mean)
    assert_mc(-dist.gaussian_log_pdf(x, mean, cov), dist.gaussian_entropy(cov))
    # batched sampling shape
    xs = dist.gaussian_sample(np.zeros((2, D)), random_spd(rng, D, (2,)), rng, size=(4, 5))
    assert xs.shape == (4, 5, 2, D)


def test_gaussian_rejects_bad_covariance():
    with pytest.raises(ValueError, match="cov"):
        dist.gaussian_log_pdf(np.zeros(2), np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="cov"):
        dist.gaussian_entropy(np.ones((2, 3)))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4))
def test_gaussian_kl_nonnegative_and_zero_at_self(seed, D):
    rng = np.random.default_rng(seed)
    mq, mp = rng.standard_normal(D), rng.standard_normal(D)
    Sq, Sp = random_spd(rng, D), random_spd(rng, D)
    assert dist.gaussian_kl(mq, Sq, mp, Sp) >= -1e-10
    assert abs(dist.gaussian_kl(mq, Sq, mq, Sq)) < 1e-10


def test_diag_gaussian_vs_full_and_scipy():
    rng = np.random.default_rng(12)
    D = 4
    mq, mp = rng.standard_normal(D), rng.standard_normal(D)
    vq, vp = rng.gamma(2.0, size=D), rng.gamma(2.0, size=D)
    x = rng.standard_normal((5, D))
    np.testing.assert_allclose(
        dist.diag_gaussian_log_pdf(x, mq, vq),
        stats.norm(mq, np.sqrt(vq)).logpdf(x).sum(axis=-1),
    )
    np.testing.assert_allclose(
        dist.diag_gaussian_entropy(vq), stats.norm(mq, np.sqrt(vq)).entropy().sum()
    )
    np.testing.assert_allclose(
        dist.diag_gaussian_kl(mq, vq, mp, vp),
        dist.gaussian_kl(mq, np.diag(vq), mp, np.diag(vp)),
    )
    assert abs(dist.diag_gaussian_kl(mq, vq, mq, vq)) < 1e-12
    assert dist.diag_gaussian_kl(mq, vq, mp, vp) > 0


# ---------------------------------------------------------------------------
# Wishart(W, nu), E[Lambda] = nu W
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("D,nu", [(1, 2.5), (2, 3.0), (3, 7.5), (4, 4.2)])
def test_wishart_log_pdf_entropy_normaliser_vs_scipy(D, nu):
    rng = np.random.default_rng(20 + D)
    W = random_spd(rng, D)
    ref = stats.wishart(df=nu, scale=W)
    Ls = ref.rvs(size=4, random_state=rng).reshape(4, D, D)
    np.testing.assert_allclose(
        dist.wishart_log_pdf(Ls, W, nu), [ref.logpdf(L) for L in Ls], rtol=1e-10
    )
    np.testing.assert_allclose(dist.wishart_entropy(W, nu), ref.entropy(), rtol=1e-10)
    log_norm = -(0.5 * nu * np.linalg.slogdet(W)[1] + 0.5 * nu * D * np.log(2)
                 + multigammaln(0.5 * nu, D))
    np.testing.assert_allclose(dist.wishart_log_normaliser(W, nu), log_norm, rtol=1e-12)
    np.testing.assert_allclose(dist.wishart_expected_precision(W, nu), nu * W)


def test_wishart_one_dimensional_is_gamma():
    # Wishart(w, nu) with D = 1 is Gamma(shape nu/2, rate 1/(2w))
    wq, nuq, wp, nup = 0.7, 3.3, 2.0, 1.4
    x = np.array([0.1, 1.0, 4.0])
    np.testing.assert_allclose(
        dist.wishart_log_pdf(x[:, None, None], [[wq]], nuq), dist.gamma_log_pdf(x, nuq / 2, 0.5 / wq)
    )
    np.testing.assert_allclose(
        dist.wishart_kl([[wq]], nuq, [[wp]], nup), dist.gamma_kl(nuq / 2, 0.5 / wq, nup / 2, 0.5 / wp)
    )
    np.testing.assert_allclose(
        dist.wishart_expected_logdet([[wq]], nuq), dist.gamma_expected_log(nuq / 2, 0.5 / wq)
    )


def test_wishart_expectations_and_kl_vs_monte_carlo():
    rng = np.random.default_rng(30)
    D = 3
    Wq, Wp = random_spd(rng, D), random_spd(rng, D)
    nuq, nup = 5.5, 3.2
    Ls = stats.wishart(df=nuq, scale=Wq).rvs(size=20000, random_state=rng)
    assert_mc(Ls, dist.wishart_expected_precision(Wq, nuq))
    assert_mc(np.linalg.slogdet(Ls)[1], dist.wishart_expected_logdet(Wq, nuq))
    diff = dist.wishart_log_pdf(Ls, Wq, nuq) - dist.wishart_log_pdf(Ls, Wp, nup)
    assert_mc(diff, dist.wishart_kl(Wq, nuq, Wp, nup))
    assert_mc(-dist.wishart_log_pdf(Ls, Wq, nuq), dist.wishart_entropy(Wq, nuq))


def test_wishart_sampler_moments():
    rng = np.random.default_rng(31)
    D = 3
    W = random_spd(rng, D)
    nu = 4.5
    Ls = dist.wishart_sample(W, nu, rng, size=30000)
    assert Ls.shape == (30000, D, D)
    np.testing.assert_allclose(Ls, np.swapaxes(Ls, -1, -2), atol=1e-12)
    assert_mc(Ls, nu * W)
    # Var(Lambda_ij) = nu (W_ij^2 + W_ii W_jj)
    var = nu * (W**2 + np.outer(np.diag(W), np.diag(W)))
    assert_mc((Ls - nu * W) ** 2, var)
    assert_mc(np.linalg.slogdet(Ls)[1], dist.wishart_expected_logdet(W, nu))
    # batched parameters
    Wb = random_spd(rng, 2, (3,))
    nub = np.array([2.0, 3.0, 10.0])
    Lb = dist.wishart_sample(Wb, nub, rng, size=(20000,))
    assert Lb.shape == (20000, 3, 2, 2)
    assert_mc(Lb, dist.wishart_expected_precision(Wb, nub))


def test_wishart_batched_and_validation():
    rng = np.random.default_rng(32)
    W = random_spd(rng, 3, (4,))
    nu = np.array([3.0, 4.0, 5.0, 6.0])
    kl = dist.wishart_kl(W, nu, W[0], nu[0])
    assert kl.shape == (4,)
    assert abs(kl[0]) < 1e-10
    np.testing.assert_allclose(kl[2], dist.wishart_kl(W[2], nu[2], W[0], nu[0]))
    np.testing.assert_allclose(dist.wishart_entropy(W, nu)[3], dist.wishart_entropy(W[3], nu[3]))
    with pytest.raises(ValueError, match="nu"):
        dist.wishart_entropy(W[0], 1.5)
    with pytest.raises(ValueError, match="W"):
        dist.wishart_entropy(-W[0], 5.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.floats(0.0, 20.0), st.floats(0.0, 20.0))
def test_wishart_kl_nonnegative_and_zero_at_self(seed, D, eq, ep):
    rng = np.random.default_rng(seed)
    Wq, Wp = random_spd(rng, D), random_spd(rng, D)
    nuq, nup = D - 1 + 1e-2 + eq, D - 1 + 1e-2 + ep
    kl = dist.wishart_kl(Wq, nuq, Wp, nup)
    assert kl >= -1e-9 * max(1.0, abs(kl))
    assert abs(dist.wishart_kl(Wq, nuq, Wq, nuq)) < 1e-9


# ---------------------------------------------------------------------------
# Normal-Wishart
# ---------------------------------------------------------------------------


def _nw_params(rng, D):
    return rng.standard_normal(D), rng.gamma(2.0) + 0.2, random_spd(rng, D), D + 1.5 + rng.gamma(2.0)


def test_normal_wishart_log_pdf_vs_scipy():
    rng = np.random.default_rng(40)
    D = 3
    m, beta, W, nu = _nw_params(rng, D)
    mus, Ls = dist.normal_wishart_sample(m, beta, W, nu, rng, size=4)
    ref = [
        stats.multivariate_normal(m, np.linalg.inv(beta * L)).logpdf(mu)
        + stats.wishart(df=nu, scale=W).logpdf(L)
        for mu, L in zip(mus, Ls)
    ]
    np.testing.assert_allclose(dist.normal_wishart_log_pdf(mus, Ls, m, beta, W, nu), ref)


def test_normal_wishart_sampler_moments():
    rng = np.random.default_rng(41)
    D = 2
    m, beta, W, nu = np.array([1.0, -1.0]), 0.7, random_spd(rng, D), 6.0
    mus, Ls = dist.normal_wishart_sample(m, beta, W, nu, rng, size=40000)
    assert mus.shape == (40000, D) and Ls.shape == (40000, D, D)
    assert_mc(mus, m)
    assert_mc(Ls, nu * W)
    # marginal covariance of mu is E[(beta Lambda)^{-1}] = W^{-1} / (beta (nu - D - 1))
    cov_mu = np.linalg.inv(W) / (beta * (nu - D - 1))
    d = mus - m
    assert_mc(d[:, :, None] * d[:, None, :], cov_mu)
    # conditional structure: beta (mu-m)^T Lambda (mu-m) ~ chi^2_D
    q = beta * np.einsum("ni,nij,nj->n", d, Ls, d)
    assert stats.kstest(q[:5000], stats.chi2(D).cdf).pvalue > 1e-3


def test_normal_wishart_kl_and_expected_log_likelihood_vs_monte_carlo():
    rng = np.random.default_rng(42)
    D = 2
    q = _nw_params(rng, D)
    p = _nw_params(rng, D)
    mus, Ls = dist.normal_wishart_sample(*q, rng, size=40000)
    near = (q[0] + 0.3, q[1] * 3.0, q[2] * 0.8, q[3] + 1.0)
    for prior in (p, near):
        diff = dist.normal_wishart_log_pdf(mus, Ls, *q) - dist.normal_wishart_log_pdf(mus, Ls, *prior)
        assert_mc(diff, dist.normal_wishart_kl(*q, *prior))
    x = rng.standard_normal((4, D)) * 2.0
    d = x[None, :, :] - mus[:, None, :]
    loglik = 0.5 * (
        np.linalg.slogdet(Ls)[1][:, None]
        - D * np.log(2 * np.pi)
        - np.einsum("sni,sij,snj->sn", d, Ls, d)
    )
    ell = dist.normal_wishart_expected_log_likelihood(x, *q)
    assert ell.shape == (4,)
    assert_mc(loglik, ell)


def _stacked_nw_params(rng, D, K):
    """K random Normal-Wishart parameter sets, one by one and stacked along axis 0."""
    params = [_nw_params(rng, D) for _ in range(K)]
    stacked = (np.stack([p[0] for p in params]), np.array([p[1] for p in params]),
               np.stack([p[2] for p in params]), np.array([p[3] for p in params]))
    return params, stacked


def test_normal_wishart_expected_log_likelihood_batched_over_components():
    rng = np.random.default_rng(43)
    D, K = 3, 4
    params, (m, beta, W, nu) = _stacked_nw_params(rng, D, K)
    x = rng.standard_normal((5, D))
    ell = dist.normal_wishart_expected_log_likelihood(x[:, None, :], m, beta, W, nu)
    assert ell.shape == (5, K)
    for k in range(K):
        np.testing.assert_allclose(ell[:, k], dist.normal_wishart_expected_log_likelihood(x, *params[k]))
    kl = dist.normal_wishart_kl(m, beta, W, nu, m[0], beta[0], W[0], nu[0])
    assert kl.shape == (K,) and abs(kl[0]) < 1e-10


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 3))
def test_normal_wishart_kl_nonnegative_and_zero_at_self(seed, D):
    rng = np.random.default_rng(seed)
    q, p = _nw_params(rng, D), _nw_params(rng, D)
    kl = dist.normal_wishart_kl(*q, *p)
    assert kl >= -1e-9 * max(1.0, abs(kl))
    assert abs(dist.normal_wishart_kl(*q, *q)) < 1e-9


def test_kl_inverse_scale_matches_scale_parameterisation():
    rng = np.random.default_rng(45)
    D, K = 3, 4
    params, (m, beta, W, nu) = _stacked_nw_params(rng, D, K)
    S = np.linalg.inv(W)
    np.testing.assert_allclose(
        dist.normal_wishart_kl_inverse_scale(m, beta, S, nu, m[0], beta[0], S[0], nu[0]),
        dist.normal_wishart_kl(m, beta, W, nu, m[0], beta[0], W[0], nu[0]),
        rtol=1e-10, atol=1e-12,
    )
    np.testing.assert_allclose(
        dist.wishart_kl_inverse_scale(S, nu, S[1], nu[1]), dist.wishart_kl(W, nu, W[1], nu[1]),
        rtol=1e-10, atol=1e-12,
    )
    with pytest.raises(ValueError, match="S_q must be symmetric positive definite"):
        dist.wishart_kl_inverse_scale(-S[0], nu[0], S[1], nu[1])
    with pytest.raises(ValueError, match="different dimensions"):
        dist.wishart_kl_inverse_scale(S[0], nu[0], S[1, :2, :2], nu[1])


@pytest.mark.parametrize("condition", [1e2, 1e6, 1e9])
@pytest.mark.parametrize("rotated", [False, True])
def test_kl_inverse_scale_accurate_when_ill_conditioned(condition, rotated):
    # Eigenvalues lam of S_p and mu of S_q, shared eigenvectors Q (the identity, or a
    # rotation with mu = 2 lam so that S_q = 2 S_p holds exactly in floating point), and
    # m_q - m_p = t Q[:, 0]: KL = D/2 (r - 1 - ln r) + beta_p nu t^2 / (2 mu_0)
    # + nu/2 sum(ln(mu / lam) - 1 + lam / mu), r = beta_p / beta_q.  Through explicit
    # inverses the relative error grows like condition * 1e-14 (1e-5 at 1e9).
    D, nu, beta_q, beta_p, t = 4, 6.5, 3.0, 1.5, 1.3
    lam = np.geomspace(1.0, 1.0 / condition, D)
    if rotated:
        Q = stats.special_ortho_group.rvs(D, random_state=0)
        mu = 2.0 * lam
    else:
        Q = np.eye(D)
        mu = lam * np.array([2.0, 0.5, 3.0, 0.25])
    S_p = (Q * lam) @ Q.T
    S_p = 0.5 * (S_p + S_p.T)
    S_q = 2.0 * S_p if rotated else np.diag(mu)
    m_p = np.array([0.5, -1.0, 2.0, 0.0])
    m_q = m_p + t * Q[:, 0]
    r = beta_p / beta_q
    kl_wishart = 0.5 * nu * np.sum(np.log(mu / lam) - 1.0 + lam / mu)
    kl = 0.5 * D * (r - 1.0 - np.log(r)) + 0.5 * beta_p * nu * t**2 / mu[0] + kl_wishart
    np.testing.assert_allclose(dist.wishart_kl_inverse_scale(S_q, nu, S_p, nu), kl_wishart,
                               rtol=1e-8)
    np.testing.assert_allclose(
        dist.normal_wishart_kl_inverse_scale(m_q, beta_q, S_q, nu, m_p, beta_p, S_p, nu),
        kl, rtol=1e-8,
    )
    assert abs(dist.normal_wishart_kl_inverse_scale(m_p, beta_p, S_p, nu, m_p, beta_p, S_p, nu)) < 1e-9


# ---------------------------------------------------------------------------
# Normal-Gamma (per dimension, summed over the last axis)
# ---------------------------------------------------------------------------


def _ng_params(rng, D):
    return (
        rng.standard_normal(D),
        rng.gamma(2.0, size=D) + 0.2,
        rng.gamma(2.0, size=D) + 1.5,
        rng.gamma(2.0, size=D) + 0.2,
    )


def test_normal_gamma_log_pdf_vs_scipy():
    rng = np.random.default_rng(50)
    m, beta, a, b = _ng_params(rng, 3)
    mu, lam = dist.normal_gamma_sample(m, beta, a, b, rng, size=5)
    ref = (
        stats.norm(m, 1 / np.sqrt(beta * lam)).logpdf(mu) + stats.gamma(a, scale=1 / b).logpdf(lam)
    ).sum(axis=-1)
    np.testing.assert_allclose(dist.normal_gamma_log_pdf(mu, lam, m, beta, a, b), ref)


def test_normal_gamma_one_dimension_matches_normal_wishart():
    # NG(m, beta, a, b) in one dimension is NW(m, beta, W = 1/(2b), nu = 2a)
    rng = np.random.default_rng(51)
    q, p = _ng_params(rng, 1), _ng_params(rng, 1)

    def nw(m, beta, a, b):
        return m, beta[0], (0.5 / b)[:, None], 2 * a[0]

    np.testing.assert_allclose(dist.normal_gamma_kl(*q, *p), dist.normal_wishart_kl(*nw(*q), *nw(*p)))
    x = rng.standard_normal((6, 1))
    np.testing.assert_allclose(
        dist.normal_gamma_expected_log_likelihood(x, *q),
        dist.normal_wishart_expected_log_likelihood(x, *nw(*q)),
    )
    mu, lam = np.array([0.3]), np.array([1.7])
    np.testing.assert_allclose(
        dist.normal_gamma_log_pdf(mu, lam, *q),
        dist.normal_wishart_log_pdf(mu, lam[:, None], *nw(*q)),
    )


def test_normal_gamma_sampler_kl_and_expected_log_likelihood_vs_monte_carlo():
    rng = np.random.default_rng(52)
    D = 3
    q, p = _ng_params(rng, D), _ng_params(rng, D)
    m, beta, a, b = q
    mu, lam = dist.normal_gamma_sample(*q, rng, size=40000)
    assert mu.shape == lam.shape == (40000, D)
    assert_mc(lam, a / b)
    assert_mc(np.log(lam), digamma(a) - np.log(b))
    assert_mc(mu, m)
    assert_mc((mu - m) ** 2, b / (beta * (a - 1)))  # Student-t variance
    # a far prior and a near one (small Monte Carlo variance, so each term of the KL matters)
    near = (m + 0.3, beta * 3.0, a * 1.2, b * 0.8)
    for prior in (p, near):
        diff = dist.normal_gamma_log_pdf(mu, lam, *q) - dist.normal_gamma_log_pdf(mu, lam, *prior)
        assert_mc(diff, dist.normal_gamma_kl(*q, *prior))
    x = rng.standard_normal((4, D))
    loglik = stats.norm(mu[:, None, :], 1 / np.sqrt(lam[:, None, :])).logpdf(x).sum(-1)
    ell = dist.normal_gamma_expected_log_likelihood(x, *q)
    assert ell.shape == (4,)
    assert_mc(loglik, ell)
    # components: (n, K)
    qs = [_ng_params(rng, D) for _ in range(2)]
    stacked = [np.stack(t) for t in zip(*qs)]
    ellk = dist.normal_gamma_expected_log_likelihood(x[:, None, :], *stacked)
    assert ellk.shape == (4, 2)
    np.testing.assert_allclose(ellk[:, 1], dist.normal_gamma_expected_log_likelihood(x, *qs[1]))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4))
def test_normal_gamma_kl_nonnegative_and_zero_at_self(seed, D):
    rng = np.random.default_rng(seed)
    q, p = _ng_params(rng, D), _ng_params(rng, D)
    kl = dist.normal_gamma_kl(*q, *p)
    assert kl >= -1e-9 * max(1.0, abs(kl))
    assert abs(dist.normal_gamma_kl(*q, *q)) < 1e-9


# ---------------------------------------------------------------------------
# ARD Gaussian
# ---------------------------------------------------------------------------


def test_ard_expected_log_prior_vs_monte_carlo():
    rng = np.random.default_rng(60)
    J = 3
    mean_w = rng.standard_normal(J)
    cov_w = random_spd(rng, J)
    a, b = rng.gamma(2.0, size=J) + 0.5, rng.gamma(2.0, size=J) + 0.5
    n = 40000
    w = dist.gaussian_sample(mean_w, cov_w, rng, size=n)
    alpha = dist.gamma_sample(a, b, rng, size=n)
    samples = dist.diag_gaussian_log_pdf(w, 0.0, 1.0 / alpha)
    assert_mc(samples, dist.ard_expected_log_prior(mean_w, cov_w, a, b))
    np.testing.assert_allclose(
        dist.ard_expected_sq(mean_w, cov_w), mean_w**2 + np.diag(cov_w)
    )


def _ard_log_joint_minus_q(alpha, a, b, ew2, a_new, b_new):
    """ln Gamma(alpha|a,b) + E_w ln N(w|0, 1/alpha) - ln Gamma(alpha|a_new,b_new).

    ``alpha`` is a grid (G,), ``ew2`` (P, J) second moments of P rows sharing
    alpha_j; the result is (G, J).
    """
    al = alpha[:, None, None]
    ell = 0.5 * (np.log(al) - np.log(2 * np.pi) - al * ew2[None]).sum(axis=1)
    g = alpha[:, None]
    return dist.gamma_log_pdf(g, a, b) + ell - dist.gamma_log_pdf(g, a_new, b_new)


def test_ard_gamma_posterior_is_the_optimal_q():
    rng = np.random.default_rng(61)
    P, J = 5, 3
    mean_w = rng.standard_normal((P, J))
    cov_w = random_spd(rng, J, (P,))
    a, b = np.array([1e-3, 1.0, 2.0]), np.array([1e-3, 0.5, 3.0])
    a_new, b_new = dist.ard_gamma_posterior(a, b, mean_w, cov_w)
    np.testing.assert_allclose(a_new, a + P / 2)
    ew2 = mean_w**2 + np.diagonal(cov_w, axis1=1, axis2=2)
    np.testing.assert_allclose(b_new, b + 0.5 * ew2.sum(axis=0))
    # q(alpha) ∝ p(alpha) exp E_w[ln p(w | alpha)]: the log ratio is constant in alpha
    grid = np.array([0.05, 0.3, 1.0, 4.0, 20.0])
    r = _ard_log_joint_minus_q(grid, a, b, ew2, a_new, b_new)
    assert r.shape == (5, J)
    np.testing.assert_allclose(r - r[0], 0.0, atol=1e-9)
    # point mass weights give the exact conjugate posterior
    a2, b2 = dist.ard_gamma_posterior(a, b, mean_w, None)
    np.testing.assert_allclose(a2, a + P / 2)
    np.testing.assert_allclose(b2, b + 0.5 * (mean_w**2).sum(axis=0))


def test_ard_gamma_posterior_per_component_and_shared():
    rng = np.random.default_rng(62)
    K, P, J = 2, 4, 3
    mean_w = rng.standard_normal((K, P, J))
    cov_w = random_spd(rng, J)  # one covariance shared by every row
    a, b = np.ones((K, 1, J)), np.ones((K, 1, J))
    a_new, b_new = dist.ard_gamma_posterior(a, b, mean_w, cov_w)
    assert a_new.shape == b_new.shape == (K, 1, J)
    np.testing.assert_allclose(a_new, 1 + P / 2)
    ew2 = mean_w**2 + np.diag(cov_w)
    np.testing.assert_allclose(b_new[:, 0], 1 + 0.5 * ew2.sum(axis=1))
    # one precision for everything
    a_s, b_s = dist.ard_gamma_posterior(1.0, 2.0, mean_w, cov_w)
    np.testing.assert_allclose(a_s, 1 + K * P * J / 2)
    np.testing.assert_allclose(b_s, 2 + 0.5 * ew2.sum())
    with pytest.raises(ValueError, match="a and b"):
        dist.ard_gamma_posterior(np.ones(5), np.ones(5), mean_w, cov_w)
    lp = dist.ard_expected_log_prior(mean_w, cov_w, a, b)
    assert lp.shape == (K, P)


# ---------------------------------------------------------------------------
# wrappers and general contract
# ---------------------------------------------------------------------------


def test_wrappers_delegate_to_functions():
    rng = np.random.default_rng(70)
    d1, d2 = dist.Dirichlet(np.array([1.0, 2.0])), dist.Dirichlet(np.array([3.0, 0.5]))
    assert d1.kl(d2) == dist.dirichlet_kl(d1.alpha, d2.alpha)
    assert d1.sample(0, size=3).shape == (3, 2)
    g = dist.Gamma(2.0, 3.0)
    assert g.expected_log() == dist.gamma_expected_log(2.0, 3.0)
    W = random_spd(rng, 2)
    w = dist.Wishart(W, 4.0)
    assert w.entropy() == dist.wishart_entropy(W, 4.0)
    assert w.kl(w) == pytest.approx(0.0, abs=1e-12)
    nw = dist.NormalWishart(np.zeros(2), 1.0, W, 4.0)
    assert nw.kl(nw) == pytest.approx(0.0, abs=1e-12)
    ng = dist.NormalGamma(np.zeros(2), np.ones(2), np.ones(2), np.ones(2))
    assert ng.expected_log_likelihood(np.zeros((3, 2))).shape == (3,)
    gs = dist.Gaussian(np.zeros(2), W)
    assert gs.entropy() == dist.gaussian_entropy(W)


def test_inputs_not_modified_and_reproducible():
    rng = np.random.default_rng(71)
    D = 2
    args = [rng.standard_normal(D), np.array(1.5), random_spd(rng, D), np.array(4.0)]
    copies = [x.copy() for x in args]
    dist.normal_wishart_kl(*args, *args)
    dist.normal_wishart_expected_log_likelihood(rng.standard_normal((3, D)), *args)
    s1 = dist.normal_wishart_sample(*args, 123, size=2)
    s2 = dist.normal_wishart_sample(*args, np.random.default_rng(123), size=2)
    for x, c in zip(args, copies):
        np.testing.assert_array_equal(x, c)
    np.testing.assert_array_equal(s1[0], s2[0])
    np.testing.assert_array_equal(s1[1], s2[1])
