"""Input-driven transitions with continuous inputs (``transition_inputs="continuous"``,
``U`` real (n_samples, P)): stick-breaking logistic transitions with Gaussian
coefficients, VB through the Jaakkola-Jordan bound.

Oracles: the bound's per-step weights against the exact stick-breaking probabilities
(equal at a point mass, sub-normalised otherwise); the VBE normaliser and the
statistics of q(W) against enumeration of the state paths; ln p(X | U) by enumerating
the paths and integrating every stick's coefficients by Gauss-Hermite quadrature (the
bound must lie below it); the bound never decreasing after any step; on simulated data
the evidence of the input-driven model against the plain one with and without an
input effect.
"""

import pickle

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.datasets import make_input_driven_hmm_sequences
from sklearn_vb.hmm import stick_breaking_transitions
from sklearn_vb.hmm._logistic_transitions import (jj_log_weights, stats_from_pairs,
                                                  stick_breaking_log_probs)
from sklearn_vb.hmm._vbem import expected_log_params, vbe
from sklearn_vb.scoring import score
from tests.oracles.hmm_paths import exact_logistic_log_evidence, path_sums

B_TRUE = np.array([[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]])
#: K = 2, one input: state 0 stays with probability sigma(2.5 - 2.5 u), state 1
#: leaves for state 0 with probability sigma(-2.5 - 2.5 u)
COEF_TRUE = np.array([[[-2.5, 2.5]], [[-2.5, -2.5]]])
COEF_NULL = np.array([[[0.0, 2.5]], [[0.0, -2.5]]])


def simulate(coef, n_seq, length, seed):
    X, _, U, lengths = make_input_driven_hmm_sequences(
        None, B_TRUE, [length] * n_seq, transition_coef=coef, random_state=seed)
    return X, U, lengths


def _design(U):
    U = np.asarray(U, dtype=float).reshape(len(U), -1)
    return np.hstack([U, np.ones((len(U), 1))])


# ---------------------------------------------------------------------------
# the bound's transition weights
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("K", [1, 2, 4])
def test_jj_weights_are_exact_at_a_point_and_sub_normalised(K):
    rng = np.random.default_rng(K)
    D = 3
    X = _design(rng.normal(size=(50, D - 1)))
    mean = rng.normal(scale=1.5, size=(K, K - 1, D))
    point = mean[..., :, None] * mean[..., None, :]
    weights, xi = jj_log_weights(mean, point, X)
    # at a point mass xi = |psi| and the bound is tight
    np.testing.assert_allclose(weights, stick_breaking_log_probs(mean, X), atol=1e-10)
    np.testing.assert_allclose(np.exp(stick_breaking_log_probs(mean, X)).sum(-1), 1.0,
                               atol=1e-12)
    # with spread, exp E[h] sums to less than one and lies below E_q[pi] (Monte Carlo)
    spread = rng.normal(size=(K, K - 1, D, D)) * 0.5
    cov = spread @ np.swapaxes(spread, -1, -2) + 0.1 * np.eye(D)
    weights, _ = jj_log_weights(mean, cov + point, X)
    assert np.all(np.exp(weights).sum(-1) <= 1.0 + 1e-12)
    if K > 1:
        draws = mean + np.einsum("kide,skie->skid", np.linalg.cholesky(cov),
                                 rng.standard_normal((4000, K, K - 1, D)))
        expected_pi = np.mean([np.exp(stick_breaking_log_probs(w, X[:5])) for w in draws],
                              axis=0)
        assert np.all(np.exp(weights[:5]) <= expected_pi + 0.02)


def test_stick_breaking_transitions():
    coef = np.random.default_rng(0).normal(size=(3, 2, 2))
    u = np.linspace(-2, 2, 7)
    A = stick_breaking_transitions(coef, u)
    assert A.shape == (7, 3, 3)
    np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-12)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    psi = coef[1] @ np.array([u[2], 1.0])
    np.testing.assert_allclose(A[2, 1], [sig(psi[0]), (1 - sig(psi[0])) * sig(psi[1]),
                                         (1 - sig(psi[0])) * (1 - sig(psi[1]))])
    with pytest.raises(ValueError, match="coef must have shape"):
        stick_breaking_transitions(coef, np.zeros((7, 2)))


# ---------------------------------------------------------------------------
# tiny problems against enumeration and quadrature
# ---------------------------------------------------------------------------

