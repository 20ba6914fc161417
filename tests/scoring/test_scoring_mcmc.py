"""Kernel correctness tests of the scoring layer:

* conditional–joint identity: for the tempered targets the kernels evaluate,
  ``ln f_b(x|u) - ln f_b(x'|u) = ln f_b(x, u) - ln f_b(x', u)``, where the conditional of
  an initial-state (HMM) or hidden-node (DAG) distribution given the other parameters is
  computed independently from the linearity of the likelihood in that row:
  ``p(y_s | theta) = sum_k x_k c_{s,k}`` with ``c_{s,k}`` the likelihood of case/sequence s
  when the row is the k-th unit vector.
* Geweke joint-distribution test: the successive-conditional chain "kernel step at
  beta = 1, then y ~ p(y | theta)" leaves the joint p(theta, y) invariant, so its theta
  marginal must be the prior (compared by batch-means z-scores of a few statistics).
"""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import VBDiscreteDAG
from sklearn_vb._core.distributions import dirichlet_log_pdf
from sklearn_vb.dag._evidence_kernels import (
    dag_ais_chains,
    dag_ais_init,
    dag_pattern_loglik,
    dag_prior_log_density,
)
from sklearn_vb.scoring import scoring_model_for
from sklearn_vb._core.evidence.mcmc_moves import BlockRandomWalkMH, DirichletMH, Target
from tests.oracles.reference_models import DiscreteHMM

BETAS = (0.0, 0.37, 1.0)


def _batch_z(x, n_batches=40):
    """z-score of the mean of a correlated series against 0 (batch means)."""
    b = np.array_split(np.asarray(x, dtype=float), n_batches)
    m = np.array([v.mean() for v in b])
    return m.mean() / (m.std(ddof=1) / np.sqrt(n_batches))


# ------------------------------------------------------------ conditional-joint identity


def test_hmm_initial_row_conditional_matches_tempered_joint():
    model = DiscreteHMM(3, 4, alpha=0.5)
    rng = np.random.default_rng(0)
    X = model.prepare_data(rng.integers(0, 4, size=15), lengths=[5, 4, 6])
    target = Target(model, X)
    th = model.sample_prior(rng, 1)
    # c[s, k] = p(y_s | pi = e_k, A, B): the likelihood is linear in pi per sequence
    c = np.empty((3, 3))
    for k in range(3):
        e = dict(th, pi=np.eye(3)[k][None])
        c[:, k] = np.exp(model.log_likelihood_per_sequence(e, X)[0])
    for beta in BETAS:
        for _ in range(5):
            x, x2 = model.sample_prior(rng, 2)["pi"]
            cond = [dirichlet_log_pdf(v, model.prior_alpha["pi"]) + beta * np.log(c @ v).sum()
                    for v in (x, x2)]
            joint = [target.log_f(target.state(dict(th, pi=v[None])), beta)[0] for v in (x, x2)]
            assert cond[0] - cond[1] == pytest.approx(joint[0] - joint[1], abs=1e-10, rel=1e-12)


def test_dag_hidden_row_conditional_matches_compiled_target():
    X = np.array([[0, 1], [1, 1], [2, 0], [2, 2], [0, 0], [1, 2], [2, 2]])
    est = VBDiscreteDAG(n_components=3, cardinalities=3, prior=0.7, random_state=0).fit(X)
    model = scoring_model_for(est)
    data = model.prepare_data(X)
    prior = model._flat_prior()
    row_ptr = model.layout.row_ptr.astype(np.int64)
    rng = np.random.default_rng(1)
    hid = model.block_names[0]
    th = model.sample_prior(rng, 1)
    # g[u, k] = p(y_u | hidden row = e_k, rest): each pattern's likelihood is linear in it
    g = np.empty((data.n_patterns, 3))
    for k in range(3):
        e = dict(th, **{hid: np.eye(3)[k][None, None]})
        g[:, k] = np.exp(model._pattern_loglik(e, data)[0])

    def compiled_target(params, beta):
        flat = np.ascontiguousarray(model._flat(params)[0])
        return (dag_prior_log_density(flat, prior, row_ptr)
                + beta * dag_pattern_loglik(flat, data.idx, data.row_start, data.weights))

    for beta in BETAS:
        for _ in range(5):
            x, x2 = model.sample_prior(rng, 2)[hid][:, 0]
            cond = [dirichlet_log_pdf(v, model.prior_alpha[hid][0])
                    + beta * data.weights @ np.log(g @ v) for v in (x, x2)]
            joint = [compiled_target(dict(th, **{hid: v[None, None]}), beta) for v in (x, x2)]
            assert cond[0] - cond[1] == pytest.approx(joint[0] - joint[1], abs=1e-9, rel=1e-12)
            # and the compiled target equals the model's tempered joint
            p1 = dict(th, **{hid: x[None, None]})
            ref = model.log_prior(p1)[0] + beta * model.log_likelihood(p1, data)[0]
            assert joint[0] == pytest.approx(ref, abs=1e-9, rel=1e-12)


