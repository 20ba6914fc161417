"""VBLinearDynamicalSystem: bound, VBM, hyperparameters, API."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds import VBLinearDynamicalSystem
from sklearn_vb.lds.inference import dynamics_moments, output_moments


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(seed=0, k=2, p=4, d=2, lengths=(40, 30)):
    params = make_lds_params(k, p, d, noise_std=0.5, random_state=seed)
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((sum(lengths), d))
    X, states = make_lds(params, list(lengths), U, random_state=seed)
    return X, U, np.asarray(lengths)


def _fresh(model, X, U=None, lengths=None, seed=0):
    """An initialised (not fitted) model and its data, for driving steps by hand."""
    model._validate_params()
    data = model._check_fit_data(X, U=U, lengths=lengths)
    model._initialize(data, check_random_state(seed))
    return data


@pytest.mark.parametrize("seed", range(4))
def test_bound_never_decreases_with_every_update(seed):
    rng = np.random.default_rng(seed)
    X, U, lengths = _data(seed, k=int(rng.integers(1, 4)), p=int(rng.integers(2, 5)),
                          d=int(rng.integers(0, 3)))
    model = VBLinearDynamicalSystem(
        n_states=3, hyperparameter_schedule=(0, 1, 2), init_state_cov="full",
        max_iter=40, random_state=seed, bound_check="steps",
    )
    model.fit(X, U=U if U.shape[1] else None, lengths=lengths)
    assert np.all(np.diff(model.lower_bounds_) >= -1e-9 * np.abs(model.lower_bounds_[1:]))
    assert model.lower_bounds_[-1] > model.lower_bounds_[0]


@pytest.mark.parametrize("cov", ["diag", "spherical", "fixed"])
def test_every_step_raises_the_explicit_bound(cov):
    X, U, lengths = _data(3)
    model = VBLinearDynamicalSystem(n_states=3, hyperparameter_schedule=(0, 0, 0),
                                    init_state_cov=cov)
    data = _fresh(model, X, U, lengths)
    model._step_vbm(data, 1)
    model._step_vbe(data, 1)
    previous = model._lower_bound(data)
    for it in range(2, 12):
        for step in ("hyper", "vbm", "vbe"):
            getattr(model, f"_step_{step}")(data, it)
            value = model._lower_bound(data)
            assert value >= previous - 1e-9 * abs(previous), (it, step)
            previous = value


def test_short_form_equals_explicit_bound_after_vbe():
    X, U, lengths = _data(1)
    model = VBLinearDynamicalSystem(n_states=2, hyperparameter_schedule=(0, 0, 0))
    data = _fresh(model, X, U, lengths)
    for it in range(1, 6):
        model._step_hyper(data, it)
        model._step_vbm(data, it)
        model._step_vbe(data, it)
        terms = model.lower_bound_terms_
        short = terms["ln_Z"] - sum(v for key, v in terms.items() if key != "ln_Z")
        np.testing.assert_allclose(model._lower_bound(data), short, rtol=1e-10)


def test_vbm_joint_form_equals_factorised_form():
    """The joint-row posterior equals the thesis's factorised one."""
    X, U, lengths = _data(2, k=2, p=3, d=2)
    model = VBLinearDynamicalSystem(n_states=2, fit_intercept=False)
    data = _fresh(model, X, U, lengths)
    model._step_vbm(data, 1)
    model._step_vbe(data, 1)
    model.alpha_ = np.array([0.5, 2.0])
    model.beta_c_ = np.array([1.5, 0.7])
    model.gamma_ = np.array([0.3, 3.0])
    model.delta_c_ = np.array([2.5, 0.2])
    model._step_vbm(data, 2)
    q, s = model._q_theta, model._stats
    k, p = 2, 3
    inv = np.linalg.inv
    Sigma_A = inv(np.diag(model.alpha_) + s.W_A)
    Sigma_B = inv(np.diag(model.beta_c_) + data.UUs - s.G_A.T @ Sigma_A @ s.G_A)
    B_breve = s.M.T - s.S_A.T @ Sigma_A @ s.G_A
    B_bar = B_breve @ Sigma_B
    A_bar = (s.S_A.T - B_bar @ s.G_A.T) @ Sigma_A
    Sigma_A_hat = Sigma_A + Sigma_A @ s.G_A @ Sigma_B @ s.G_A.T @ Sigma_A
    AtA = A_bar.T @ A_bar + k * Sigma_A_hat
    AtB = Sigma_A @ (s.S_A @ B_bar - s.G_A @ (B_bar.T @ B_bar + k * Sigma_B))
    np.testing.assert_allclose(q.M_AB[:, :k], A_bar, rtol=1e-9)
    np.testing.assert_allclose(q.M_AB[:, k:], B_bar, rtol=1e-9)
    np.testing.assert_allclose(q.E_AB[:k, :k], AtA, rtol=1e-9)
    np.testing.assert_allclose(q.E_AB[:k, k:], AtB, rtol=1e-9, atol=1e-12)
    # output block
    Sigma_C = inv(np.diag(model.gamma_) + s.W_C)
    Sigma_D = inv(np.diag(model.delta_c_) + data.UUo - s.G_C.T @ Sigma_C @ s.G_C)
    D_breve = data.UY.T - s.S_C.T @ Sigma_C @ s.G_C
    D_bar = D_breve @ Sigma_D
    C_bar = (s.S_C.T - D_bar @ s.G_C.T) @ Sigma_C
    G = (np.diag(data.YY) - s.S_C.T @ Sigma_C @ s.S_C - D_breve @ Sigma_D @ D_breve.T)
    rate = model.noise_prior_rate_ + 0.5 * np.diag(G)
    np.testing.assert_allclose(q.M_CD[:, :k], C_bar, rtol=1e-9)
    np.testing.assert_allclose(q.M_CD[:, k:], D_bar, rtol=1e-9)
    np.testing.assert_allclose(q.rho_rate, rate, rtol=1e-9)
    rho = q.rho
    Sigma_C_hat = Sigma_C + Sigma_C @ s.G_C @ Sigma_D @ s.G_C.T @ Sigma_C
    CRC = C_bar.T @ np.diag(rho) @ C_bar + p * Sigma_C_hat
    CRD = Sigma_C @ (s.S_C @ np.diag(rho) @ D_bar
                     - s.G_C @ (D_bar.T @ np.diag(rho) @ D_bar + p * Sigma_D))
    np.testing.assert_allclose(q.E_CD[:k, :k], CRC, rtol=1e-9)
    np.testing.assert_allclose(q.E_CD[:k, k:], CRD, rtol=1e-9, atol=1e-12)
    # KL split: ln|Sigma_AB| = ln|Sigma_A| + ln|Sigma_B|
    np.testing.assert_allclose(
        q.logdet_Sigma_AB, np.linalg.slogdet(Sigma_A)[1] + np.linalg.slogdet(Sigma_B)[1],
        rtol=1e-10)


