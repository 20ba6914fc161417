"""ScoringModel of the Gaussian-emission VBHiddenMarkov against exact oracles.

Oracles: brute-force path enumeration for the likelihood and the E step, scipy's
Wishart / Gamma / Gaussian / Dirichlet densities for the prior and q, finite differences
for the Jacobian of the Cholesky coordinates, the score identity E[grad ln p] = 0 for the
samplers, conjugacy identities (the collapsed bound of a conjugate VBM step equals the
complete-data evidence), and the exact evidence of tiny problems by
enumerating paths with sequential Student-t predictives (independent of the model's
closed-form complete-data evidence).
"""

import itertools

import numpy as np
import pytest
from scipy import stats as st
from scipy.special import logsumexp

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.scoring import ScoringModel, VariationalPosterior, score
from sklearn_vb.scoring._cs import cs_value
from sklearn_vb.hmm.scoring_model import GaussianHMMScoringModel
from tests.oracles.reference_models import FittedReference

# tiny 1-d problem: two sequences, 8 frames, K = 2 -> 256 paths
Y1 = np.array([-1.2, -0.8, -1.5, 1.1, 0.9, 1.4, -1.0, 1.2])[:, None]
L1 = [5, 3]
# tiny 2-d problem: 7 frames
Y2 = np.array([[-1.0, 0.3], [-1.3, 0.1], [1.2, -0.4], [0.9, -0.8], [1.5, -0.2],
               [-0.7, 0.6], [1.1, -0.5]])
L2 = [4, 3]
PRIOR = dict(means_prior=0.0, beta_prior=0.5, startprob_prior=1.0, transmat_prior=0.7)


def tolerance_ok(est, se, exact):
    err = abs(est - exact)
    return err <= max(0.05, 4 * se) and err <= 0.5


def fit(X, lengths, K, cov, **kw):
    D = X.shape[1]
    params = dict(PRIOR, dof_prior=D + 1.0, scale_prior=(1.5 * np.eye(D) if cov == "full"
                                                          else np.full(D, 1.5)))
    params.update(kw)
    est = VBHiddenMarkov(K, emission="gaussian", covariance_type=cov, n_init=3, max_iter=500,
                         tol=1e-10, random_state=0, **params)
    return est.fit(X, lengths=lengths)


def wrapped(model):
    est = model.estimator
    return FittedReference(model, est.lower_bounds_, model.variational_posterior())


def precision_matrices(model, params):
    L = model.family.precision_cholesky(params)
    return L @ np.swapaxes(L, -1, -2)


# ---------------------------------------------------------------------------------------
# independent oracles
# ---------------------------------------------------------------------------------------


def brute_force_loglik(model, params, X, lengths):
    """ln sum over all paths of p(path, X | theta), one value per parameter set, plus the
    expected state occupancies."""
    K = model.K
    Lam = precision_matrices(model, params)
    mu = params["means"]
    out, occ = [], []
    ends = np.cumsum(lengths)
    starts = ends - np.asarray(lengths)
    first = np.zeros(len(X), bool)
    first[starts] = True
    paths = np.array(list(itertools.product(range(K), repeat=len(X))))
    for c in range(mu.shape[0]):
        le = np.stack([st.multivariate_normal(mu[c, k], np.linalg.inv(Lam[c, k])).logpdf(X)
                       for k in range(K)], axis=1).reshape(len(X), K)
        if K > 1:
            lpi, lA = np.log(params["startprob"][c]), np.log(params["transmat"][c])
        else:
            lpi, lA = np.zeros(1), np.zeros((1, 1))
        lw = le[np.arange(len(X)), paths].sum(axis=1)
        lw = lw + lpi[paths[:, first]].sum(axis=1)
        inner = ~first[1:]
        lw = lw + lA[paths[:, :-1][:, inner], paths[:, 1:][:, inner]].sum(axis=1)
        out.append(logsumexp(lw))
        w = np.exp(lw - logsumexp(lw))
        occ.append(np.array([(w[:, None] * (paths == k)).sum() for k in range(K)]))
    return np.array(out), np.array(occ)