# ------------------------------------------------------------------------- Geweke test


def _prior_checks(draws, prior_alpha, label):
    """Batch-means z-scores of E[theta_k] and E[theta_k^2] against the Dirichlet prior."""
    a = np.asarray(prior_alpha, dtype=float)
    a0 = a.sum(axis=-1, keepdims=True)
    m1 = a / a0
    m2 = a * (a + 1) / (a0 * (a0 + 1))
    flat = draws.reshape(draws.shape[0], -1)
    for j in range(flat.shape[1]):
        for stat, mom in ((flat[:, j], m1.ravel()[j]), (flat[:, j] ** 2, m2.ravel()[j])):
            z = _batch_z(stat - mom)
            assert abs(z) < 4.5, (label, j, z)


def test_geweke_python_kernels_on_tiny_hmm():
    """DirichletMH (sparse prior, so the proposal floor matters) and the random walk with
    its Jacobian, on a 2-state, 2-symbol HMM with 4 observations."""
    model = DiscreteHMM(2, 2, alpha=0.5)
    rng = np.random.default_rng(5)
    kernels = [DirichletMH(model, alpha0=3.0, kappa=2.0), BlockRandomWalkMH(model, scale=1.5)]
    th = model.sample_prior(rng, 1)
    draws = {"pi": [], "A": [], "B": []}
    for it in range(2000):
        y, _ = model.simulate(th, rng, n_cases=4)
        X = model.prepare_data(y)
        for kern in kernels:
            th, _ = kern.step(th, X, 1.0, [rng])
        for k in draws:
            draws[k].append(th[k][0].copy())
    for k in draws:
        _prior_checks(np.array(draws[k]), model.prior_alpha[k], k)


def test_geweke_compiled_dag_kernel():
    """Beal's joint Dirichlet kernel (compiled) on a latent-class DAG with one binary hidden
    node and two binary children, 5 cases; y is resampled by multinomial pattern counts."""
    X_all = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    est = VBDiscreteDAG(n_components=2, cardinalities=2, prior=0.8, random_state=0).fit(X_all)
    model = scoring_model_for(est)
    data = model.prepare_data(X_all)
    prior = model._flat_prior()
    row_ptr = model.layout.row_ptr.astype(np.int64)
    floor = np.minimum(prior, 1.0)
    rng = np.random.default_rng(11)
    n = 5
    theta = np.ascontiguousarray(model._flat(model.sample_prior(rng, 1)))
    betas = np.array([1.0, 1.0])
    ll, lp, lw = np.empty(1), np.empty(1), np.zeros(1)
    acc, lr = np.zeros(1, np.int64), np.zeros(1)
    out = []
    for it in range(12000):
        probs = np.exp(model._pattern_loglik(model.param_space.unflatten(theta), data)[0])
        w = rng.multinomial(n, probs / probs.sum()).astype(float)
        dag_ais_init(theta, prior, row_ptr, data.idx, data.row_start, w, ll, lp)
        for _ in range(2):
            dag_ais_chains(theta, ll, lp, lw, betas, 0, 1, prior, row_ptr, data.idx,
                           data.row_start, w, float(n), 4.0, 3.0, floor,
                           rng.integers(0, 2**31, size=1), acc, lr)
        out.append(theta[0].copy())
    assert 0.2 < acc[0] / 24000 < 0.95
    out = np.array(out)
    for j, name in enumerate(model.block_names):
        sl = slice(model.layout.offsets[j], model.layout.offsets[j + 1])
        _prior_checks(out[:, sl], model.prior_alpha[name], name)
    # sanity of the data model: the probabilities of all patterns sum to one
    assert logsumexp(model._pattern_loglik(model.param_space.unflatten(theta), data)[0]) == \
        pytest.approx(0.0, abs=1e-12)