X_TINY = np.array([0, 2, 2, 1, 0, 0, 2]).reshape(-1, 1)
U_TINY = np.array([0.3, -1.2, 0.8, 1.5, -0.4, 0.9, -1.1])
LENGTHS_TINY = [4, 3]


def _tiny(**kw):
    params = dict(n_components=2, n_symbols=3, transition_inputs="continuous",
                  random_state=0, n_init=2)
    params.update(kw)
    return VBHiddenMarkov(**params).fit(X_TINY, lengths=LENGTHS_TINY, U=U_TINY)


def test_vbe_normaliser_and_statistics_equal_path_enumeration():
    est = _tiny(max_iter=5)
    posterior = est._hyper("posterior")
    data = est.check_data(X_TINY, lengths=LENGTHS_TINY, U=U_TINY)
    out = vbe(est._family, posterior, data)[0]
    Lpi, moments, LE = expected_log_params(est._family, posterior)
    design = _design(U_TINY)
    steps, xi = jj_log_weights(moments.mean, moments.second, design)
    # every frame its own matrix: the enumeration's levels are the frames
    log_z, pairs = path_sums(X_TINY, LENGTHS_TINY, Lpi, steps, LE,
                             levels=np.arange(len(X_TINY)))
    assert float(out[0].sum()) == pytest.approx(log_z, abs=1e-10)
    A, b = stats_from_pairs(pairs, xi, design)
    np.testing.assert_allclose(out[3].precision, A, atol=1e-10)
    np.testing.assert_allclose(out[3].shift, b, atol=1e-10)
    assert est.score_bound(X_TINY, lengths=LENGTHS_TINY, U=U_TINY) == pytest.approx(
        log_z, abs=1e-10)


def _exact(est, n_nodes=120):
    prior = est.transmat_prior_
    return exact_logistic_log_evidence(
        X_TINY, LENGTHS_TINY, _design(U_TINY), 2, 3, est.startprob_prior_,
        est.emissionprob_prior_, prior.mean, np.linalg.inv(prior.precision),
        n_nodes=n_nodes)


@pytest.mark.parametrize("priors", ["default", "strong"])
def test_bound_is_below_the_exact_log_evidence_given_the_inputs(priors):
    kw = {} if priors == "default" else dict(
        startprob_prior=3.0, transition_coef_prior=0.25,
        transmat_prior=np.array([[8.0, 2.0], [2.0, 8.0]]),
        emissionprob_prior=np.array([[12.0, 4.0, 4.0], [4.0, 4.0, 12.0]]))
    est = _tiny(**kw)
    exact = _exact(est)
    # the quadrature has converged
    assert _exact(est, n_nodes=160) == pytest.approx(exact, abs=1e-7)
    assert est.lower_bound_ <= exact + 1e-9
    # a bound, not an unrelated number (the gap includes ln 2 of the two state namings)
    assert est.lower_bound_ > exact - 3.0
    t = est.lower_bound_terms_
    assert t["log_normaliser"] - t["kl_startprob"] - t["kl_transmat"] - t["kl_emission"] == \
        pytest.approx(est.lower_bound_, abs=1e-10)


def test_bound_is_below_the_exact_log_evidence_with_three_states():
    X = np.array([0, 1, 2, 2, 0, 1]).reshape(-1, 1)
    U = np.array([0.5, -1.0, 1.2, 0.1, -0.7, 2.0])
    est = VBHiddenMarkov(3, n_symbols=3, transition_inputs="continuous", random_state=0,
                         n_init=2).fit(X, lengths=[6], U=U)
    prior = est.transmat_prior_
    exact, finer = (exact_logistic_log_evidence(
        X, [6], _design(U), 3, 3, est.startprob_prior_, est.emissionprob_prior_,
        prior.mean, np.linalg.inv(prior.precision), n_nodes=n) for n in (100, 140))
    assert finer == pytest.approx(exact, abs=1e-5)
    assert est.lower_bound_ <= exact + 1e-9
    # six frames barely move q(W) off its broad prior, where the logistic bound is
    # loosest; the gap includes ln 3! of the state namings
    assert est.lower_bound_ > exact - 6.0