def brute_force_evidence(model, X, lengths):
    """Exact ln p(X): every path, Polya-urn probabilities of the path and sequential
    Student-t predictives of each state's frames (Normal-Wishart / Normal-Gamma)."""
    K, D = model.K, model.D
    ends = np.cumsum(lengths)
    starts = set((ends - np.asarray(lengths)).tolist())
    vals = []
    for path in itertools.product(range(K), repeat=len(X)):
        lp = 0.0
        n_pi = np.zeros(K)
        n_A = np.zeros((K, K))
        for t, s in enumerate(path):
            if K == 1:
                continue
            if t in starts:
                u = model.startprob_prior + n_pi
                lp += np.log(u[s] / u.sum())
                n_pi[s] += 1
            else:
                u = model.transmat_prior[path[t - 1]] + n_A[path[t - 1]]
                lp += np.log(u[s] / u.sum())
                n_A[path[t - 1], s] += 1
        for k in range(K):
            ys = X[np.array(path) == k]
            m, beta, nu = model.m0.copy(), model.beta0, model.nu0
            if model.covariance_type == "full":
                S = model.scale0.copy()
                for y in ys:
                    df = nu - D + 1
                    lp += st.multivariate_t(m, S * (beta + 1) / (beta * df), df=df).logpdf(y)
                    S = S + beta / (beta + 1) * np.outer(y - m, y - m)
                    m, beta, nu = (beta * m + y) / (beta + 1), beta + 1, nu + 1
            else:
                a, b = 0.5 * nu * np.ones(D), 0.5 * model.scale0.copy()
                for y in ys:
                    lp += st.t.logpdf(y, df=2 * a, loc=m,
                                      scale=np.sqrt(b * (beta + 1) / (a * beta))).sum()
                    b = b + beta * (y - m) ** 2 / (2 * (beta + 1))
                    m, beta, a = (beta * m + y) / (beta + 1), beta + 1, a + 0.5
        vals.append(lp)
    return float(logsumexp(vals))


def scipy_log_density(model, dist, params):
    """ln density of the prior or of q in the model's coordinates via scipy."""
    em = dist.emission
    out = np.zeros(params["means"].shape[0])
    for c in range(out.size):
        v = 0.0
        if model.K > 1:
            v += st.dirichlet.logpdf(params["startprob"][c], dist.startprob)
            v += sum(st.dirichlet.logpdf(params["transmat"][c, k], dist.transmat[k])
                     for k in range(model.K))
        for k in range(model.K):
            mu = params["means"][c, k]
            if model.covariance_type == "full":
                L = model.family.precision_cholesky({b: params[b][c:c + 1] for b in params})[0, k]
                Lam = L @ L.T
                v += st.wishart.logpdf(Lam, df=em.nu[k], scale=np.linalg.inv(em.S[k]))
                v += st.multivariate_normal.logpdf(mu, em.m[k], np.linalg.inv(em.beta[k] * Lam))
                # Jacobian of Lambda = L L^T: 2^D prod_i L_ii^(D - i + 1)
                Dm = model.D
                v += Dm * np.log(2) + sum((Dm - i) * np.log(L[i, i]) for i in range(Dm))
            else:
                lam = params["precisions"][c, k]
                v += st.gamma.logpdf(lam, em.a[k], scale=1 / em.b[k]).sum()
                v += st.norm.logpdf(mu, em.m[k], 1 / np.sqrt(em.beta[k] * lam)).sum()
        out[c] = v
    return out