def test_hyperparameter_updates_are_stationary_points():
    # the thesis's fixed-point updates: stationary for the bound at a fixed q(theta)
    # (the exact joint updates are checked in test_lds_hyper.py)
    X, U, lengths = _data(4)
    model = VBLinearDynamicalSystem(n_states=2, hyperparameter_schedule=(0, 0, 0),
                                    hyperparameter_update="fixed-point")
    data = _fresh(model, X, U, lengths)
    for it in range(1, 4):
        model._step_hyper(data, it)
        model._step_vbm(data, it)
        model._step_vbe(data, it)
    model._step_hyper(data, 4)
    base = model._lower_bound(data)
    for name in ("alpha_", "beta_c_", "gamma_", "delta_c_"):
        value = getattr(model, name)
        for j in range(value.shape[0]):
            for step in (1e-3, -1e-3):
                moved = value.copy()
                moved[j] *= np.exp(step)
                setattr(model, name, moved)
                assert model._lower_bound(data) <= base + 1e-9 * abs(base)
            setattr(model, name, value)
    a, b = model.noise_prior_shape_, model.noise_prior_rate_
    for da, db in ((1e-3, 0), (-1e-3, 0), (0, 1e-3), (0, -1e-3)):
        model.noise_prior_shape_, model.noise_prior_rate_ = a * np.exp(da), b * np.exp(db)
        assert model._lower_bound(data) <= base + 1e-9 * abs(base)
    model.noise_prior_shape_, model.noise_prior_rate_ = a, b
    assert model._lower_bound(data) == base


def test_zero_inputs_equal_the_no_input_model():
    X, _, lengths = _data(5, d=0)
    # without rotation moves: with them the zero inputs still shape the move (the
    # rotated q(B) enters its objective), so the two trajectories differ
    common = dict(n_states=2, fit_intercept=False, max_iter=15, random_state=0,
                  rotations=False)
    plain = VBLinearDynamicalSystem(**common).fit(X, lengths=lengths)
    zero = VBLinearDynamicalSystem(**common).fit(X, U=np.zeros((len(X), 2)), lengths=lengths)
    np.testing.assert_allclose(zero.lower_bounds_, plain.lower_bounds_, rtol=1e-9)
    assert zero.lower_bound_terms_["KL_B"] == pytest.approx(0.0, abs=1e-9)
    assert zero.lower_bound_terms_["KL_D_given_rho"] == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(zero.transform(X, U=np.zeros((len(X), 2)), lengths=lengths),
                               plain.transform(X, lengths=lengths), rtol=1e-8, atol=1e-10)


