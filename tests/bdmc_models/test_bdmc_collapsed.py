"""The weights collapsed given the latents (clustering, binary attributes): the predictive
of a case against the joint, the collapsed Gibbs sweep against the enumerated posterior,
and the one-particle SMC built on them (Grosse, Ghahramani & Adams 2015, §3.4) against
exact evidences."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chi2

from sklearn_vb.bdmc_models import BayesianBinaryAttributes, BayesianClustering
from sklearn_vb.bdmc_models._collapsed import collapsed_case_logits
from sklearn_vb.bdmc_models._common import collapsed_log_likelihood
from sklearn_vb.scoring import score, scoring_model_for
from tests.oracles import bdmc_instances as inst


def _clustering_model(n=5, D=3, seed=0):
    est = BayesianClustering(2, mean_sd=1.5, noise_sd=0.8, weights=[0.3, 0.7], random_state=0)
    Y, _, _ = est.simulate(n, D, random_state=seed)
    return scoring_model_for(est.fit(Y)), Y


def _binary_model(n=4, D=3, seed=0):
    est = BayesianBinaryAttributes(2, attribute_prob=[0.3, 0.6], feature_sd=1.2, noise_sd=0.6,
                                   random_state=0)
    Y, _, _ = est.simulate(n, D, random_state=seed)
    return scoring_model_for(est.fit(Y)), Y


def _log_joint(m, Y, cases, design, log_prior):
    """``ln p(z_o) + ln p(Y_o | Z_o)`` (weights integrated out) of one design (|o|, K)."""
    ll = collapsed_log_likelihood(Y[cases], design[None], m.weight_var, m.noise_var)[0]
    return log_prior + ll


def test_predictive_logits_are_ratios_of_joints():
    # ln p(z_t = c) + ln p(y_t | Z_o, Y_o, z_t = c) = ln p(Y_o, y_t, Z_o, c) - ln p(Y_o, Z_o)
    m, Y = _clustering_model()
    o = np.array([0, 2, 3])
    labels = np.array([1, 0, 0, 1, 0])
    included = np.isin(np.arange(5), o)
    hyper = dict(log_weights=m.log_weights, mean_var=m.weight_var, noise_var=m.noise_var)
    got = collapsed_case_logits("clustering", labels, Y, included, 4, **hyper)
    eye = np.eye(2)
    base = _log_joint(m, Y, o, eye[labels[o]], m.log_weights[labels[o]].sum())
    for c in range(2):
        lab = np.append(labels[o], c)
        full = _log_joint(m, Y, np.append(o, 4), eye[lab], m.log_weights[lab].sum())
        assert got[c] == pytest.approx(full - base, abs=1e-10)

    mb, Yb = _binary_model()
    o = np.array([0, 1, 3])
    configs = np.array([3, 1, 0, 2])
    included = np.isin(np.arange(4), o)
    hyper = dict(log_p=mb.log_p, log_1mp=mb.log_1mp, weight_var=mb.weight_var,
                 noise_var=mb.noise_var)
    got = collapsed_case_logits("binary", configs, Yb, included, 2, **hyper)
    bits = lambda idx: ((np.asarray(idx)[..., None] >> np.arange(2)) & 1).astype(float)  # noqa: E731
    prior = lambda Z: float(np.sum(Z * mb.log_p + (1 - Z) * mb.log_1mp))  # noqa: E731
    base = _log_joint(mb, Yb, o, bits(configs[o]), prior(bits(configs[o])))
    for c in range(4):
        Z = bits(np.append(configs[o], c))
        full = _log_joint(mb, Yb, np.append(o, 2), Z, prior(Z))
        assert got[c] == pytest.approx(full - base, abs=1e-10)


def _posterior_table(m, Y, cases, states, design, log_prior):
    lj = np.array([_log_joint(m, Y, cases, design(s), log_prior(s)) for s in states])
    return np.exp(lj - logsumexp(lj))


@pytest.mark.parametrize("kind", ["clustering", "binary"])
def test_collapsed_sweep_leaves_the_posterior_invariant(kind):
    # exact posterior draws of the included cases' latents, one sweep, the same law
    m, Y = _clustering_model() if kind == "clustering" else _binary_model(n=3)
    n = Y.shape[0]
    cases = np.arange(n - 1)  # the last case is not included: the sweep must ignore it
    included = np.isin(np.arange(n), cases).astype(float)
    n_vals = 2 if kind == "clustering" else 4
    states = list(itertools.product(range(n_vals), repeat=cases.size))
    if kind == "clustering":
        design = lambda s: np.eye(2)[list(s)]  # noqa: E731
        log_prior = lambda s: float(m.log_weights[list(s)].sum())  # noqa: E731
    else:
        design = lambda s: ((np.array(s)[:, None] >> np.arange(2)) & 1).astype(float)  # noqa: E731
        log_prior = lambda s: float(np.sum(design(s) * m.log_p + (1 - design(s)) * m.log_1mp))  # noqa: E731
    post = _posterior_table(m, Y, cases, states, design, log_prior)
    rng = np.random.default_rng(0)
    C = 20000
    draws = rng.choice(len(states), size=C, p=post)
    Z = np.zeros((C, n), dtype=np.int64)
    Z[:, cases] = np.array(states)[draws]
    if kind == "binary":
        Z = ((Z[..., None] >> np.arange(2)) & 1).astype(float)
    out = m.collapsed_sweep(Z, Y, included, rng)
    if kind == "binary":
        out = (out @ np.array([1, 2])).astype(int)
    code = np.ravel_multi_index(out[:, cases].T, (n_vals,) * cases.size)
    counts = np.bincount(code, minlength=len(states))
    expected = C * post
    keep = expected > 5
    stat = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    assert stat < chi2.ppf(1 - 1e-6, keep.sum() - 1)
    # the sweep moves: a state is not kept with probability one
    assert np.mean(np.all(out[:, cases] == np.array(states)[draws], axis=1)) < 0.95


@pytest.mark.parametrize("make", [inst.clustering, inst.binary])
@pytest.mark.parametrize("move", ["auto", "gibbs"])
def test_one_particle_collapsed_smc_is_unbiased_for_the_evidence(make, move):
    # each run's estimate Z^ is unbiased for Z: the mean of Z^ / Z over many runs is 1
    # within its Monte Carlo error (4 standard errors: a false failure below 1e-4)
    est, X, exact, _ = make()
    r = score(est, X, "smc", n_particles=1, n_runs=1000, collapse=True, move=move,
              random_state=1)
    assert r.diagnostics["collapsed"]
    assert r.diagnostics["move"] == ("collapsed_gibbs" if move == "auto" else "gibbs")
    ratio = np.exp(np.asarray(r.diagnostics["run_estimates"]) - exact)
    assert abs(ratio.mean() - 1.0) < 4 * ratio.std(ddof=1) / np.sqrt(ratio.size)
    # and the spread of one run is small on these instances: the sequence of posterior
    # predictives is a good proposal
    assert np.std(np.log(ratio)) < 1.5


def test_collapse_options():
    est, X, exact, _ = inst.clustering()
    a = score(est, X, "smc", n_particles=4, n_runs=2, collapse="auto", random_state=0)
    b = score(est, X, "smc", n_particles=4, n_runs=2, collapse=True, random_state=0)
    assert a.log_evidence == b.log_evidence and a.diagnostics["collapsed"]
    c = score(est, X, "smc", n_particles=4, n_runs=2, random_state=0)
    assert not c.diagnostics["collapsed"]
    with pytest.raises(ValueError, match="collapse"):
        score(est, X, "smc", collapse="sometimes")
    with pytest.raises(ValueError, match="move"):
        score(est, X, "smc", collapse=True, move="kernel")
    fit, y, _, _ = inst.gaussian_mean()
    with pytest.raises(NotImplementedError, match="collapse"):
        score(fit, y, "smc", collapse=True)
    # "auto" falls back to the parameters kept explicit
    assert not score(fit, y, "smc", collapse="auto", n_runs=2).diagnostics["collapsed"]
