"""CS-dagger of the linear dynamical system: the complete-data terms along a completion
of the hidden states against a direct evaluation of the joint density, the complete-data
dimension against the parameter count, and the score against its definition."""

import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._dimension import effective_dimension


def _fitted(inputs):
    rng = np.random.default_rng(3)
    T, k, p = 40, 2, 3
    A = np.array([[0.8, 0.1], [-0.2, 0.6]])
    C = rng.normal(size=(p, k))
    U = rng.standard_normal((T, 1))
    x = np.zeros(k)
    Y = np.empty((T, p))
    for t in range(T):
        x = A @ x + rng.standard_normal(k) + (np.array([0.5, 0.0]) * U[t] if inputs else 0)
        Y[t] = C @ x + 0.4 * rng.standard_normal(p) + (0.3 * U[t] if inputs else 0)
    fit_params = {"U": U, "lengths": [25, 15]} if inputs else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a short fit: the scores only need a fitted q(theta), not a converged one
        est = VBLinearDynamicalSystem(n_states=k, random_state=0, max_iter=20, ard_check=False,
                                      prune_states=False, fit_intercept=inputs).fit(Y, **fit_params)
    return est, Y, fit_params


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "inputs"])
def fitted(request):
    return _fitted(request.param)


def _direct_complete_joint(model, theta, Z, data):
    """ln p(x_{0:N}, Y | theta) by scipy densities, one step at a time."""
    A, C, rho = theta["A"][0], theta["C"][0], theta["rho"][0]
    B = theta["B"][0] if model.ds else np.zeros((model.k, 0))
    D = theta["D"][0] if model.do else np.zeros((model.p, 0))
    total = 0.0
    for s, (a, b) in enumerate(zip(data.starts, data.ends)):
        prev = Z.x0[s]
        total += multivariate_normal.logpdf(prev, model.mu0, model.Sigma0)
        for t in range(a, b):
            x = Z.x[t]
            total += multivariate_normal.logpdf(x, A @ prev + B @ data.Us[t], np.eye(model.k))
            total += multivariate_normal.logpdf(data.Y[t], C @ x + D @ data.Uo[t],
                                                np.diag(1.0 / rho))
            prev = x
    return total


def test_complete_joint_per_case_equals_the_joint_density(fitted):
    est, Y, fit_params = fitted
    model = scoring_model_for(est)
    data = model.prepare_data(Y, **fit_params)
    rng = np.random.default_rng(0)
    Z = model.random_completion(data, rng)
    assert Z.x.shape == (Y.shape[0], model.k) and Z.x0.shape == (data.starts.size, model.k)
    q = model.variational_posterior()
    draws = q.sample(rng, 20)  # more than one chunk of parameter sets
    L = model.log_complete_joint_per_case(draws, Z, data)
    assert L.shape == (20, Y.shape[0])
    for c in (0, 7, 19):
        theta = {name: v[c:c + 1] for name, v in draws.items()}
        assert L[c].sum() == pytest.approx(_direct_complete_joint(model, theta, Z, data),
                                           rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(model.log_complete_joint_per_case(theta, Z, data)[0], L[c],
                                   rtol=1e-13, atol=1e-12)


def test_complete_data_dimension_is_the_full_parameter_count(fitted):
    """With the states observed nothing is degenerate: d' counts every parameter, while
    the incomplete-data dimension loses (at least) the k(k-1)/2 rotations of the states."""
    est, Y, fit_params = fitted
    model = scoring_model_for(est)
    data = model.prepare_data(Y, **fit_params)
    theta = model.fit_point(data, rng=np.random.default_rng(0), n_init=1)
    full = model.param_space.size
    rng = np.random.default_rng(1)
    assert effective_dimension(model, data, theta, rng, kind="complete") == full
    d = effective_dimension(model, data, theta, rng, kind="incomplete")
    assert d <= model.n_parameters() == full - model.k * (model.k - 1) // 2


def test_cs_dagger_is_cs_plus_the_dimension_term(fitted):
    est, Y, fit_params = fitted
    cs = score(est, Y, "cs", random_state=0, **fit_params)
    dag = score(est, Y, "cs_dagger", random_state=0, **fit_params)
    d, dc, n = dag.diagnostics["d"], dag.diagnostics["d_complete"], dag.diagnostics["n"]
    assert n == Y.shape[0] and dc == scoring_model_for(est).param_space.size
    assert dag.log_evidence == pytest.approx(cs.log_evidence + 0.5 * (dc - d) * np.log(n),
                                             rel=1e-12)
    assert score(est, Y, "cs_dagger", random_state=0, **fit_params).log_evidence == dag.log_evidence
