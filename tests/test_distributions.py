"""Tests of the conjugate families in ``sklearn_vb._distributions``.

Oracles: scipy.stats densities and entropies, closed forms, and Monte Carlo
averages with a tolerance of a few standard errors (fixed seeds).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import digamma, gammaln

from sklearn_vb import _distributions as dist

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