def score_identity_z(log_density, space, params, h=1e-5):
    """z-scores of the Monte Carlo means of grad_phi [ln p(theta(phi)) + ln|J|] (zero in
    expectation when ``params`` are draws from the density)."""
    phi = space.to_unconstrained(params)
    M, d = phi.shape
    grads = np.empty((M, d))
    for j in range(d):
        vals = []
        for sgn in (1.0, -1.0):
            p = phi.copy()
            p[:, j] += sgn * h
            th, ld = space.from_unconstrained(p)
            vals.append(log_density(th) + ld)
        grads[:, j] = (vals[0] - vals[1]) / (2 * h)
    return grads.mean(axis=0) / (grads.std(axis=0) / np.sqrt(M))


# ---------------------------------------------------------------------------------------
# fitted models (module scope: numba compilation and fits once)
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_full():
    return GaussianHMMScoringModel(fit(Y1, L1, 2, "full"))


@pytest.fixture(scope="module")
def tiny_diag():
    return GaussianHMMScoringModel(fit(Y1, L1, 2, "diag"))


@pytest.fixture(scope="module")
def full2d():
    return GaussianHMMScoringModel(fit(Y2, L2, 2, "full"))


@pytest.fixture(scope="module")
def diag2d():
    return GaussianHMMScoringModel(fit(Y2, L2, 3, "diag"))


# ---------------------------------------------------------------------------------------
# likelihood and parameter counting
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["full2d", "diag2d", "tiny_full"])
def test_likelihood_equals_path_enumeration(which, request):
    model = request.getfixturevalue(which)
    X, lengths = (Y1, L1) if which.startswith("tiny") else (Y2, L2)
    data = model.prepare_data(X, lengths=lengths)
    th = model.sample_prior(np.random.default_rng(1), 6)
    bf, occ = brute_force_loglik(model, th, X, lengths)
    ll = model.log_likelihood(th, data)
    np.testing.assert_allclose(ll, bf, rtol=1e-10, atol=1e-9)
    per = model.log_likelihood_per_case(th, data)
    assert per.shape == (6, len(X))
    np.testing.assert_allclose(per.sum(axis=1), bf, rtol=1e-10, atol=1e-9)
    # sequence_ids describe the same data
    ids = np.repeat(np.arange(len(lengths)), lengths)
    np.testing.assert_allclose(model.log_likelihood(th, model.prepare_data(X, sequence_ids=ids)), ll)
    # the exact E step: same likelihood and the enumerated state occupancies
    for c in range(2):
        e = model.e_step({k: v[c:c + 1] for k, v in th.items()}, data)
        assert e.loglik == pytest.approx(bf[c], abs=1e-9)
        np.testing.assert_allclose(e.stats.emission.N, occ[c], atol=1e-9)
    # the estimator's plug-in likelihood at the posterior mean, per sequence
    est = model.estimator
    mean = model.variational_posterior().mean()
    np.testing.assert_allclose(
        model.log_likelihood_per_sequence(mean, data)[0],
        est.score_samples(X, lengths=lengths, per="sequence"), rtol=1e-10)
    np.testing.assert_allclose(precision_matrices(model, mean)[0], np.linalg.inv(est.covars_)
                               if est.covariance_type == "full"
                               else np.stack([np.diag(1 / c) for c in est.covars_]), rtol=1e-10)


def test_counts_aliases_and_validation(full2d, diag2d, tiny_diag):
    assert isinstance(full2d, ScoringModel)
    assert isinstance(full2d.variational_posterior(), VariationalPosterior)
    assert full2d.n_parameters() == 1 + 2 + 2 * (2 + 3)
    assert diag2d.n_parameters() == 2 + 6 + 3 * (2 + 2)
    assert tiny_diag.n_parameters() == 1 + 2 + 2 * 2
    assert full2d.n_aliases() == 2 and diag2d.n_aliases() == 6
    assert full2d.param_space.size == full2d.n_parameters()
    assert diag2d.param_space.size == diag2d.n_parameters()
    assert full2d.n_cases(full2d.prepare_data(Y2, lengths=L2)) == 7
    with pytest.raises(ValueError, match="lengths"):
        full2d.prepare_data(Y2, lengths=[3, 3])
    with pytest.raises(ValueError):
        full2d.prepare_data(Y1)  # wrong number of features
    with pytest.raises(ValueError, match="gaussian"):
        GaussianHMMScoringModel(VBHiddenMarkov(2).fit(np.array([[0], [1], [1], [0]])))
    Y = Y2.copy()
    full2d.prepare_data(Y, lengths=L2)
    np.testing.assert_array_equal(Y, Y2)


