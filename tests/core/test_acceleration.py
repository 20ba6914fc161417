"""SQUAREM extrapolation of the VBEM fixed point (``sklearn_vb.base``).

Checked: the step on a linear map lands on its fixed point; the bound never decreases
at any iteration with extrapolation on (HMM with categorical, Gaussian full and diag,
Poisson emissions; DAG with hidden nodes); a rejected extrapolation leaves exactly the
state of the plain step; invalid proposals are refused; the hooks round-trip (the DAG
extrapolates inside its compiled fit, ``sklearn_vb.dag.fit_kernels``); the
accelerated fit reaches the plain fit's optimum in fewer iterations.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov
from sklearn_vb.base import SquaremSteps, bound_round_off
from sklearn_vb.datasets import beal_true_structure, make_beal_dag


def _fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of deliberately short fits
        return est.fit(*args, **kwargs)


def _hmm_problem(kind, seed):
    """A small random HMM data set and the estimator settings of its family."""
    rng = np.random.RandomState(seed)
    n, K = 400, 3
    states = np.zeros(n, dtype=int)
    for t in range(1, n):
        states[t] = states[t - 1] if rng.rand() < 0.85 else rng.randint(K)
    if kind == "categorical":
        B = rng.dirichlet(np.ones(6) * 0.5, size=K)
        X = np.array([rng.choice(6, p=B[s]) for s in states])[:, None]
        return X, dict(emission="categorical", n_symbols=6)
    if kind == "poisson":
        X = rng.poisson(np.array([1.0, 4.0, 9.0])[states][:, None] * np.ones(2))
        return X, dict(emission="poisson")
    covariance_type = kind.split("-")[1]
    X = rng.randn(n, 2) * 0.8 + np.array([[0, 0], [1.5, 0], [0, 1.5]])[states]
    return X, dict(emission="gaussian", covariance_type=covariance_type)


HMM_KINDS = ["categorical", "gaussian-full", "gaussian-diag", "poisson"]


def _dag_problem(seed, n=800):
    parents, cards, hidden = beal_true_structure()
    X = make_beal_dag(n, random_state=seed)
    return X, (parents, cards, hidden)


# ---------------------------------------------------------------------------- the step
def test_squarem_step_solves_a_linear_contraction_exactly():
    # M(theta) = rho theta + b has fixed point b / (1 - rho); with s = |r| / |v| the
    # SQUAREM point theta0 + 2 s r + s^2 v is exactly that fixed point
    rho, b = 0.97, np.array([1.0, -2.0, 0.5])
    steps = SquaremSteps(initial_step_max=1e6)
    theta = np.array([5.0, 3.0, -1.0])
    for _ in range(3):
        steps.record(theta)
        theta = rho * theta + b
    np.testing.assert_allclose(steps.proposal(), b / (1 - rho), rtol=1e-10)
    assert steps.step == pytest.approx(1 / (1 - rho))


def test_squarem_unit_step_is_the_last_plain_iterate():
    steps = SquaremSteps()  # step_max 1: the first proposal is theta2 itself
    points = [np.array([0.0, 1.0]), np.array([0.5, 1.2]), np.array([0.7, 1.25])]
    for p in points:
        steps.record(p)
    np.testing.assert_allclose(steps.proposal(), points[2], rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------- the bound
@pytest.mark.parametrize("kind", HMM_KINDS)
def test_hmm_bound_never_decreases_with_extrapolation(kind):
    accepted = 0
    for seed in range(3):
        X, kw = _hmm_problem(kind, seed)
        est = VBHiddenMarkov(4, random_state=seed, max_iter=300, tol=1e-9,
                             acceleration="squarem", **kw)
        _fit(est, X)
        b = est.lower_bounds_
        assert np.all(np.diff(b) >= -bound_round_off(b[:-1]))
        accepted += est.extrapolations_["accepted"]
    assert accepted > 0  # the extrapolations were exercised


def test_dag_bound_never_decreases_with_extrapolation():
    accepted = 0
    for seed in range(3):
        X, (parents, cards, hidden) = _dag_problem(seed)
        est = VBDiscreteDAG(parents, cards, hidden, random_state=seed, n_init=1, max_iter=400,
                            tol=1e-9, acceleration="squarem")
        _fit(est, X)
        b = est.lower_bounds_
        assert np.all(np.diff(b) >= -bound_round_off(b[:-1]))
        accepted += est.extrapolations_["accepted"]
    assert accepted > 0


def test_dag_accelerated_reaches_plain_optimum_in_fewer_iterations():
    # VBEM on the DAG with two hidden nodes converges slowly (hundreds of iterations)
    X, (parents, cards, hidden) = _dag_problem(0, n=2000)
    fits = {}
    for acceleration in (None, "squarem"):
        est = VBDiscreteDAG(parents, cards, hidden, random_state=0, n_init=1, max_iter=5000,
                            tol=1e-10, acceleration=acceleration)
        fits[acceleration] = _fit(est, X)
    plain, fast = fits[None], fits["squarem"]
    assert plain.converged_ and fast.converged_
    assert fast.lower_bound_ == pytest.approx(plain.lower_bound_, rel=1e-8)
    assert fast.n_iter_ + fast.extrapolations_["rejected"] < 0.7 * plain.n_iter_
    for a, b in zip(plain.posterior_, fast.posterior_):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------- rejection
class _ForcedProposal(SquaremSteps):
    """Proposes a fixed vector with a step length above 1 (so it is evaluated)."""

    def __init__(self, vector):
        super().__init__()
        self.vector = vector
        self.points = [vector] * 3

    def proposal(self, shrink=1.0):
        self.step = 2.0
        self.at_cap = False
        return self.vector


def _started_hmm(kind, n_iter=6):
    X, kw = _hmm_problem(kind, 0)
    est = VBHiddenMarkov(3, random_state=0, max_iter=n_iter, acceleration=None, **kw)
    _fit(est, X)
    data = est._check_fit_data(X)
    return est, data


def _assert_equal(x, y):
    """Exact equality of nested dicts / dataclasses / tuples / lists of arrays and numbers."""
    if dataclasses.is_dataclass(x):
        assert type(x) is type(y)
        for f in dataclasses.fields(x):
            _assert_equal(getattr(x, f.name), getattr(y, f.name))
    elif isinstance(x, dict):
        assert x.keys() == y.keys()
        for k in x:
            _assert_equal(x[k], y[k])
    elif isinstance(x, (tuple, list)):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            _assert_equal(u, v)
    else:
        np.testing.assert_array_equal(x, y)


def _assert_same_state(a, b):
    _assert_equal(a._get_state(), b._get_state())


@pytest.mark.parametrize("kind", HMM_KINDS)
def test_rejected_extrapolation_leaves_the_plain_step(kind):
    import copy

    est, data = _started_hmm(kind)
    previous = float(est.lower_bounds_[-1])
    plain = copy.deepcopy(est)
    plain_value, _ = plain._one_iteration(data, 7, previous)
    # a valid but poor q(theta): every log hyperparameter scaled far from the fit
    bad = est._pack_hyperparameters() * 0.0 + 0.1 if kind != "gaussian-full" else None
    if bad is None:  # Gaussian full: keep the scales valid, move every mean far away
        post = est._emission("posterior")
        post = dataclasses.replace(post, means=post.means + 50.0)
        bad = np.concatenate([np.log(est.startprob_posterior_),
                              np.log(est.transmat_posterior_).ravel(), est._family.pack(post)])
    steps = _ForcedProposal(bad)
    value, restarted = est._extrapolated_iteration(data, 7, previous, steps)
    assert steps.rejected == 1 and steps.accepted == 0 and not restarted
    assert value == plain_value
    _assert_same_state(est, plain)
    assert est._run_bounds == plain._run_bounds


def test_invalid_normal_wishart_proposal_is_refused():
    est, data = _started_hmm("gaussian-full")
    packed = est._pack_hyperparameters()
    before = est._get_state()
    K, D = 3, 2
    family = est._family
    post = est._emission("posterior")
    vector = family.pack(post).copy()
    # natural second moments minus a large multiple of the identity: not positive definite
    start = K + K * D
    second = vector[start:start + K * D * D].reshape(K, D, D) - 1e6 * np.eye(D)
    vector[start:start + K * D * D] = second.ravel()
    assert family.unpack(vector, post) is None
    full = np.concatenate([packed[:K + K * K], vector])
    assert est._unpack_hyperparameters(full, data) is False
    after = est._get_state()
    for key in before:
        if isinstance(before[key], np.ndarray):
            np.testing.assert_array_equal(before[key], after[key])


# ---------------------------------------------------------------------------- round trip
@pytest.mark.parametrize("kind", HMM_KINDS)
def test_hmm_hooks_round_trip(kind):
    est, data = _started_hmm(kind)
    names = ["startprob_posterior_", "transmat_posterior_"] + [
        f"{name}_posterior_" for name in est._family.hyper_names]
    before = {name: np.array(getattr(est, name), dtype=float) for name in names}
    assert est._unpack_hyperparameters(est._pack_hyperparameters(), data)
    for name in names:
        np.testing.assert_allclose(getattr(est, name), before[name], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------- options
def test_acceleration_option_is_validated():
    X, kw = _hmm_problem("categorical", 0)
    with pytest.raises(ValueError, match="acceleration"):
        VBHiddenMarkov(2, acceleration="anderson", **kw).fit(X)


def test_plain_fit_reports_no_extrapolations():
    X, kw = _hmm_problem("categorical", 0)
    est = _fit(VBHiddenMarkov(2, acceleration=None, random_state=0, max_iter=20, **kw), X)
    assert not hasattr(est, "extrapolations_")


def test_bernoulli_mixture_bound_never_decreases_with_extrapolation():
    from sklearn_vb._commands.bernoulli_mixture import VBBernoulliMixture

    accepted = 0
    for seed in range(3):
        rng = np.random.RandomState(seed)
        means = rng.uniform(0.1, 0.9, size=(3, 8))
        X = (rng.uniform(size=(300, 8)) < means[rng.randint(3, size=300)]).astype(float)
        est = _fit(VBBernoulliMixture(3, random_state=seed, max_iter=2000, tol=1e-10,
                                      acceleration="squarem"), X)
        b = est.lower_bounds_
        assert np.all(np.diff(b) >= -bound_round_off(b[:-1]))
        accepted += est.extrapolations_["accepted"]
    assert accepted > 0


def test_verbose_restart_line_counts_extrapolations(capsys):
    X, (parents, cards, hidden) = _dag_problem(0, n=300)
    _fit(VBDiscreteDAG(parents, cards, hidden, random_state=0, n_init=1, max_iter=200,
                       verbose=1), X)
    assert "extrapolations kept" in capsys.readouterr().out
