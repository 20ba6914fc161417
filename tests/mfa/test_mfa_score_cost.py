"""The mechanisms that make the evidence scores of a fitted mixture of factor analysers
cost about a fit, against exact oracles: the point E step against the direct formula,
the exact per-case gradient Gram matrix against finite differences, the rank it gives
against the perturbation estimate, and the seeded determinism of the scores."""

import warnings

import numpy as np
import pytest

from sklearn_vb.mfa._point import factor_posterior, point_e_step
from sklearn_vb.mfa import VBMixtureFactorAnalysers
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring import _dimension
from sklearn_vb.scoring._dimension import effective_dimension


@pytest.fixture(scope="module")
def fitted():
    """Three analysers with up to two factors, p = 5, n = 24 (n < D, the exact-rank case)."""
    rng = np.random.default_rng(4)
    X = np.vstack([rng.standard_normal((8, 2)) @ rng.standard_normal((2, 5)) + 3 * c
                   for c in (-1.0, 0.0, 1.0)])
    est = VBMixtureFactorAnalysers(n_components=3, n_factors=2, search=False, max_iter=60,
                                   random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    model = scoring_model_for(est)
    return est, model, X, model.prepare_data(X)


def _perturbed_point(model, seed):
    """A point near the fitted posterior's mean with every loading column non-zero."""
    rng = np.random.default_rng(seed)
    th = model.variational_posterior().mean()
    w, lam = model.split(th)
    lam = lam + 0.3 * rng.standard_normal(lam.shape)
    w = w + 0.1 * rng.random(w.shape)
    return model.join(w / w.sum(), lam)


def test_point_e_step_factor_means_match_the_direct_formula():
    rng = np.random.default_rng(0)
    N, S, p, K = 30, 3, 6, 2
    Z = rng.standard_normal((N, p))
    lam = rng.standard_normal((S, p, K + 1))
    psi = rng.uniform(0.5, 2.0, p)
    w = rng.dirichlet(np.ones(S))
    e = point_e_step(Z, w, lam, psi)
    sigma, _ = factor_posterior(lam, psi)
    for s in range(S):
        direct = (Z - lam[s, :, K]) / psi @ lam[s, :, :K] @ sigma[s]
        np.testing.assert_allclose(e.xbar[:, s], direct, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["incomplete", "complete"])
def test_gradient_gram_matches_finite_differences(fitted, kind):
    _, model, _, data = fitted
    th = _perturbed_point(model, 1)
    space = model.param_space
    phi0 = space.to_unconstrained(th)[0]
    completion = model.random_completion(data, np.random.default_rng(2)) \
        if kind == "complete" else None

    def per_case(phi):
        params, _ = space.from_unconstrained(phi)
        if completion is None:
            return model.log_likelihood_per_case(params, data)
        return model.log_complete_joint_per_case(params, completion, data)

    eps = 1e-5
    E = np.eye(phi0.size) * eps
    J = ((per_case(phi0 + E) - per_case(phi0 - E)) / (2 * eps)).T  # (n, D)
    G = model.per_case_gradient_gram(th, data, completion=completion)
    np.testing.assert_allclose(G, J @ J.T, rtol=1e-6, atol=1e-6 * np.abs(G).max())


@pytest.mark.parametrize("kind", ["incomplete", "complete"])
def test_exact_rank_equals_the_perturbation_estimate(fitted, kind, monkeypatch):
    _, model, _, data = fitted
    th = _perturbed_point(model, 3)
    D = model.param_space.size
    assert model.n_cases(data) <= D  # the exact path is taken
    exact = effective_dimension(model, data, th, np.random.default_rng(0), kind=kind)
    monkeypatch.setattr(_dimension, "GRAM_MAX_BYTES", 0)  # force the perturbation path
    perturbed = effective_dimension(model, data, th, np.random.default_rng(0), kind=kind)
    assert exact == perturbed
    assert 0 < exact <= model.n_cases(data)


@pytest.mark.parametrize("method", ["bic", "cs", "cs_dagger"])
def test_a_seeded_estimator_gets_the_same_score_twice(fitted, method):
    est, _, X, _ = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = score(est, X, method).log_evidence
        b = score(est, X, method).log_evidence
    assert a == b and np.isfinite(a)


@pytest.mark.parametrize("kind", ["map", "ml"])
def test_point_em_from_the_fitted_mode_never_lowers_the_objective(fitted, kind):
    """Every point the EM continues from (plain EM steps and accepted SQUAREM jumps) has
    an objective at least that of the one before, and the kept point is at least as good
    as the fitted posterior's mode it started from."""
    from sklearn_vb._core.evidence.point_em import em_climb

    _, model, _, data = fitted
    start = model.variational_posterior().mean()

    def evaluate(theta):
        e = model.e_step(theta, data)
        return model._objective(theta, e.loglik, kind, "softmax"), e.stats

    trace = []
    em_climb(start, evaluate, lambda st, th: model.point_from_stats(st, th, kind, "softmax"),
             200, 0.0, space=model.param_space, trace=trace)
    steps = np.diff(trace)
    assert len(trace) > 5
    assert np.all(steps >= -1e-9 * (1.0 + np.abs(np.asarray(trace[1:]))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = model.fit_point(data, kind=kind, rng=np.random.default_rng(0))
    assert evaluate(best)[0] >= evaluate(start)[0] - 1e-9
    assert evaluate(best)[0] >= trace[-1] - 1e-6 * abs(trace[-1])


def test_point_e_step_log_likelihood_matches_scipy():
    from scipy import stats
    from scipy.special import logsumexp

    rng = np.random.default_rng(5)
    N, S, p, K = 25, 3, 5, 2
    Z = rng.standard_normal((N, p)) * 2.0
    lam = rng.standard_normal((S, p, K + 1))
    psi = rng.uniform(0.3, 2.0, p)
    w = rng.dirichlet(np.ones(S))
    comps = [np.log(w[s]) + stats.multivariate_normal(
        lam[s, :, K], lam[s, :, :K] @ lam[s, :, :K].T + np.diag(psi)).logpdf(Z)
        for s in range(S)]
    e = point_e_step(Z, w, lam, psi)
    assert e.loglik == pytest.approx(float(np.sum(logsumexp(comps, axis=0))), rel=1e-12)
    np.testing.assert_allclose(e.resp, np.exp(np.array(comps) - logsumexp(comps, axis=0)).T,
                               rtol=1e-10, atol=1e-14)


def test_point_scores_report_progress_and_keep_their_value(fitted, capsys):
    from sklearn_vb.scoring._point_cache import clear_point_cache

    est, _, X, _ = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clear_point_cache()
        quiet = score(est, X, "bic").log_evidence
        capsys.readouterr()
        clear_point_cache()
        loud = score(est, X, "bic", verbose=2).log_evidence
    out = capsys.readouterr().out
    assert "[ml point of MFAScoringModel]" in out and "3/3" in out
    assert loud == quiet