# ---------------------------------------------------------------------------
# the bound never decreases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("acceleration", ["squarem", None])
def test_bound_never_decreases_after_any_step(acceleration):
    rng = np.random.default_rng(3)
    coef = rng.normal(scale=1.5, size=(3, 2, 3))
    B = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]])
    X, _, U, lengths = make_input_driven_hmm_sequences(
        None, B, [80] * 8, transition_coef=coef, random_state=3)
    # bound_check="steps" raises if any step (VBM, VBE) lowers the bound
    est = VBHiddenMarkov(3, transition_inputs="continuous", random_state=0,
                         acceleration=acceleration, bound_check="steps",
                         init_params="random_params", tol=1e-7).fit(X, lengths=lengths, U=U)
    b = np.asarray(est.lower_bounds_)
    assert np.all(np.diff(b) >= -1e-9 * np.abs(b[1:]))
    assert b[-1] - b[0] > 1.0


def test_gaussian_emissions_and_default_starts():
    X, U, lengths = simulate(COEF_TRUE, 10, 60, seed=5)
    Xg = X.astype(float) + 0.3 * np.random.default_rng(5).standard_normal(X.shape)
    est = VBHiddenMarkov(2, emission="gaussian", transition_inputs="continuous",
                         random_state=0, bound_check="steps").fit(Xg, lengths=lengths, U=U)
    assert np.all(np.diff(est.lower_bounds_) >= -1e-9 * np.abs(est.lower_bounds_[1:]))
    assert est.transition_coef_.shape == (2, 1, 2)
    for init in ("random", "context", "random_marginals"):
        VBHiddenMarkov(2, transition_inputs="continuous", init_params=init, random_state=0,
                       bound_check="steps", max_iter=30).fit(X, lengths=lengths, U=U)


# ---------------------------------------------------------------------------
# recovery and model choice on simulated data
# ---------------------------------------------------------------------------


def test_recovers_an_input_effect_and_the_evidence_prefers_it():
    X, U, lengths = simulate(COEF_TRUE, 20, 100, seed=0)
    Xt, Ut, lt = simulate(COEF_TRUE, 10, 100, seed=1)
    io = VBHiddenMarkov(2, transition_inputs="continuous", random_state=0).fit(
        X, lengths=lengths, U=U)
    plain = VBHiddenMarkov(2, random_state=0).fit(X, lengths=lengths)
    # the coefficients, up to the names of the states: with the states ordered as the
    # truth's, row k's stick is "go to state 0"
    if io.emissionprob_[0, 0] < io.emissionprob_[1, 0]:
        coef = -io.transition_coef_[::-1]  # renamed states: the stick's complement
    else:
        coef = io.transition_coef_
    np.testing.assert_allclose(coef, COEF_TRUE, atol=0.8)
    gain = io.score(Xt, lengths=lt, U=Ut) - plain.score(Xt, lengths=lt)
    assert gain > 0.05
    assert io.lower_bound_ - plain.lower_bound_ > 50.0


def test_the_evidence_does_not_prefer_inputs_that_do_not_matter():
    X, U, lengths = simulate(COEF_NULL, 20, 100, seed=2)
    io = VBHiddenMarkov(2, transition_inputs="continuous", random_state=0).fit(
        X, lengths=lengths, U=U)
    plain = VBHiddenMarkov(2, random_state=0).fit(X, lengths=lengths)
    # the input coefficients cost their KL and explain nothing
    assert io.lower_bound_ - plain.lower_bound_ < 1.0
    assert np.all(np.abs(io.transition_coef_[:, :, 0]) < 0.5)


# ---------------------------------------------------------------------------
# methods, scores and errors
# ---------------------------------------------------------------------------


def test_every_sequence_method_takes_U():
    X, U, lengths = simulate(COEF_TRUE, 6, 50, seed=4)
    est = VBHiddenMarkov(2, transition_inputs="continuous", random_state=0).fit(
        X, lengths=lengths, U=U)
    assert est.n_input_features_ == 1 and not hasattr(est, "transmat_")
    assert est.predict(X, lengths=lengths, U=U).shape == (len(X),)
    proba = est.predict_proba(X, lengths=lengths, U=U)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    frame = est.score_samples(X, lengths=lengths, U=U)
    assert est.score(X, lengths=lengths, U=U) == pytest.approx(frame.mean())
    assert est.decode(X, lengths=lengths, U=U, parameters="expected_log")[1].shape == \
        (len(X),)
    assert np.isfinite(est.score_bound(X, lengths=lengths, U=U))
    assert np.isfinite(est.bic(X, lengths=lengths, U=U))
    # the inputs drive the sample: a large input sends state 0 to state 1
    u = np.tile([[-3.0], [3.0]], (1000, 1))
    _, s = est.sample(2000, random_state=0, U=u)
    assert s.shape == (2000,)
    vb = score(est, X, "vb", lengths=lengths, U=U)
    assert vb.log_evidence == est.lower_bound_
    with pytest.raises(NotImplementedError, match="transition inputs"):
        score(est, X, "bic", lengths=lengths, U=U)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X, lengths=lengths, U=U),
                                  est.predict(X, lengths=lengths, U=U))


