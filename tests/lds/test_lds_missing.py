"""Missing outputs (NaN) in VBLinearDynamicalSystem, marginalised per entry.

A step updates with its observed outputs only; every row of [C D] regresses on the
steps where its output is observed; the bound's data term counts the observed entries.
The Kalman recursions are checked against :mod:`tests.oracles.lds_dense`, which
integrates the stacked states of a sequence as one Gaussian (no recursion).
"""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBLinearDynamicalSystem
from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds._vbem import kl_terms
from sklearn_vb.lds.inference import smooth_states
from tests.oracles.lds_dense import log_normaliser


def _problem(seed=0, k=2, p=3, ds=1, do=2, T=12):
    rng = np.random.default_rng(seed)
    M_AB = np.hstack([0.8 * np.linalg.qr(rng.normal(size=(k, k)))[0],
                      rng.normal(size=(k, ds))])
    M_CD = rng.normal(size=(p, k + do))
    rho = rng.uniform(0.5, 3.0, size=p)
    Us, Uo = rng.normal(size=(T, ds)), rng.normal(size=(T, do))
    Y = rng.normal(size=(T, p))
    Y[[1, 4, 4, 9], [0, 1, 2, 1]] = np.nan
    Y[6] = np.nan
    mu0, Sigma0 = rng.normal(size=k), np.diag(rng.uniform(0.5, 2.0, size=k))
    return rng, M_AB, M_CD, rho, Us, Uo, Y, mu0, Sigma0


def _spread(rng, n, scale=0.05):
    G = rng.normal(size=(n, n))
    return scale * (G @ G.T / n + np.eye(n))


def _one_sequence(T):
    return np.array([0]), np.array([T])


def test_point_log_normaliser_is_the_likelihood_of_the_observed_entries():
    _, M_AB, M_CD, rho, Us, Uo, Y, mu0, Sigma0 = _problem()
    res = smooth_states(Y, Us, Uo, *_one_sequence(len(Y)), M_AB, M_CD, rho, mu0, Sigma0)
    k, m = M_AB.shape[0], M_CD.shape[1]
    exact = log_normaliser(Y, Us, Uo, M_AB, np.zeros((M_AB.shape[1],) * 2), M_CD,
                           np.zeros((m, m)), rho, np.log(rho), mu0, Sigma0)
    assert float(res.ln_z[0]) == pytest.approx(exact, abs=1e-10)
    # a missing entry is not an observed zero
    assert exact != pytest.approx(log_normaliser(
        np.nan_to_num(Y), Us, Uo, M_AB, np.zeros((M_AB.shape[1],) * 2), M_CD,
        np.zeros((m, m)), rho, np.log(rho), mu0, Sigma0), abs=1e-3)
    assert k == 2


@pytest.mark.parametrize("per_row", [True, False])
def test_vb_log_normaliser_integrates_the_observed_entries_of_the_averaged_model(per_row):
    # the VBE forward pass under a q(theta) with spread: ln Z of the parameter-averaged
    # potentials, with each step's observation penalty summed over its observed rows
    rng, M_AB, M_CD, rho, Us, Uo, Y, mu0, Sigma0 = _problem(seed=1)
    p, m = M_CD.shape
    Sigma_AB = _spread(rng, M_AB.shape[1])
    Sigma_CD = (np.stack([_spread(rng, m, 0.02 * (s + 1)) for s in range(p)]) if per_row
                else _spread(rng, m, 0.03))
    log_rho = np.log(rho) - rng.uniform(0.01, 0.2, size=p)
    res = smooth_states(Y, Us, Uo, *_one_sequence(len(Y)), M_AB, M_CD, rho, mu0, Sigma0,
                        Sigma_AB=Sigma_AB, Sigma_CD=Sigma_CD, log_rho=log_rho)
    expected = log_normaliser(Y, Us, Uo, M_AB, Sigma_AB, M_CD, Sigma_CD, rho, log_rho,
                              mu0, Sigma0)
    assert float(res.ln_z[0]) == pytest.approx(expected, abs=1e-9)


def test_a_fully_missing_frame_is_a_step_without_observation():
    # the state still evolves through the frame; only its observation is dropped
    rng, M_AB, M_CD, rho, Us, Uo, Y, mu0, Sigma0 = _problem(seed=2)
    Y = np.nan_to_num(Y, nan=0.3)
    Y[5] = np.nan
    kw = dict(Sigma_AB=_spread(rng, M_AB.shape[1]), Sigma_CD=_spread(rng, M_CD.shape[1]),
              log_rho=np.log(rho) - 0.1)
    seq = _one_sequence(len(Y))
    a = smooth_states(Y, Us, Uo, *seq, M_AB, M_CD, rho, mu0, Sigma0, **kw)
    dropped = np.ones(len(Y), dtype=bool)
    dropped[5] = False
    b = smooth_states(np.nan_to_num(Y, nan=7.0), Us, Uo, *seq, M_AB, M_CD, rho, mu0,
                      Sigma0, observed=dropped, **kw)
    for name in ("ln_z", "omega", "ups", "cross", "entropy"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12,
                                   atol=1e-12, err_msg=name)


