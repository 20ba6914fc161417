"""The point EM behind BIC, BICp and CS: starts at the fitted posterior's point, seeded
restarts, SQUAREM extrapolation that never lowers the objective, the ConvergenceWarning
at the iteration cap, and scores seeded by the estimator's ``random_state``."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_vb import (VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem,
                        VBMixtureFactorAnalysers)
from sklearn_vb.datasets import beal_true_structure, make_beal_dag
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._point_cache import clear_point_cache
from sklearn_vb.hmm._scoring_dirichlet import DirichletCategoricalHMM
from sklearn_vb._core.evidence.point_em import em_climb


def _hmm_data(K=3, V=6, lengths=(40, 40, 40), seed=0):
    r = np.random.default_rng(seed)
    A = 0.7 * np.eye(K) + 0.3 * r.dirichlet(np.ones(K), size=K)
    B = r.dirichlet(np.full(V, 0.4), size=K)
    X, _, L = make_hmm_sequences(np.ones(K) / K, A, B, list(lengths), random_state=seed)
    return X, L


@pytest.fixture(scope="module")
def hmm():
    X, L = _hmm_data()
    est = VBHiddenMarkov(n_components=3, n_symbols=6, n_init=4, random_state=3).fit(X, lengths=L)
    return est, X, {"lengths": L}


@pytest.fixture(scope="module")
def dag():
    X = make_beal_dag(80, random_state=0)
    est = VBDiscreteDAG(*beal_true_structure(), n_init=2, random_state=5).fit(X)
    return est, X, {}


@pytest.fixture(scope="module")
def mfa():
    r = np.random.default_rng(0)
    X = np.vstack([r.normal(size=(40, 1)) @ [[2.0, 1.0, -1.0, 0.5]]
                   + 0.3 * r.normal(size=(40, 4)),
                   r.normal(size=(40, 4)) + 5.0])
    est = VBMixtureFactorAnalysers(n_components=2, search=False, max_iter=60,
                                   random_state=7).fit(X)
    return est, X, {}


@pytest.fixture(scope="module")
def lds():
    r = np.random.default_rng(1)
    x = np.zeros((60, 2))
    for t in range(1, 60):
        x[t] = [[0.9, -0.2], [0.2, 0.9]] @ x[t - 1] + r.normal(scale=0.5, size=2)
    X = x @ r.normal(size=(2, 3)) + r.normal(scale=0.3, size=(60, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the fit's, not the score's
        est = VBLinearDynamicalSystem(2, max_iter=200, random_state=11).fit(X)
    return est, X, {}


def _quiet_score(est, X, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return score(est, X, method, **kw).log_evidence


# ------------------------------------------------------------------- seeded scores


@pytest.mark.parametrize("family", ["hmm", "dag", "mfa", "lds"])
def test_seeded_estimator_gives_the_same_score_on_every_call(family, request):
    """Every scorer that draws random numbers is seeded by the estimator's
    ``random_state``: two calls agree exactly, and equal the call with that seed passed
    explicitly; another explicit seed changes an importance-sampling estimate."""
    est, X, fp = request.getfixturevalue(family)
    for method, kw in [("bic", {}), ("bicp", {}), ("cs", {}), ("is", {"n_samples": 64})]:
        clear_point_cache()  # the EM itself is repeatable, not only its remembered result
        first = _quiet_score(est, X, method, **kw, **fp)
        clear_point_cache()
        assert _quiet_score(est, X, method, **kw, **fp) == first, method
        assert _quiet_score(est, X, method, random_state=est.random_state, **kw, **fp) == first
    other = _quiet_score(est, X, "is", n_samples=64, random_state=est.random_state + 1, **fp)
    assert other != _quiet_score(est, X, "is", n_samples=64, **fp)


def test_cs_dagger_is_seeded_by_the_estimator(dag):
    est, X, _ = dag
    first = score(est, X, "cs_dagger", R=20)
    assert score(est, X, "cs_dagger", R=20).log_evidence == first.log_evidence
    assert first.diagnostics["d"] >= 1


def test_unseeded_estimator_gives_fresh_draws(hmm):
    est, X, fp = hmm
    est = VBHiddenMarkov(n_components=3, n_symbols=6, random_state=None).fit(X, **fp)
    values = {_quiet_score(est, X, "is", n_samples=32, **fp) for _ in range(3)}
    assert len(values) > 1


# ------------------------------------------------------------------- the starts


def _objective_of(model, theta, data):
    return model.point_objective(theta, model.e_step(theta, data).loglik)


def _prior_draw_search(model, data, n_init, seed):
    """The previous behaviour: EM from ``n_init`` prior draws (no fitted q)."""
    model._fitted_posterior = lambda X: None
    try:
        theta = model.fit_point(data, rng=np.random.default_rng(seed), n_init=n_init,
                                max_iter=5000, tol_per_case=1e-12)
    finally:
        del model._fitted_posterior
    return _objective_of(model, theta, data)


@pytest.fixture(scope="module")
def hmm_long():
    X, L = _hmm_data(lengths=(200, 200, 200), seed=4)
    est = VBHiddenMarkov(n_components=3, n_symbols=6, n_init=3, random_state=0).fit(X, lengths=L)
    return est, X, {"lengths": L}


@pytest.mark.parametrize("family", ["hmm_long"])
def test_posterior_point_start_reaches_the_map_of_a_many_restart_search(family, request):
    """One run from the fitted posterior's point reaches a MAP objective at least as
    high as three prior-draw restarts (the previous default) and as the best of 40
    prior-draw restarts run to convergence (an oracle for the global MAP)."""
    est, X, fp = request.getfixturevalue(family)
    model = scoring_model_for(est)
    data = model.prepare_data(X, **fp)
    kw = dict(max_iter=5000, tol_per_case=1e-12)
    first = _objective_of(model, model.fit_point(data, rng=0, n_init=1, **kw), data)
    assert model.last_point_run_.converged
    assert first >= _prior_draw_search(model, data, 3, seed=1) - 1e-6
    assert first >= _prior_draw_search(model, data, 40, seed=2) - 1e-6


@pytest.mark.parametrize("family", ["hmm", "dag"])
def test_restarts_find_a_map_outside_the_vb_basin(family, request):
    """On little data the global MAP can lie outside VB's basin (VB prefers states
    with posterior mass, the MAP sharp ones; the HMM's default prior is sparse): the
    posterior-point start alone stops below the best of 40 prior-draw restarts; the
    screened restarts of ``fit_point`` (``n_init=40``) reach it."""
    est, X, fp = request.getfixturevalue(family)
    model = scoring_model_for(est)
    data = model.prepare_data(X, **fp)
    kw = dict(max_iter=5000, tol_per_case=1e-12)
    first = _objective_of(model, model.fit_point(data, rng=0, n_init=1, **kw), data)
    oracle = _prior_draw_search(model, data, 40, seed=2)
    assert first < oracle - 0.1
    best = _objective_of(model, model.fit_point(data, rng=0, n_init=40, **kw), data)
    assert best >= oracle - 1e-6


def test_first_start_is_the_em_point_of_q(hmm):
    """For Dirichlet rows the first start is the M step of q's counts: the normalised
    posterior concentrations in the softmax basis, their mode in the natural basis."""
    est, X, fp = hmm
    model = scoring_model_for(est)
    q = model.variational_posterior()
    soft = model.point_of_posterior(q, "map", "softmax")
    nat = model.point_of_posterior(q, "map", "natural")
    w = est.transmat_posterior_
    np.testing.assert_allclose(soft["A"][0], w / w.sum(axis=1, keepdims=True))
    m = np.maximum(w - 1.0, 1e-300)
    np.testing.assert_allclose(nat["A"][0], m / m.sum(axis=1, keepdims=True))


# ------------------------------------------------------------------- SQUAREM


@pytest.mark.parametrize("seed", range(4))
def test_squarem_never_lowers_the_objective_and_saves_e_steps(seed):
    """On random HMMs, EM with SQUAREM extrapolation: every point the run continues from
    has an objective at least that of the previous one, it ends at least as high as
    plain EM with the same tolerance, in fewer E steps."""
    X, L = _hmm_data(K=3, V=5, lengths=(60, 60), seed=seed)
    model = DirichletCategoricalHMM(3, 5, alpha=1.5)
    data = model.prepare_data(X, lengths=L)
    theta0 = model.sample_prior(np.random.default_rng(seed), 1)

    def evaluate(theta):
        e = model.e_step(theta, data)
        return model.point_objective(theta, e.loglik), e.stats

    def m_step(stats, theta):
        return model.point_from_stats(stats)

    runs = {}
    for name, space in (("plain", None), ("squarem", model.param_space)):
        trace = []
        runs[name] = (em_climb(theta0, evaluate, m_step, 20000, 1e-9, space=space, trace=trace),
                      trace)
    run, trace = runs["squarem"]
    assert np.all(np.diff(trace) >= -1e-9 * (1 + abs(trace[-1])))
    assert run.converged and runs["plain"][0].converged
    assert run.objective >= runs["plain"][0].objective - 1e-6
    assert run.n_iter < runs["plain"][0].n_iter


# ------------------------------------------------------------------- the warning


def test_convergence_warning_at_the_iteration_cap(hmm):
    est, X, fp = hmm
    model = scoring_model_for(est)
    data = model.prepare_data(X, **fp)
    with pytest.warns(ConvergenceWarning, match="HMMScoringModel.*max_iter=2 "):
        model.fit_point(data, rng=0, n_init=1, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit_point(data, rng=0, n_init=2)  # converges with the defaults


def test_scorer_names_itself_in_the_convergence_warning(hmm, monkeypatch):
    est, X, fp = hmm
    cls = type(scoring_model_for(est))
    fit_point = cls.fit_point
    monkeypatch.setattr(cls, "fit_point",
                        lambda self, data, **kw: fit_point(self, data, **{**kw, "max_iter": 3}))
    for method in ("bic", "cs"):
        with pytest.warns(ConvergenceWarning, match=f"scorer '{method}'.*max_iter=3 "):
            score(est, X, method, **fp)


# ------------------------------------------------------------------- CS-dagger pieces


def test_categorical_hmm_per_case_and_complete_joint_against_enumeration():
    """Per-frame likelihoods sum to the likelihood; the complete-data log joint along a
    path, summed over the frames and log-sum-exp'ed over all K^T paths, is the likelihood
    (two sequences, K = 2, T = 7: 128 paths)."""
    import itertools

    from scipy.special import logsumexp

    X, L = _hmm_data(K=2, V=3, lengths=(3, 4), seed=2)
    model = DirichletCategoricalHMM(2, 3, alpha=1.0)
    data = model.prepare_data(X, lengths=L)
    theta = model.sample_prior(np.random.default_rng(0), 3)
    ll = model.log_likelihood(theta, data)
    np.testing.assert_allclose(model.log_likelihood_per_case(theta, data).sum(axis=1), ll)
    paths = [np.array(z) for z in itertools.product(range(2), repeat=7)]
    joint = np.array([model.log_complete_joint_per_case(theta, z, data).sum(axis=1)
                      for z in paths])
    np.testing.assert_allclose(logsumexp(joint, axis=0), ll)
    z = model.random_completion(data, np.random.default_rng(1))
    assert z.shape == (7,) and set(np.unique(z)) <= {0, 1}


def test_cs_dagger_on_categorical_hmm_and_mfa(hmm, mfa):
    """CS-dagger runs on the categorical HMM and MFA; the dimensions are at most the
    free parameters of the scoring model's space."""
    for est, X, fp in (hmm, mfa):
        model = scoring_model_for(est)
        r = score(est, X, "cs_dagger", R=60, **fp)
        cs = score(est, X, "cs", **fp).log_evidence
        d, dc, n = r.diagnostics["d"], r.diagnostics["d_complete"], r.diagnostics["n"]
        assert 1 <= d <= dc <= model.param_space.size
        assert r.log_evidence == pytest.approx(cs + 0.5 * (dc - d) * np.log(n))