def test_full_and_diag_agree_in_one_dimension(tiny_full, tiny_diag):
    # for D = 1 a Wishart is a Gamma(nu/2, rate S/2): both parameterisations are one model
    d_f = tiny_full.prepare_data(Y1, lengths=L1)
    d_d = tiny_diag.prepare_data(Y1, lengths=L1)
    th = tiny_full.sample_prior(np.random.default_rng(2), 5)
    th_d = {"startprob": th["startprob"], "transmat": th["transmat"], "means": th["means"],
            "precisions": th["prec_chol_diag"] ** 2}
    np.testing.assert_allclose(tiny_full.log_likelihood(th, d_f),
                               tiny_diag.log_likelihood(th_d, d_d), rtol=1e-12)
    # densities differ exactly by the Jacobian d lambda / d L = 2 L
    np.testing.assert_allclose(tiny_full.log_prior(th),
                               tiny_diag.log_prior(th_d) + np.log(2 * th["prec_chol_diag"]).sum(axis=(1, 2)),
                               rtol=1e-12)
    e_f = tiny_full.e_step({k: v[:1] for k, v in th.items()}, d_f)
    e_d = tiny_diag.e_step({k: v[:1] for k, v in th_d.items()}, d_d)
    assert tiny_full.log_complete_evidence(e_f.stats) == pytest.approx(
        tiny_diag.log_complete_evidence(e_d.stats), abs=1e-10)


def test_simulate_shapes_and_statistics(full2d):
    th = full2d.variational_posterior().mean()
    X, Z = full2d.simulate(th, np.random.default_rng(3), lengths=[3000, 2000])
    assert X.shape == (5000, 2) and Z.shape == (5000,)
    Lam = precision_matrices(full2d, th)[0]
    for k in range(2):
        sel = X[Z == k]
        assert sel.shape[0] > 500
        np.testing.assert_allclose(sel.mean(axis=0), th["means"][0, k], atol=0.15)
        np.testing.assert_allclose(np.cov(sel.T), np.linalg.inv(Lam[k]), rtol=0.15, atol=0.02)


# ---------------------------------------------------------------------------------------
# densities, samplers and the Cholesky Jacobian
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["full2d", "diag2d"])
def test_prior_and_q_densities_match_scipy(which, request):
    model = request.getfixturevalue(which)
    rng = np.random.default_rng(4)
    q = model.variational_posterior()
    for dist, log_pdf in ((model.prior, model.log_prior), (q, q.log_pdf)):
        th = dist.sample(rng, 4)
        np.testing.assert_allclose(log_pdf(th), scipy_log_density(model, dist, th), rtol=1e-10)
    # a non-positive precision has zero density
    th = model.sample_prior(rng, 2)
    key = "prec_chol_diag" if model.covariance_type == "full" else "precisions"
    th[key][0, 0, 0] = -1.0
    lp = model.log_prior(th)
    assert lp[0] == -np.inf and np.isfinite(lp[1])


