"""The bound-guided state-pruning move of VBLinearDynamicalSystem."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from sklearn_vb.datasets import make_lds, make_lds_params
from sklearn_vb.lds import VBLinearDynamicalSystem, _prune
from sklearn_vb.lds._prune import prune_step
from sklearn_vb.lds._state import PruneSchedule
from sklearn_vb.lds._vbem import hidden_stats
from sklearn_vb.scoring import score, scoring_model_for


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(seed=0, k=3, p=6, d=2, lengths=(300,)):
    params = make_lds_params(k, p, d, random_state=seed)
    U = np.random.default_rng(seed).standard_normal((sum(lengths), d))
    X, _ = make_lds(params, list(lengths), U, random_state=seed)
    return X, U, list(lengths)


def _run(model, X, U, lengths, n_iter):
    """Drive the VBEM steps by hand (no pruning step) for ``n_iter`` iterations."""
    model._validate_params()
    data = model._check_fit_data(X, U=U, lengths=lengths)
    model._initialize(data, check_random_state(0))
    for it in range(1, n_iter + 1):
        for step in ("hyper", "vbm", "vbe"):
            getattr(model, f"_step_{step}")(data, it)
    return data


def _force_move(model, last):
    """Make the next pruning step propose a move, with ``last`` as the previous bound."""
    model._prune_book = PruneSchedule(next=0, stall_from=10**9, last=last)


@pytest.fixture(scope="module")
def pruned():
    """k = 2 true states, fitted with 5, two sequences, inputs and intercept."""
    X, U, lengths = _data(3, k=2, p=5, lengths=(160, 120))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = VBLinearDynamicalSystem(n_states=5, max_iter=150, random_state=0)
        model.fit(X, U=U, lengths=lengths)
    return model, X, U, lengths


def test_rejected_move_restores_the_state_exactly():
    X, U, lengths = _data(0)
    model = VBLinearDynamicalSystem(n_states=3)
    data = _run(model, X, U, lengths, 120)
    before = model._lower_bound(data)
    state = copy.deepcopy(model._get_state())
    _force_move(model, before)
    prune_step(model, data, 121)
    # every dimension is real: removing the weakest costs hundreds of nats
    assert model._prune_book.rejected == 1
    assert model._lower_bound(data) == before
    assert model.n_states_ == 3
    after = model._get_state()
    assert after.keys() == state.keys()
    for key in ("alpha_", "gamma_", "beta_c_", "delta_c_", "init_state_cov_", "kept_states_"):
        np.testing.assert_array_equal(after[key], state[key])
    for key in ("omega", "ups", "cross"):
        np.testing.assert_array_equal(getattr(after["_q_x"], key), getattr(state["_q_x"], key))
    np.testing.assert_array_equal(after["_q_theta"].M_AB, state["_q_theta"].M_AB)
    assert len(after["_history"].alpha) == len(state["_history"].alpha)


def test_accepted_move_removes_the_weakest_dimension_and_raises_the_bound():
    X, U, lengths = _data(0)
    model = VBLinearDynamicalSystem(n_states=6, prune_iter=20)
    data = _run(model, X, U, lengths, 100)
    before = model._lower_bound(data)
    weakest = int(np.argmin(_prune.state_strength(model._q_theta, model._stats, model.n_states_)))
    _force_move(model, before)
    prune_step(model, data, 101)
    assert model.n_states_ == 5
    assert model.kept_states_.tolist() == [j for j in range(6) if j != weakest]
    after = model._lower_bound(data)
    assert after > before
    # the stored state is a complete VBE state of the 5-state model: the short form
    # ln Z - KL of F equals the explicit bound
    terms = model.lower_bound_terms_
    short = terms["ln_Z"] - sum(v for key, v in terms.items() if key != "ln_Z")
    np.testing.assert_allclose(short, after, rtol=1e-10)
    assert model._q_theta.M_AB.shape == (5, 5 + 3)
    assert model._q_theta.M_CD.shape == (6, 5 + 3)
    assert model.alpha_.shape == model.gamma_.shape == (5,)
    assert model.init_state_cov_.shape == (5, 5)
    # the next move is tried at the next iteration
    assert model._prune_book.next == 102


def test_the_move_waits_for_the_schedule_and_the_interval(monkeypatch):
    X, U, lengths = _data(0)
    model = VBLinearDynamicalSystem(n_states=6, hyperparameter_schedule=(10, 20, 30),
                                    prune_interval=50, verbose=2)
    data = _run(model, X, U, lengths, 1)
    calls = []
    # never reached too early
    monkeypatch.setattr(_prune, "remove_state", lambda est, data, j: calls.append(j))
    prune_step(model, data, 1)
    for it in range(2, 81):
        model._prune_book.last = -np.inf  # never stalled
        prune_step(model, data, it)
    assert calls == [] and model._prune_book.next == 81


def test_steps_check_and_monotone_history_through_accepted_moves():
    X, U, lengths = _data(1, k=2, p=4, lengths=(90, 70))
    model = VBLinearDynamicalSystem(n_states=5, hyperparameter_schedule=(0, 1, 2),
                                    init_state_cov="full", prune_interval=10, prune_iter=5,
                                    max_iter=80, bound_check="steps", random_state=1)
    model.fit(X, U=U, lengths=lengths)
    assert model.n_states_ < 5
    bounds = model.lower_bounds_
    assert bounds.shape == (model.n_iter_,)
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))


def test_inference_scoring_and_pickle_after_pruning(pruned):
    model, X, U, lengths = pruned
    k = model.n_states_
    assert k < 5 and model.kept_states_.shape == (k,)
    assert model.A_mean_.shape == (k, k) and model.C_mean_.shape == (5, k)
    assert model.B_mean_.shape == (k, 3) and model.Sigma_AB_.shape == (k + 3, k + 3)
    assert model.transform(X, U=U, lengths=lengths).shape == (len(X), k)
    # the training data's VB log normaliser with q(theta) fixed is the ln Z of F
    ln_z = model.score_sequences(X, U=U, lengths=lengths, method="bound")
    np.testing.assert_allclose(ln_z.sum(), model.lower_bound_terms_["ln_Z"], rtol=1e-10)
    mean, cov = model.predict(X, U=U, lengths=lengths, return_cov=True)
    from scipy.stats import multivariate_normal
    ll = model.score_samples(X, U=U, lengths=lengths)
    direct = [multivariate_normal(mean[t], cov[t]).logpdf(X[t]) for t in (0, 100, 200)]
    np.testing.assert_allclose(ll[[0, 100, 200]], direct, rtol=1e-9)
    f_mean, f_cov = model.forecast(3, X[:50], U=U[:50], U_future=U[50:53])
    assert f_mean.shape == (3, 5) and np.all(np.linalg.eigvalsh(f_cov) > 0)
    Y, states = model.sample(20, U=U[:20], random_state=0)
    assert states.shape == (20, k)
    # the scoring layer sees the pruned model
    sm = scoring_model_for(model)
    assert sm.k == k
    data = sm.prepare_data(X, U=U, lengths=lengths)
    loglik = float(sm.log_likelihood(sm.variational_posterior().mean(), data)[0])
    assert loglik == pytest.approx(model.score(X, U=U, lengths=lengths) * len(X), rel=1e-8)
    assert score(model, X, "vb", U=U, lengths=lengths).log_evidence == model.lower_bound_
    # the collapsed bound of the scoring model equals the estimator's explicit F
    est = copy.deepcopy(model)
    fit_data = est._check_fit_data(X, U=U, lengths=lengths)
    qx = est._q_x
    est._stats = hidden_stats(fit_data, qx)
    est._vbm(fit_data, est._stats)
    stats = sm.stats_from_moments(data, qx.omega, qx.ups, qx.cross, qx.omega0,
                                  qx.ups0)
    collapsed = float(np.sum(qx.entropy)) + sm.log_complete_evidence(stats)
    assert collapsed == pytest.approx(est._lower_bound(fit_data), rel=1e-10)
    # pickle round trip and reproducibility
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X, U=U, lengths=lengths),
                                  model.predict(X, U=U, lengths=lengths))
    refit = clone(model).fit(X, U=U, lengths=lengths)
    np.testing.assert_array_equal(refit.lower_bounds_, model.lower_bounds_)
    np.testing.assert_array_equal(refit.kept_states_, model.kept_states_)


def test_warm_start_continues_from_the_pruned_model(pruned):
    model, X, U, lengths = pruned
    warm = copy.deepcopy(model).set_params(warm_start=True, max_iter=10)
    warm.fit(X, U=U, lengths=lengths)
    assert warm.n_states_ == model.n_states_
    assert warm.lower_bounds_.shape == (model.n_iter_ + warm.n_iter_,)
    assert warm.lower_bound_ >= model.lower_bound_ - 1e-9 * abs(model.lower_bound_)


def test_no_pruning_without_ard_or_when_disabled():
    X, U, lengths = _data(0, k=2, p=4, lengths=(120,))
    for kwargs in ({"ard": False}, {"prune_states": False}):
        model = VBLinearDynamicalSystem(n_states=4, max_iter=120, random_state=0, **kwargs)
        model.fit(X, U=U, lengths=lengths)
        assert "prune" not in [step.name for step in model._iteration_steps()]
        assert model.n_states_ == 4 and model.kept_states_.tolist() == [0, 1, 2, 3]


def test_a_stalled_run_tries_every_removal_before_it_converges(capsys):
    X, U, lengths = _data(0, p=6)
    model = VBLinearDynamicalSystem(n_states=3, tol=1.0, max_iter=300, verbose=2,
                                    verbose_interval=10**6)
    model.fit(X, U=U, lengths=lengths)
    assert model.n_states_ == 3
    lines = [line for line in capsys.readouterr().out.splitlines() if "remove state" in line]
    # the stall is only reached after the schedule (30 iterations); at the stall every
    # dimension is proposed once, weakest first, and each is rejected (convergence
    # also needs the predicted remaining gain below tol, so it may come later)
    iterations = [int(line.split()[1].rstrip(":")) for line in lines]
    stall = [it for it in set(iterations) if iterations.count(it) == 3]
    assert stall and min(stall) > 31
    last = [line for line in lines if line.startswith(f"  iteration {min(stall)}:")]
    assert all(line.endswith("rejected") for line in last)
    assert sorted(int(line.split("remove state ")[1].split()[0]) for line in last) == [0, 1, 2]