def test_structural_input_masks():
    X, U, lengths = _data(6, d=2)
    model = VBLinearDynamicalSystem(n_states=2, input_to_state=False,
                                    input_to_output=np.array([True, False]), max_iter=10,
                                    random_state=0).fit(X, U=U, lengths=lengths)
    assert model.B_mean_.shape == (2, 3) and model.D_mean_.shape == (4, 3)
    np.testing.assert_array_equal(model.B_mean_[:, :2], 0.0)
    np.testing.assert_array_equal(model.D_mean_[:, 1], 0.0)
    assert np.all(model.B_mean_[:, 2] != 0) and np.all(model.D_mean_[:, 0] != 0)
    assert np.isinf(model.beta_[0]) and np.isinf(model.delta_[1])
    sig = model.significant_inputs()
    assert not sig["B"][:, :2].any() and not sig["D"][:, 1].any()


def test_score_predict_forecast_identities():
    X, U, lengths = _data(7, k=2, p=3, d=1, lengths=(60,))
    model = VBLinearDynamicalSystem(n_states=2, max_iter=30, random_state=0).fit(X, U=U)
    ll = model.score_samples(X, U=U)
    assert ll.shape == (60,)
    np.testing.assert_allclose(model.score(X, U=U), ll.mean())
    # per-step scores are exactly the Gaussian one-step predictive densities
    mean, cov = model.predict(X, U=U, return_cov=True)
    from scipy.stats import multivariate_normal
    direct = [multivariate_normal(mean[t], cov[t]).logpdf(X[t]) for t in range(60)]
    np.testing.assert_allclose(ll, direct, rtol=1e-9)
    # ln Z' (bound) never exceeds the exact likelihood at the posterior mean
    assert model.score_sequences(X, U=U, method="bound")[0] < ll.sum()
    np.testing.assert_allclose(model.score_sequences(X, U=U, method="mean")[0], ll.sum())
    # plug-in forecast of one step equals predict's next-step output
    f_mean, f_cov = model.forecast(1, X[:40], U=U[:40], U_future=U[40:41], method="plugin")
    np.testing.assert_allclose(f_mean[0], mean[40], rtol=1e-9)
    np.testing.assert_allclose(f_cov[0], cov[40], rtol=1e-9)
    # the VB forecast adds parameter uncertainty to the noise term
    v_mean, v_cov = model.forecast(5, X[:40], U=U[:40], U_future=U[40:45])
    assert v_mean.shape == (5, 3) and v_cov.shape == (5, 3, 3)
    for c in v_cov:
        assert np.all(np.linalg.eigvalsh(c) > 0)
    assert np.all(np.diagonal(v_cov, axis1=1, axis2=2)[0] > 0)
    # transform gives smoothed states of the right shape; bic/aic finite
    assert model.transform(X, U=U).shape == (60, 2)
    assert np.isfinite(model.bic(X, U=U)) and model.aic(X, U=U) < model.bic(X, U=U)
    Y, states = model.sample(25, U=U[:25], random_state=1)
    assert Y.shape == (25, 3) and states.shape == (25, 2)


def test_regression_moments_are_the_expected_sums_over_time_steps():
    """W_z, R_AB, W_w and R_CD of the VBM step, summed step by step from q(x):
    z_t = [x_{t-1}; us_t] (x_0 of its sequence at a first step), w_t = [x_t; uo_t]."""
    X, U, lengths = _data(2, k=2, p=3, d=1, lengths=(9, 6))
    model = VBLinearDynamicalSystem(n_states=2)
    data = _fresh(model, X, U=U, lengths=lengths)
    for step in ("hyper", "vbm", "vbe"):
        getattr(model, f"_step_{step}")(data, 1)
    qx, k = model._q_x, 2
    W_z, R_AB = dynamics_moments(model._stats, data.UUs)
    W_w, R_CD = output_moments(model._stats, data.UUo, data.UY)
    ds, do = data.Us.shape[1], data.Uo.shape[1]
    want = [np.zeros((k + ds, k + ds)), np.zeros((k + ds, k)), np.zeros((k + do, k + do)),
            np.zeros((k + do, 3))]
    for s, (a, b) in enumerate(zip(data.starts, data.ends)):
        for t in range(a, b):
            first = t == a
            m_prev = qx.omega0[s] if first else qx.omega[t - 1]
            V_prev = qx.ups0[s] if first else qx.ups[t - 1]
            # Cov(x_{t-1}, x_t): the smoother's cross covariance (at a first step, with x_0)
            z = np.concatenate([m_prev, data.Us[t]])
            zz = np.outer(z, z)
            zz[:k, :k] += V_prev
            zx = np.outer(z, qx.omega[t])
            zx[:k] += qx.cross[t]
            w = np.concatenate([qx.omega[t], data.Uo[t]])
            ww = np.outer(w, w)
            ww[:k, :k] += qx.ups[t]
            for total, term in zip(want, (zz, zx, ww, np.outer(w, X[t]))):
                total += term
    for got, ref in zip((W_z, R_AB, W_w, R_CD), want):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)


