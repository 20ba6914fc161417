"""The Laplace scorer: exact gradients of the models against finite differences, the
chain rule of the unconstrained transforms, the Hessian from differences of exact
gradients against the classical second differences, the block-diagonal variant, the
memory cap and the Gaussian oracle."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem
from sklearn_vb.datasets import BEAL_TRUE_CODE, bipartite_structure, make_beal_dag
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._laplace import _t, _Target, fd_gradient, fd_hessian
from sklearn_vb.hmm._scoring_dirichlet import DirichletCategoricalHMM
from sklearn_vb.scoring import ParamBlock, ParamSpace
from tests.oracles.reference_models import BayesianLinearRegression

REGRESSION_X = np.column_stack([[[1, 0], [0, 1], [1, 1]], [1, -1, 0.5]])
REGRESSION_EXACT = -4.359036370453936


def _t_gradient(model, data, phi):
    return _Target(model, data, "exact", 1).value_and_gradient(phi)


def _fd_t_gradient(model, data, phi, rel_step=1e-6):
    return fd_gradient(lambda P: _t(model, data, P), phi, rel_step)


# ------------------------------------------------------------------------------ models
@pytest.fixture(scope="module")
def hmm():
    """A categorical HMM (3 states, 4 symbols, three sequences) and its data."""
    rng = np.random.default_rng(0)
    model = DirichletCategoricalHMM(3, 4, alpha=1.5)
    lengths = [30, 20, 25]
    X, _ = model.simulate(model.sample_prior(rng, 1), rng, lengths=lengths)
    return model, X, {"lengths": lengths}


@pytest.fixture(scope="module")
def dag():
    X = make_beal_dag(120, random_state=1)
    est = VBDiscreteDAG(*bipartite_structure(BEAL_TRUE_CODE), n_init=1, max_iter=200,
                        tol=1e-3, random_state=0, bound_check="off").fit(X)
    return scoring_model_for(est), X, {}


@pytest.fixture(scope="module")
def mfa():
    from sklearn_vb import VBMixtureFactorAnalysers

    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(-2, 1, (20, 3)), rng.normal(2, 1, (20, 3))])
    X[:, 2] += 0.8 * X[:, 0]
    est = VBMixtureFactorAnalysers(n_components=2, search=False, random_state=0).fit(X)
    return scoring_model_for(est), X, {}


def _family_hmm(emission, covariance_type="full", D=3):
    """A 2-state HMM with Gaussian (full or diagonal) or Poisson emissions, two sequences."""
    rng = np.random.default_rng(4)
    z = (np.arange(60) // 10) % 2
    if emission == "poisson":
        X = rng.poisson(np.where(z[:, None] == 1, 6.0, 1.5) * np.ones(D))
    else:
        X = rng.normal(size=(60, D)) @ np.tril(np.ones((D, D))) * 0.5 + 2.0 * z[:, None]
    lengths = [35, 25]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBHiddenMarkov(2, emission=emission, covariance_type=covariance_type,
                             random_state=0, max_iter=100).fit(X, lengths=lengths)
    return scoring_model_for(est), X, {"lengths": lengths}


@pytest.fixture(scope="module")
def hmm_gaussian_full():
    return _family_hmm("gaussian", "full")


@pytest.fixture(scope="module")
def hmm_gaussian_diag():
    return _family_hmm("gaussian", "diag")


@pytest.fixture(scope="module")
def hmm_poisson():
    return _family_hmm("poisson", D=2)


def _lds(inputs):
    rng = np.random.default_rng(3)
    T, k, p = 40, 2, 2
    A = np.array([[0.8, 0.1], [-0.2, 0.6]])
    C = np.array([[1.0, 0.3], [-0.4, 0.8]])
    U = rng.standard_normal((T, 1))
    x = np.zeros(k)
    Y = np.empty((T, p))
    for t in range(T):
        x = A @ x + rng.standard_normal(k) + (np.array([0.5, 0.0]) * U[t] if inputs else 0)
        Y[t] = C @ x + 0.4 * rng.standard_normal(p) + (np.array([0.3, -0.2]) * U[t]
                                                          if inputs else 0)
    fit_params = {"U": U, "lengths": [25, 15]} if inputs else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBLinearDynamicalSystem(n_states=k, random_state=0, max_iter=200,
                                      prune_states=False,
                                      fit_intercept=inputs).fit(Y, **fit_params)
    return scoring_model_for(est), Y, fit_params


@pytest.fixture(scope="module")
def lds_inputs():
    return _lds(True)


@pytest.fixture(scope="module")
def lds_plain():
    return _lds(False)


class _RegressionWithGradient(BayesianLinearRegression):
    """The linear-regression reference problem with its closed-form gradient."""

    def log_joint_gradient(self, params_single, X):
        Phi, y = X[:, :-1], X[:, -1]
        w = params_single["w"][0]
        g = (-np.linalg.solve(self.S0, w - self.m0) + Phi.T @ (y - Phi @ w) / self.noise_var)
        value = float(self.log_prior(params_single)[0] + self.log_likelihood(params_single, X)[0])
        return value, {"w": g[None]}


# --------------------------------------------------------------------- transforms
def test_gradient_to_unconstrained_matches_finite_differences():
    """The chain rule through every transform (real, positive, simplex rows of several
    lengths including the constant simplex of length 1) and the log-Jacobian's gradient,
    for ``f(theta) = sum c * ln theta + sum w * theta^2`` (any smooth extension off the
    simplex gives the same gradient in phi)."""
    space = ParamSpace([ParamBlock("r", (3,), "real"), ParamBlock("p", (2, 2), "positive"),
                        ParamBlock("s", (2, 4), "simplex"), ParamBlock("v", (3,), "simplex"),
                        ParamBlock("one", (1,), "simplex")])
    rng = np.random.default_rng(0)
    c = {b.name: rng.uniform(0.5, 2.0, b.shape) for b in space.blocks}
    w = {b.name: rng.normal(size=b.shape) for b in space.blocks}

    def f_theta(params):
        out = 0.0
        for b in space.blocks:
            v = params[b.name]
            ln = np.log(np.abs(v)) if b.constraint == "real" else np.log(v)
            out = out + np.sum((c[b.name] * ln + w[b.name] * v * v).reshape(len(v), -1), axis=1)
        return out

    def f_phi(P):
        params, logdet = space.from_unconstrained(P)
        return f_theta(params) + logdet

    for _ in range(3):
        phi = rng.normal(size=space.size)
        params, _ = space.from_unconstrained(phi[None])
        grads = {n: c[n] / params[n] + 2 * w[n] * params[n] for n in space.names}
        g = space.gradient_to_unconstrained(params, grads)[0]
        np.testing.assert_allclose(g, fd_gradient(f_phi, phi, 1e-6), rtol=1e-6, atol=1e-7)
        g0 = space.gradient_to_unconstrained(params, grads, log_det=False)[0]
        ld = fd_gradient(lambda P: space.from_unconstrained(P)[1], phi, 1e-6)
        np.testing.assert_allclose(g - g0, ld, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------- exact gradients
@pytest.mark.parametrize("name", ["hmm", "dag", "lds_inputs", "lds_plain", "hmm_gaussian_full",
                                  "hmm_gaussian_diag", "hmm_poisson"])
def test_exact_gradient_matches_finite_differences(name, request):
    """The Fisher-identity gradient of t(phi) (forward-backward, enumeration, Kalman
    smoother) against central differences of t at random parameter points."""
    model, X, fit_params = request.getfixturevalue(name)
    data = model.prepare_data(X, **fit_params)
    rng = np.random.default_rng(1)
    space = model.param_space
    q = model.variational_posterior() if hasattr(model, "variational_posterior") else None
    # points near the posterior (prior draws of the continuous models are too far out
    # for the likelihood to be evaluated accurately)
    draws = (q.heavy_tailed(3.0).sample(rng, 3) if name != "hmm" and name != "dag"
             else model.sample_prior(rng, 3))
    for i in range(3):
        phi = space.to_unconstrained({k: v[i:i + 1] for k, v in draws.items()})[0]
        t, g = _t_gradient(model, data, phi)
        assert t == pytest.approx(float(_t(model, data, phi[None])[0]), rel=1e-12, abs=1e-9)
        fd = _fd_t_gradient(model, data, phi)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(fd).max()))


def test_gradient_differences_hessian_matches_second_differences(hmm):
    model, X, fit_params = hmm
    data = model.prepare_data(X, **fit_params)
    phi = model.param_space.to_unconstrained(model.sample_prior(np.random.default_rng(2), 1))[0]
    target = _Target(model, data, "exact", 1)
    sl = slice(0, phi.size)
    H = target.hessian_blocks(phi, [sl], 1e-4, "central")[0][1]
    ref = fd_hessian(lambda P: _t(model, data, P), phi, 1e-4)
    np.testing.assert_allclose(H, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    Hf = target.hessian_blocks(phi, [sl], 1e-6, "forward")[0][1]
    np.testing.assert_allclose(Hf, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_fd_hessian_in_batches_is_the_same():
    f = lambda P: np.sin(P[:, 0]) * np.exp(P[:, 1]) + P[:, 2] ** 3 * P[:, 0]  # noqa: E731
    phi = np.array([0.3, -0.2, 0.7])
    np.testing.assert_array_equal(fd_hessian(f, phi, batch=5), fd_hessian(f, phi))
    np.testing.assert_array_equal(fd_hessian(f, phi, index=[0, 2], batch=4),
                                  fd_hessian(f, phi)[np.ix_([0, 2], [0, 2])])
    np.testing.assert_array_equal(fd_gradient(f, phi, batch=4), fd_gradient(f, phi))


# --------------------------------------------------------------------- the scorer
@pytest.mark.parametrize("name", ["hmm", "lds_plain", "hmm_gaussian_full", "mfa", "dag"])
def test_exact_gradient_laplace_equals_finite_difference_laplace(name, request):
    model, X, fit_params = request.getfixturevalue(name)
    est = model if name == "hmm" else model.estimator
    res = {g: score(est, X, "laplace", gradient=g, random_state=0, n_init=1, **fit_params)
           for g in ("exact", "fd")}
    assert res["exact"].diagnostics["gradient"] == "exact"
    assert res["fd"].diagnostics["gradient"] == "fd"
    assert res["fd"].diagnostics["n_gradient_evaluations"] == 0
    a, b = res["exact"].log_evidence, res["fd"].log_evidence
    assert np.isfinite(a)
    assert a == pytest.approx(b, rel=1e-6)
    # the default uses the exact gradient
    d = score(est, X, "laplace", random_state=0, n_init=1, **fit_params)
    assert d.diagnostics["gradient"] == "exact" and d.log_evidence == a


def test_block_diagonal_uses_the_diagonal_blocks(hmm):
    model, X, fit_params = hmm
    data = model.prepare_data(X, **fit_params)
    full = score(model, X, "laplace", random_state=0, n_init=1, **fit_params)
    blk = score(model, X, "laplace", hessian="block_diagonal", random_state=0, n_init=1,
                **fit_params)
    assert blk.diagnostics["hessian"] == "block_diagonal"
    phi = blk.diagnostics["phi_hat"]
    np.testing.assert_allclose(phi, full.diagnostics["phi_hat"], atol=1e-6)
    H = fd_hessian(lambda P: _t(model, data, P), phi, 1e-4)
    space = model.param_space
    ld = sum(np.linalg.slogdet(-H[space.slices[b.name], space.slices[b.name]])[1]
             for b in space.blocks)
    expected = blk.diagnostics["t_hat"] + 0.5 * phi.size * np.log(2 * np.pi) - 0.5 * ld
    assert blk.log_evidence == pytest.approx(expected, rel=1e-6)
    assert blk.log_evidence != pytest.approx(full.log_evidence, rel=1e-6)
    fd = score(model, X, "laplace", hessian="block_diagonal", gradient="fd", random_state=0,
               n_init=1, **fit_params)
    assert fd.log_evidence == pytest.approx(blk.log_evidence, rel=1e-6)


@pytest.mark.parametrize("gradient", ["exact", "fd"])
def test_laplace_is_exact_for_a_gaussian_posterior(gradient):
    r = score(_RegressionWithGradient(2, 1.0, 1.0), REGRESSION_X, "laplace", gradient=gradient)
    assert r.log_evidence == pytest.approx(REGRESSION_EXACT, abs=1e-6)
    assert r.diagnostics["gradient"] == gradient


def test_memory_cap_refuses_with_a_clear_message(hmm):
    model, X, fit_params = hmm
    with pytest.raises(MemoryError, match="max_memory_mb=0"):
        score(model, X, "laplace", max_memory_mb=1e-3, **fit_params)
    with pytest.raises(MemoryError, match="block_diagonal"):
        score(model, X, "laplace", max_memory_mb=1e-3, gradient="fd", **fit_params)
    with pytest.raises(ValueError, match="max_memory_mb"):
        score(model, X, "laplace", max_memory_mb=-1, **fit_params)
    with pytest.raises(ValueError, match="hessian"):
        score(model, X, "laplace", hessian="diagonal", **fit_params)


def test_small_memory_cap_batches_the_finite_differences(hmm):
    """A cap that admits only a few points per batch gives the same value."""
    model, X, fit_params = hmm
    big = score(model, X, "laplace", gradient="fd", random_state=0, n_init=1, **fit_params)
    small = score(model, X, "laplace", gradient="fd", random_state=0, n_init=1,
                  max_memory_mb=0.2, **fit_params)
    assert small.log_evidence == pytest.approx(big.log_evidence, rel=1e-12)


def test_progress_lines_when_verbose(hmm, capsys):
    model, X, fit_params = hmm
    score(model, X, "laplace", verbose=2, random_state=0, n_init=1, **fit_params)
    out = capsys.readouterr().out
    assert "[laplace: Hessian" in out and "[laplace] done" in out
    score(model, X, "laplace", random_state=0, n_init=1, **fit_params)
    assert capsys.readouterr().out == ""