def test_cholesky_jacobian_finite_differences():
    """The Jacobian of phi = (ln diag L, offdiag L) -> lower entries of Lambda = L L^T."""
    est = fit(np.random.default_rng(5).normal(size=(12, 3)), None, 1, "full")
    model = GaussianHMMScoringModel(est)
    space = model.param_space
    D = 3
    tri = np.tril_indices(D)
    rng = np.random.default_rng(6)
    th = model.sample_prior(rng, 3)
    phi = space.to_unconstrained(th)
    sl = np.r_[space.slices["prec_chol_diag"], space.slices["prec_chol_offdiag"]]

    def lam_entries(p):
        params, _ = space.from_unconstrained(p[None])
        return precision_matrices(model, params)[0, 0][tri]

    for c in range(3):
        J = np.empty((6, 6))
        h = 1e-6
        for j, col in enumerate(sl):
            e = np.zeros(phi.shape[1])
            e[col] = h
            J[:, j] = (lam_entries(phi[c] + e) - lam_entries(phi[c] - e)) / (2 * h)
        numeric = np.linalg.slogdet(J)[1]
        Ld = th["prec_chol_diag"][c, 0]
        analytic = D * np.log(2) + np.sum((D - np.arange(D)) * np.log(Ld)) + np.sum(np.log(Ld))
        assert numeric == pytest.approx(analytic, abs=1e-6)
        # the model's density in L plus the ParamSpace log-Jacobian is the Wishart density
        # of Lambda times the numerical |d Lambda / d phi| (and the Gaussian of the mean)
        one = {k: v[c:c + 1] for k, v in th.items()}
        _, ld = space.from_unconstrained(phi[c:c + 1])
        Lam = precision_matrices(model, one)[0, 0]
        ref = (st.wishart.logpdf(Lam, df=model.nu0, scale=np.linalg.inv(model.scale0))
               + st.multivariate_normal.logpdf(one["means"][0, 0], model.m0,
                                               np.linalg.inv(model.beta0 * Lam)))
        assert model.log_prior(one)[0] + ld[0] == pytest.approx(ref + numeric, abs=1e-6)


@pytest.mark.parametrize("which", ["full2d", "diag2d"])
def test_samplers_consistent_with_densities(which, request):
    """Moments of sample_prior and of q's sampler, and the score identity
    E[grad_phi ln p_phi] = 0 (fails if a sampler and its density, Jacobians included,
    disagree)."""
    model = request.getfixturevalue(which)
    space = model.param_space
    rng = np.random.default_rng(7)
    q = model.variational_posterior()
    M = 4000
    for dist in (model.prior, q, q.heavy_tailed(3.0), q.heavy_tailed(5.0, broaden=0.5)):
        th = dist.sample(rng, M)
        z = score_identity_z(dist.log_pdf, space, th)
        assert np.all(np.abs(z) < 4.5), z
    # first moments: E[mu] = m, E[Lambda] = nu W (resp. a/b)
    big = 40000
    for dist in (model.prior, q):
        th = dist.sample(rng, big)
        em = dist.emission
        np.testing.assert_allclose(th["means"].mean(axis=0), em.m, atol=0.05)
        Lam = precision_matrices(model, th).mean(axis=0)
        if model.covariance_type == "full":
            expect = em.nu[:, None, None] * np.linalg.inv(em.S)
        else:
            expect = np.stack([np.diag(v) for v in em.a / em.b])
        np.testing.assert_allclose(Lam, expect, rtol=0.05, atol=0.02 * np.abs(expect).max())
        if model.K > 1:
            np.testing.assert_allclose(th["transmat"].mean(axis=0),
                                       dist.transmat / dist.transmat.sum(1, keepdims=True), atol=0.01)


@pytest.mark.parametrize("which", ["full2d", "diag2d"])
def test_prior_normalisation_by_importance_sampling(which, request):
    """int p(theta) dtheta = 1, estimated by importance sampling from a reference
    density broader than the prior in every direction (Student-t means, halved
    concentrations), so that the weights are bounded."""
    model = request.getfixturevalue(which)
    g = model.prior.heavy_tailed(2.0, broaden=0.5)
    rng = np.random.default_rng(8)
    th = g.sample(rng, 40000)
    a = model.log_prior(th) - g.log_pdf(th)
    w = np.exp(a)
    assert abs(w.mean() - 1.0) < 4 * w.std() / np.sqrt(w.size) + 0.01