def test_state_posterior_holds_the_filter_and_the_smoother_of_every_sequence():
    X, U, lengths = _data(5, k=2, p=3, d=1, lengths=(35, 25))
    model = VBLinearDynamicalSystem(n_states=2, max_iter=20, random_state=0).fit(
        X, U=U, lengths=lengths)
    post = model.state_posterior(X, U=U, lengths=lengths)
    np.testing.assert_array_equal(post.starts, [0, 35])
    np.testing.assert_array_equal(post.ends, [35, 60])
    np.testing.assert_array_equal(post.smoothed_mean, model.transform(X, U=U, lengths=lengths))
    assert post.filtered_cov.shape == post.smoothed_cov.shape == (60, 2, 2)
    # at the last step of a sequence the smoother has nothing more to add; before it,
    # the later observations only narrow the belief
    last = post.ends - 1
    np.testing.assert_allclose(post.smoothed_mean[last], post.filtered_mean[last], rtol=1e-12)
    np.testing.assert_allclose(post.smoothed_cov[last], post.filtered_cov[last], rtol=1e-12)
    gap = post.filtered_cov - post.smoothed_cov
    assert np.all(np.linalg.eigvalsh(0.5 * (gap + gap.transpose(0, 2, 1))) > -1e-12)
    # the first sequence's beliefs do not depend on the second
    alone = model.state_posterior(X[:35], U=U[:35])
    np.testing.assert_allclose(alone.smoothed_mean, post.smoothed_mean[:35], rtol=1e-12)


def test_sequence_ids_equal_lengths_and_pickle_round_trip():
    X, U, lengths = _data(8)
    ids = np.repeat([3, 1], lengths)
    a = VBLinearDynamicalSystem(n_states=2, max_iter=8, random_state=0).fit(X, U=U,
                                                                           lengths=lengths)
    b = VBLinearDynamicalSystem(n_states=2, max_iter=8, random_state=0).fit(
        X, U=U, sequence_ids=ids)
    np.testing.assert_array_equal(a.lower_bounds_, b.lower_bounds_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X, U=U, lengths=lengths),
                                  a.predict(X, U=U, lengths=lengths))
    d = clone(a).fit(X, U=U, lengths=lengths)
    np.testing.assert_array_equal(d.lower_bounds_, a.lower_bounds_)


def test_input_validation():
    X, U, lengths = _data(9)
    X_in = X.copy()
    model = VBLinearDynamicalSystem(n_states=2, max_iter=3, random_state=0)
    with pytest.raises(ValueError, match="U"):
        model.fit(X, U=U[:-1])
    with pytest.raises(ValueError, match="lengths"):
        model.fit(X, U=U, lengths=[5, 5])
    with pytest.raises(ValueError, match="hyperparameter_schedule"):
        VBLinearDynamicalSystem(hyperparameter_schedule=(1, 2)).fit(X, U=U)
    with pytest.raises(ValueError, match="input_to_state"):
        VBLinearDynamicalSystem(input_to_state=np.array([True])).fit(X, U=U)
    model.fit(X, U=U, lengths=lengths)
    np.testing.assert_array_equal(X, X_in)
    with pytest.raises(ValueError, match="U is required"):
        model.predict(X)
    with pytest.raises(ValueError, match="U"):
        model.score(X, U=U[:, :1])
    with pytest.raises(ValueError, match="n_steps"):
        model.forecast(0, U_future=U[:1])


def test_default_state_dimension_lets_few_outputs_oscillate():
    from sklearn.utils import check_random_state
    rng = np.random.default_rng(0)
    for p, expected in ((1, 4), (2, 4), (6, 6)):
        model = VBLinearDynamicalSystem()
        model._validate_params()
        data = model._check_fit_data(rng.standard_normal((30, p)))
        model._initialize(data, check_random_state(0))
        assert model.n_states_ == expected