def _data(seed=0, T=120):
    params = make_lds_params(n_states=2, n_outputs=3, random_state=seed)
    X, _ = make_lds(params, [T // 2, T // 2], random_state=seed)
    rng = np.random.default_rng(seed)
    X[rng.random(X.shape) < 0.15] = np.nan
    X[[10, 70]] = np.nan
    return X


def test_fit_with_missing_outputs_never_decreases_the_bound_and_accepts_nan_everywhere():
    X = _data()
    X_copy = X.copy()
    lengths = [60, 60]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short run: not converged
        model = VBLinearDynamicalSystem(n_states=3, random_state=0, max_iter=60).fit(
            X, lengths=lengths)
    bounds = np.asarray(model.lower_bounds_)
    assert np.all(np.isfinite(bounds))
    assert np.all(np.diff(bounds) >= -1e-8 * np.abs(bounds[1:]))
    assert np.isfinite(model.score(X, lengths=lengths))
    assert np.all(np.isfinite(model.score_samples(X, lengths=lengths)))
    assert np.all(np.isfinite(model.transform(X, lengths=lengths)))
    mean, cov = model.forecast(4, X[:60])
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))
    assert np.all(np.isfinite(model.posterior_std()["C"]))
    assert np.all(np.isfinite(model.predict(X, lengths=lengths)))
    post = model.state_posterior(X, lengths=lengths)
    assert np.all(np.isfinite(post.smoothed_mean))
    frames = model.score_samples(X, lengths=lengths)
    np.testing.assert_array_equal(frames[[10, 70]], 0.0)  # nothing observed: p = 1
    # the exact likelihood of the observed entries at the posterior means, per sequence
    data = model._check_new_data(X, lengths=lengths)
    M_AB = np.hstack([model.A_mean_, model.B_mean_[:, model.state_inputs_]])
    M_CD = np.hstack([model.C_mean_, model.D_mean_[:, model.output_inputs_]])
    rho = model.noise_precision_mean_
    for first, stop in zip(data.starts, data.ends):
        exact = log_normaliser(
            X[first:stop], data.Us[first:stop], data.Uo[first:stop], M_AB,
            np.zeros((M_AB.shape[1],) * 2), M_CD, np.zeros((M_CD.shape[1],) * 2), rho,
            np.log(rho), model.init_state_mean_, model.init_state_cov_)
        assert frames[first:stop].sum() == pytest.approx(exact, abs=1e-8)
    assert np.all(np.isfinite(model.score_sequences(X, lengths=lengths, method="bound")))
    # every row of [C D] has its own covariance and its noise its own shape
    p = X.shape[1]
    assert model.Sigma_CD_.shape[0] == p and model.rho_shape_.shape == (p,)
    np.testing.assert_array_equal(X, X_copy)


def test_bound_right_after_a_vbe_step_is_ln_z_minus_kl():
    # the data term of the bound (observed entries only, per-row designs) against the
    # kernel's normaliser: at a VBE optimum, F = ln Z - KL exactly
    X = _data(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VBLinearDynamicalSystem(n_states=2, random_state=0, max_iter=40).fit(X)
    data = model._check_fit_data(X)
    model._vbe(data)
    F = model._lower_bound(data)
    kl = kl_terms(model._q_theta, *model._hyper()).total()
    assert F == pytest.approx(float(np.sum(model._q_x.ln_z)) - kl, abs=1e-7)


def test_each_row_of_c_regresses_on_the_steps_where_its_output_is_observed():
    X = _data(seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VBLinearDynamicalSystem(n_states=2, random_state=0, max_iter=15,
                                        ard=False, fit_intercept=False).fit(X)
    data = model._check_fit_data(X)
    model._vbm(data, model._stats)
    q, qx = model._q_theta, model._q_x
    prior = np.concatenate([model.gamma_, model.delta_c_])
    for s in range(X.shape[1]):
        obs = ~np.isnan(X[:, s])
        W = qx.omega[obs].T @ qx.omega[obs] + qx.ups[obs].sum(axis=0) + np.diag(prior)
        Sigma = np.linalg.inv(W)
        np.testing.assert_allclose(q.Sigma_CD[s], Sigma, rtol=1e-8)
        np.testing.assert_allclose(q.M_CD[s], Sigma @ (qx.omega[obs].T @ X[obs, s]),
                                   rtol=1e-8)
        assert q.rho_shape[s] == pytest.approx(model.noise_prior_shape_ + 0.5 * obs.sum())


def test_infinity_and_an_output_never_observed_are_refused_clearly():
    X = _data()
    X[3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        VBLinearDynamicalSystem(n_states=2).fit(X)
    X = _data()
    Xn = X.copy()
    Xn[:, 2] = np.nan
    for method in ("vb", "ml"):
        with pytest.raises(ValueError, match="output 2"):
            VBLinearDynamicalSystem(n_states=2, method=method).fit(Xn)


def test_point_fits_and_evidence_scores_marginalise_missing_outputs():
    # the point fits run EM on the likelihood of the observed entries; the evidence
    # scores of a model fitted with or without missing outputs take them (the oracles
    # are in test_scoring_lds_missing.py)
    from sklearn_vb.scoring import score

    X = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("ml", "map"):
            point = VBLinearDynamicalSystem(n_states=2, method=method, random_state=0,
                                            max_iter=20).fit(X)
            assert np.isfinite(point.score(X))
        model = VBLinearDynamicalSystem(n_states=2, random_state=0, max_iter=5).fit(X)
        complete = VBLinearDynamicalSystem(n_states=2, random_state=0, max_iter=5).fit(
            np.nan_to_num(X))
        assert np.isfinite(score(model, np.nan_to_num(X), "bic", n_init=1).log_evidence)
        assert np.isfinite(score(complete, X, "bic", n_init=1).log_evidence)