def test_errors_name_the_argument():
    X, lengths = X_TINY, LENGTHS_TINY
    io = VBHiddenMarkov(2, transition_inputs="continuous")
    with pytest.raises(ValueError, match="U is required"):
        io.fit(X, lengths=lengths)
    with pytest.raises(ValueError, match="U must hold one row of inputs per row of X"):
        io.fit(X, lengths=lengths, U=U_TINY[:5])
    with pytest.raises(ValueError, match="U must be finite"):
        io.fit(X, lengths=lengths, U=np.where(np.arange(7) == 2, np.nan, U_TINY))
    with pytest.raises(ValueError, match="U must be finite"):
        io.fit(X, lengths=lengths, U=np.full(7, np.inf))
    with pytest.raises(ValueError, match="U must hold real numbers"):
        io.fit(X, lengths=lengths, U=np.array(list("abcdefg")))
    with pytest.raises(ValueError, match="transition_coef_prior"):
        VBHiddenMarkov(2, transition_inputs="continuous",
                       transition_coef_prior=[1.0, 2.0]).fit(X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="n_input_levels"):
        VBHiddenMarkov(2, transition_inputs="continuous", n_input_levels=2).fit(
            X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="optimize_prior_strengths"):
        VBHiddenMarkov(2, transition_inputs="continuous", optimize_prior_strengths=True).fit(
            X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="method='vb'"):
        VBHiddenMarkov(2, transition_inputs="continuous", method="map").fit(
            X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="init_posterior"):
        VBHiddenMarkov(2, transition_inputs="continuous", init_params="posterior",
                       init_posterior=dict(startprob=np.ones(2), transmat=np.ones((2, 2)),
                                           emissionprob=np.ones((2, 3)))).fit(
            X, lengths=lengths, U=U_TINY)
    fitted = _tiny()
    with pytest.raises(ValueError, match="U is required"):
        fitted.predict(X, lengths=lengths)
    with pytest.raises(ValueError, match="U is required"):
        fitted.sample(5)
    with pytest.raises(ValueError, match=r"U has 2 input columns.*fitted with 1"):
        fitted.score(X, lengths=lengths, U=np.zeros((7, 2)))
    with pytest.raises(ValueError, match="U must be finite"):
        fitted.predict_proba(X, lengths=lengths, U=np.full(7, np.nan))
    with pytest.raises(ValueError, match="one row of inputs per row of X"):
        fitted.sample(5, U=np.zeros((4, 1)))
    plain = VBHiddenMarkov(2, random_state=0).fit(X, lengths=lengths)
    with pytest.raises(ValueError, match="transition_inputs=None"):
        plain.predict(X, lengths=lengths, U=U_TINY)
    # a model refitted without inputs forgets them, and the other way round
    fitted.set_params(transition_inputs=None).fit(X, lengths=lengths)
    assert not hasattr(fitted, "n_input_features_") and not hasattr(fitted,
                                                                   "transition_coef_")
    U_copy = U_TINY.copy()
    _tiny()
    np.testing.assert_array_equal(U_TINY, U_copy)  # inputs never modified


def test_init_posterior_gives_the_coefficient_means():
    coef = np.array([[[0.0, 2.0]], [[0.0, -2.0]]])
    est = VBHiddenMarkov(2, n_symbols=3, transition_inputs="continuous",
                         init_params="posterior", max_iter=1,
                         init_posterior=dict(startprob=np.ones(2),
                                             emissionprob=np.ones((2, 3)) + np.eye(2, 3),
                                             transition_coef=coef))
    with pytest.warns(Warning):  # one iteration: not converged
        est.fit(X_TINY, lengths=LENGTHS_TINY, U=U_TINY)
    # the first iteration evaluates the initial q(theta) without a VBM step
    np.testing.assert_allclose(est.transition_coef_, coef)