# ---------------------------------------------------------------------------------------
# E step and complete-data evidence
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["full2d", "diag2d"])
def test_e_step_identities(which, request):
    model = request.getfixturevalue(which)
    data = model.prepare_data(Y2, lengths=L2)
    rng = np.random.default_rng(9)
    th = model.sample_prior(rng, 5)
    ll = model.log_likelihood(th, data)
    for c in range(5):
        one = {k: v[c:c + 1] for k, v in th.items()}
        e = model.e_step(one, data)
        assert e.loglik == pytest.approx(ll[c], abs=1e-9)
        assert e.entropy >= -1e-12
        assert e.expected_complete_loglik + e.entropy == pytest.approx(e.loglik, abs=1e-9)
        assert e.stats.start.sum() == pytest.approx(2)
        assert e.stats.trans.sum() == pytest.approx(5)
        assert e.stats.emission.N.sum() == pytest.approx(7)
        # conjugacy: ln p(theta) + E ln p(z, X | theta) - ln q(theta) = ln complete evidence
        # for every theta when q = VBM(stats) (the collapsed-bound identity)
        q = model.posterior_from_stats(e.stats)
        draws = q.sample(rng, 20)
        lhs = model.log_prior(draws) + model.complete_loglik(draws, e.stats) - q.log_pdf(draws)
        np.testing.assert_allclose(lhs, model.log_complete_evidence(e.stats), atol=1e-8)
        cs, _, _ = cs_value(model, one, data)
        assert cs <= e.loglik + model.log_prior(one)[0] + 50  # finite and sane


def test_vb_refine_reaches_estimator_bound(full2d):
    """The collapsed bound end to end: VBEM from the CS completion, with the bound recorded
    after every VBM step, never decreases and converges to the estimator's F."""
    model = full2d
    data = model.prepare_data(Y2, lengths=L2)
    theta = model.fit_point(data, rng=np.random.default_rng(0))
    cs, e, _ = cs_value(model, theta, data)
    bounds = np.array(model.vb_refine(data, e, max_iter=2000, tol=1e-12))
    assert bounds[0] == pytest.approx(cs, abs=1e-10)
    assert np.all(np.diff(bounds) > -1e-9)
    assert bounds[-1] == pytest.approx(model.estimator.lower_bound_, abs=1e-6)


def test_fit_point_em_is_monotone_and_kinds(diag2d):
    model = diag2d
    data = model.prepare_data(Y2, lengths=L2)
    rng = np.random.default_rng(10)
    for kind, basis in (("map", "softmax"), ("map", "natural"), ("ml", "softmax")):
        theta = model.fit_point(data, kind=kind, basis=basis, rng=rng, n_init=2)
        assert np.isfinite(model.log_likelihood(theta, data)[0])
        assert np.isfinite(model.log_prior(theta)[0])
    # EM on the softmax-basis objective never decreases
    theta = model.sample_prior(rng, 1)
    objs = []
    for _ in range(30):
        e = model.e_step(theta, data)
        objs.append(e.loglik + model._point_objective_prior(theta, "softmax"))
        theta = model.point_from_stats(e.stats)
    assert np.all(np.diff(objs) > -1e-9)
    # ML likelihood at least that of the MAP point
    ml = model.fit_point(data, kind="ml", rng=np.random.default_rng(1), n_init=3)
    mp = model.fit_point(data, rng=np.random.default_rng(1), n_init=3)
    assert model.log_likelihood(ml, data)[0] >= model.log_likelihood(mp, data)[0] - 1e-6


# ---------------------------------------------------------------------------------------
# exact evidence and the scorers
# ---------------------------------------------------------------------------------------


