"""VBMixtureFactorAnalysers(method="ml", search=True): the ML MFA grown by birth search,
births accepted on BIC (Beal 2003, §4.6.2; sklearn_vb.mfa._ml_birth_search).

Oracles: the BIC of every model the search passed through, recomputed here from the
recorded log-likelihood and the free-parameter count of thesis eq. 4.89; ln p(X | θ) of
the returned point evaluated with scipy's multivariate normal; with births disabled
(``max_components`` equal to the starting size) the search is the plain EM fit of
``search=False`` followed by more EM, so its likelihood can only be higher.
"""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from sklearn_vb import VBMixtureFactorAnalysers
from sklearn_vb.mfa import fa_free_parameters
from sklearn_vb.mfa._ml_birth_search import empirical_kl

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def three_clusters(seed, n=80, p=5):
    """Three well-separated clusters, each spread along one random direction."""
    rng = np.random.default_rng(seed)
    parts = []
    for c in range(3):
        centre = np.zeros(p)
        centre[c] = 12.0
        d = rng.standard_normal(p)
        parts.append(centre + rng.standard_normal((n, 1)) * 2.0 * d / np.linalg.norm(d)
                     + 0.3 * rng.standard_normal((n, p)))
    return np.concatenate(parts)


def ml_search(**kw):
    kw.setdefault("n_factors", 1)
    kw.setdefault("random_state", 0)
    return VBMixtureFactorAnalysers(method="ml", search=True, **kw)


def log_likelihood(est, X):
    dens = np.column_stack([
        np.log(w) + multivariate_normal(m, L @ L.T + np.diag(est.noise_variance_)).logpdf(X)
        for w, m, L in zip(est.weights_, est.means_, est.loadings_)])
    return float(np.sum(logsumexp(dens, axis=1)))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_finds_three_well_separated_clusters(seed):
    X = three_clusters(seed)
    est = ml_search(random_state=seed).fit(X)
    assert est.n_components_ == 3
    # every analyser holds one cluster: the weights are near 1/3 each
    assert np.all(np.abs(est.weights_ - 1.0 / 3.0) < 0.05)
    assert est.n_births_accepted_ == 2
    assert est.n_births_proposed_ > est.n_births_accepted_  # the search tried beyond 3


@pytest.mark.parametrize("seed", [0, 4])
def test_accepted_births_raise_likelihood_and_lower_bic(seed):
    X = three_clusters(seed, n=60)
    est = ml_search(random_state=seed).fit(X)
    h = est.search_history_
    n, p = X.shape
    moves = h["moves"]
    assert moves, "the search proposed no birth"
    for epoch, parent, ok, before, after in moves:
        if ok:
            assert after > before  # never a lower likelihood across an accepted birth
    # the log-likelihood at every accept is above that of the state it grew from
    accepted = [F for F, ev in zip(h["bound"], h["event"]) if ev == "accept"]
    assert all(b > a for a, b in zip(accepted, accepted[1:]))
    # the recorded BIC is -2 ln p + D ln n with D of eq. 4.89 (k = 1 everywhere)
    expected = [-2.0 * F + fa_free_parameters([1] * S, p) * np.log(n)
                for F, S in zip(h["bound"], h["n_components"])]
    np.testing.assert_allclose(h["bic"], expected, rtol=1e-12)
    # each accepted state has a lower BIC than the one before it
    bic_accept = [b for b, ev in zip(h["bic"], h["event"]) if ev == "accept"]
    assert all(b < a for a, b in zip(bic_accept, bic_accept[1:]))
    # the returned model has the smallest BIC of every model the search passed through
    bic = est.bic(X)
    assert bic == pytest.approx(np.min(h["bic"]), rel=1e-9, abs=1e-6)
    assert bic <= np.min(h["bic"]) + 1e-6 * abs(bic)
    # and the likelihood it reports is that of the returned point
    assert est.log_likelihood_ == pytest.approx(log_likelihood(est, X), rel=1e-9)


def test_no_births_is_the_em_fit():
    X = three_clusters(5, n=50)
    fixed = VBMixtureFactorAnalysers(2, n_factors=1, method="ml", search=False,
                                     random_state=3, tol=1e-8, max_iter=3000).fit(X)
    searched = ml_search(n_components=2, max_components=2, random_state=3, tol=1e-8,
                         max_iter=3000).fit(X)
    assert searched.n_births_proposed_ == 0
    assert searched.n_components_ == 2
    # the same start and the same EM iterations: the same path of log-likelihoods (the
    # two runs differ only in where they stop: the search's epoch and polish rules)
    path = searched.search_history_["bound"]
    m = min(len(path), len(fixed.lower_bounds_))
    assert m > 10
    np.testing.assert_allclose(path[:m], fixed.lower_bounds_[:m], rtol=1e-12)
    assert searched.log_likelihood_ == pytest.approx(fixed.log_likelihood_, rel=1e-6)
    np.testing.assert_allclose(np.sort(searched.weights_), np.sort(fixed.weights_), atol=1e-3)


def test_reproducible_and_inputs_untouched():
    X = three_clusters(6, n=40)
    X[0, 0] = np.nan  # missing entries are marginalised by the point fits
    X0 = X.copy()
    a = ml_search(random_state=11, split="spatial").fit(X)
    b = ml_search(random_state=11, split="spatial").fit(X)
    np.testing.assert_array_equal(X, X0)
    assert a.n_components_ == b.n_components_
    np.testing.assert_array_equal(a.search_history_["bound"], b.search_history_["bound"])
    np.testing.assert_array_equal(a.means_, b.means_)


def test_refusals_name_the_argument():
    X = three_clusters(0, n=20)
    with pytest.raises(ValueError, match="search=False"):
        VBMixtureFactorAnalysers(method="map", search=True).fit(X)
    with pytest.raises(ValueError, match="learning_method"):
        VBMixtureFactorAnalysers(method="ml", search=True, learning_method="online").fit(X)


def test_empirical_kl_orders_the_worst_fit_first():
    """One analyser for two clusters, one for the third: the shared one fits its local
    data worse (the empirical KL of Ueda et al. 2000 is larger)."""
    X = three_clusters(7, n=60)
    est = VBMixtureFactorAnalysers(2, n_factors=1, method="ml", search=False,
                                   random_state=0).fit(X)
    labels = est.predict(X)
    sizes = np.bincount(labels, minlength=2)
    if sizes.max() < 100:  # EM split the clusters otherwise: not the case tested
        pytest.skip("EM did not merge two clusters")
    from sklearn_vb.mfa._estimator import _fit_data
    data = _fit_data(X, True, "auto")
    kl = empirical_kl(est._vb_, data)
    assert np.argmax(kl) == np.argmax(sizes)


def test_progress_is_shown(capsys):
    X = three_clusters(1, n=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml_search(verbose=1).fit(X)
    out = capsys.readouterr()
    assert (out.out + out.err).strip()