def test_mfa_complete_joint_per_case_matches_scipy(mfa):
    from scipy.stats import multivariate_normal as mvn

    est, X, _ = mfa
    model = scoring_model_for(est)
    assert model.K >= 1
    data = model.prepare_data(X)
    theta = model.sample_prior(np.random.default_rng(1), 2)
    model.active = np.ones_like(model.active)  # every factor takes part
    labels, factors = model.random_completion(data, np.random.default_rng(2))
    joint = model.log_complete_joint_per_case(theta, (labels, factors), data)
    w, lam = model.split(theta)
    K = model.K
    for c, i in [(0, 3), (1, 50)]:
        s, x, Lam = labels[i], factors[i], lam[c, labels[i]]
        ref = (np.log(w[c, s]) - 0.5 * (K * np.log(2 * np.pi) + x @ x)
               + mvn.logpdf(data.Z[i], Lam[:, :K] @ x + Lam[:, K], np.diag(model.psi))
               + data.log_jac)
        assert joint[c, i] == pytest.approx(ref, rel=1e-12)


def test_effective_dimension_is_not_capped_by_the_number_of_perturbations(hmm):
    """With fewer perturbations than parameters the rank would be capped at ``R``; the
    estimate takes at least as many perturbations as the space has dimensions."""
    from sklearn_vb.scoring._dimension import effective_dimension

    est, X, fp = hmm
    model = scoring_model_for(est)
    data = model.prepare_data(X, **fp)
    theta = model.variational_posterior().mean()
    D = model.param_space.size
    full = effective_dimension(model, data, theta, np.random.default_rng(0), R=D + 20)
    assert effective_dimension(model, data, theta, np.random.default_rng(0), R=5) == full > 5