def test_tiny_exact_evidence_and_scorers(tiny_full, tiny_diag):
    model = tiny_full
    data = model.prepare_data(Y1, lengths=L1)
    exact = brute_force_evidence(model, Y1, L1)
    assert model.log_evidence(data) == pytest.approx(exact, abs=1e-9)
    assert tiny_diag.log_evidence(tiny_diag.prepare_data(Y1, lengths=L1)) == pytest.approx(
        exact, abs=1e-9)
    fitted = wrapped(model)
    vb = score(fitted, Y1, "vb", lengths=L1)
    assert vb.log_evidence <= exact + 1e-9
    assert vb.log_evidence == model.estimator.lower_bound_
    cs = score(fitted, Y1, "cs", lengths=L1, random_state=0)
    assert cs.log_evidence <= exact + 1e-9
    rng = np.random.default_rng(11)
    for _ in range(30):  # CS is a bound at any normalised theta
        assert cs_value(model, model.sample_prior(rng, 1), data)[0] <= exact + 1e-9
    vbcs = score(fitted, Y1, "vb", lengths=L1, init="cs", random_state=0)
    assert vbcs.diagnostics["first_bound"] == pytest.approx(vbcs.diagnostics["cs"], abs=1e-10)
    assert vbcs.diagnostics["cs"] - 1e-9 <= vbcs.log_evidence <= exact + 1e-9
    ais = score(fitted, Y1, "ais", lengths=L1, n_temperatures=1000, n_chains=16, random_state=0)
    assert tolerance_ok(ais.log_evidence, ais.stderr, exact), (ais.log_evidence - exact, ais.stderr)
    isr = score(fitted, Y1, "is", lengths=L1, n_samples=2000, n_runs=2, random_state=0,
                proposal="defensive")
    assert isr.log_evidence <= exact + 3 * isr.stderr + 0.05
    assert isr.log_evidence >= vb.log_evidence - 3 * isr.stderr - 0.05
    for method in ("bic", "bicp", "laplace"):
        r = score(fitted, Y1, method, lengths=L1, random_state=0)
        assert not r.diagnostics.get("degenerate") and np.isfinite(r.log_evidence), method
    bic = score(fitted, Y1, "bic", lengths=L1, random_state=0)
    assert bic.diagnostics["n"] == 8 and bic.diagnostics["d"] == 7


def test_tiny_2d_full_exact_evidence(full2d):
    model = full2d
    data = model.prepare_data(Y2, lengths=L2)
    exact = brute_force_evidence(model, Y2, L2)
    assert model.log_evidence(data) == pytest.approx(exact, abs=1e-9)
    fitted = wrapped(model)
    assert model.estimator.lower_bound_ <= exact + 1e-9
    cs = score(fitted, Y2, "cs", lengths=L2, random_state=0)
    assert cs.log_evidence <= exact + 1e-9
    ais = score(fitted, Y2, "ais", lengths=L2, n_temperatures=1000, n_chains=16, random_state=1)
    assert tolerance_ok(ais.log_evidence, ais.stderr, exact), (ais.log_evidence - exact, ais.stderr)


@pytest.mark.parametrize("cov", ["full", "diag"])
def test_one_state_is_closed_form(cov):
    """K = 1: q(theta) is the exact posterior, so F, CS and every IS weight with q as the
    proposal equal the closed-form Normal-Wishart / Normal-Gamma evidence."""
    X = np.random.default_rng(12).normal([0.5, -1.0], [1.0, 2.0], size=(30, 2))
    est = fit(X, [10, 20], 1, cov)
    model = GaussianHMMScoringModel(est)
    assert model.param_space.names[0] == "means" and model.n_parameters() == (
        2 + 3 if cov == "full" else 4)
    data = model.prepare_data(X, lengths=[10, 20])
    e = model.e_step(model.variational_posterior().mean(), data)
    exact = model.log_complete_evidence(e.stats)
    assert e.entropy == pytest.approx(0.0, abs=1e-12)
    # closed form from sequential predictives over the 30 frames
    assert brute_force_evidence_one_state(model, X) == pytest.approx(exact, abs=1e-8)
    fitted = wrapped(model)
    assert est.lower_bound_ == pytest.approx(exact, abs=1e-8)
    assert score(fitted, X, "cs", lengths=[10, 20], random_state=0).log_evidence == pytest.approx(
        exact, abs=1e-8)
    isr = score(fitted, X, "is", lengths=[10, 20], proposal="vb", n_samples=200, n_runs=1,
                random_state=0)
    np.testing.assert_allclose(isr.diagnostics["log_weights"], exact, atol=1e-8)
    ais = score(fitted, X, "ais", lengths=[10, 20], n_temperatures=500, n_chains=16, random_state=0)
    assert tolerance_ok(ais.log_evidence, ais.stderr, exact), (ais.log_evidence - exact, ais.stderr)


def brute_force_evidence_one_state(model, X):
    """Sequential predictive evidence of all frames under one state (no enumeration)."""
    D = model.D
    m, beta, nu, lp = model.m0.copy(), model.beta0, model.nu0, 0.0
    if model.covariance_type == "full":
        S = model.scale0.copy()
        for y in X:
            df = nu - D + 1
            lp += st.multivariate_t(m, S * (beta + 1) / (beta * df), df=df).logpdf(y)
            S = S + beta / (beta + 1) * np.outer(y - m, y - m)
            m, beta, nu = (beta * m + y) / (beta + 1), beta + 1, nu + 1
        return lp
    a, b = 0.5 * nu * np.ones(D), 0.5 * model.scale0.copy()
    for y in X:
        lp += st.t.logpdf(y, df=2 * a, loc=m, scale=np.sqrt(b * (beta + 1) / (a * beta))).sum()
        b = b + beta * (y - m) ** 2 / (2 * (beta + 1))
        m, beta, a = (beta * m + y) / (beta + 1), beta + 1, a + 0.5
    return lp


def test_effective_dimension_equals_count(full2d):
    """Algorithm 6.2 through log_likelihood_per_case on 300 simulated frames: the
    Gaussian HMM has no continuous degeneracy, so d_eff equals the naive count."""
    th = full2d.variational_posterior().mean()
    X, _ = full2d.simulate(th, np.random.default_rng(0), lengths=[150, 150])
    for cov in ("full", "diag"):
        model = GaussianHMMScoringModel(fit(X, [150, 150], 2, cov))
        r = score(wrapped(model), X, "bic", lengths=[150, 150], dimension="effective",
                  random_state=0)
        assert r.diagnostics["d"] == model.n_parameters() == (13 if cov == "full" else 11)


def test_complete_joint_and_cs_dagger(full2d):
    """The per-frame complete-data log-likelihoods along a completion sum to
    ln p(path, X | theta) (checked against the E step's complete log-likelihood with
    one-hot statistics); CS-dagger finds d' = d (no hidden-variable degeneracy)."""
    model = full2d
    data = model.prepare_data(Y2, lengths=L2)
    rng = np.random.default_rng(13)
    th = model.sample_prior(rng, 3)
    Z = model.random_completion(data, rng)
    assert Z.shape == (7,) and Z.min() >= 0 and Z.max() < 2
    stats = model.stats_from_responsibilities(np.eye(2)[Z], data)
    np.testing.assert_allclose(model.log_complete_joint_per_case(th, Z, data).sum(axis=1),
                               model.complete_loglik(th, stats), rtol=1e-12)
    th0 = full2d.variational_posterior().mean()
    X, _ = model.simulate(th0, np.random.default_rng(0), lengths=[100, 100])
    big = GaussianHMMScoringModel(fit(X, [100, 100], 2, "full"))
    r = score(wrapped(big), X, "cs_dagger", lengths=[100, 100], random_state=0)
    assert r.diagnostics["d"] == r.diagnostics["d_complete"] == 13
    cs = score(wrapped(big), X, "cs", lengths=[100, 100], random_state=0)
    assert r.log_evidence == pytest.approx(cs.log_evidence, abs=1e-9)
