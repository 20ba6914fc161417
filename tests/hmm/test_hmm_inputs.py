"""Input-driven transitions with categorical inputs (``transition_inputs="categorical"``,
``U=``): the transition into frame t uses the Dirichlet matrix of its input level.

Oracles: with one level the model is the plain HMM (same numbers); on tiny problems the
VBE log normaliser and its transition statistics by enumerating the state paths, and
ln p(X | U) by enumerating paths and integrating the Dirichlets in closed form (the
bound must lie below it); on simulated data, the held-out likelihood and the evidence
of the input-driven model against the plain one.
"""

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.hmm._vbem import expected_log_params, vbe
from sklearn_vb.scoring import score
from tests.oracles.hmm_paths import exact_categorical_log_evidence, path_sums

X_TINY = np.array([0, 2, 2, 1, 0]).reshape(-1, 1)
U_TINY = np.array([1, 0, 1, 1, 0])
LENGTHS_TINY = [3, 2]


def _tiny(**kw):
    params = dict(n_components=2, n_symbols=3, transition_inputs="categorical",
                  random_state=0, n_init=2)
    params.update(kw)
    return VBHiddenMarkov(**params).fit(X_TINY, lengths=LENGTHS_TINY, U=U_TINY)


def simulate(A, B, pi, n_seq, length, rng, p_level=None):
    """Sequences of an input-driven HMM with transition matrices ``A`` (L, K, K); the
    levels are drawn i.i.d. with probabilities ``p_level``."""
    L, K, _ = A.shape
    p_level = np.full(L, 1.0 / L) if p_level is None else p_level
    X, U, S = [], [], []
    for _ in range(n_seq):
        u = rng.choice(L, size=length, p=p_level)
        s = np.empty(length, dtype=int)
        s[0] = rng.choice(K, p=pi)
        for t in range(1, length):
            s[t] = rng.choice(K, p=A[u[t], s[t - 1]])
        X.append([rng.choice(B.shape[1], p=B[k]) for k in s])
        U.append(u)
        S.append(s)
    return (np.concatenate(X).reshape(-1, 1), np.concatenate(U), np.concatenate(S),
            [length] * n_seq)


A_TRUE = np.array([[[0.95, 0.05], [0.05, 0.95]],   # level 0: stay
                   [[0.1, 0.9], [0.9, 0.1]]])      # level 1: switch
B_TRUE = np.array([[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]])
PI_TRUE = np.array([0.5, 0.5])


# ---------------------------------------------------------------------------
# one level is the plain HMM
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("emission", ["categorical", "gaussian"])
def test_one_level_is_the_plain_hmm(emission):
    rng = np.random.default_rng(0)
    X, _, _, lengths = simulate(A_TRUE[:1], B_TRUE, PI_TRUE, 6, 60, rng)
    if emission == "gaussian":
        X = X + 0.3 * rng.standard_normal(X.shape)
    kw = dict(n_components=2, emission=emission, random_state=1, n_init=2)
    plain = VBHiddenMarkov(**kw).fit(X, lengths=lengths)
    U = np.zeros(len(X), dtype=int)
    io = VBHiddenMarkov(transition_inputs="categorical", **kw).fit(X, lengths=lengths, U=U)
    assert io.transmat_posterior_.shape == (1, 2, 2)
    assert io.lower_bound_ == pytest.approx(plain.lower_bound_, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(io.lower_bounds_, plain.lower_bounds_, rtol=1e-12)
    np.testing.assert_allclose(io.transmat_posterior_[0], plain.transmat_posterior_,
                               rtol=1e-12)
    np.testing.assert_allclose(io.startprob_posterior_, plain.startprob_posterior_,
                               rtol=1e-12)
    np.testing.assert_allclose(io.transmat_[0], plain.transmat_, rtol=1e-12)
    assert io.score(X, lengths=lengths, U=U) == pytest.approx(
        plain.score(X, lengths=lengths), rel=1e-12)
    np.testing.assert_allclose(io.predict_proba(X, lengths=lengths, U=U),
                               plain.predict_proba(X, lengths=lengths), atol=1e-12)
    np.testing.assert_array_equal(io.predict(X, lengths=lengths, U=U),
                                  plain.predict(X, lengths=lengths))


# ---------------------------------------------------------------------------
# tiny problems against enumeration
# ---------------------------------------------------------------------------


def test_vbe_normaliser_and_transition_counts_equal_path_enumeration():
    est = _tiny(max_iter=4)
    posterior = est._hyper("posterior")
    data = est.check_data(X_TINY, lengths=LENGTHS_TINY, U=U_TINY)
    out = vbe(est._family, posterior, data)[0]
    Lpi, LA, LE = expected_log_params(est._family, posterior)
    assert LA.shape == (2, 2, 2)
    log_z, trans = path_sums(X_TINY, LENGTHS_TINY, Lpi, LA, LE, levels=U_TINY)
    assert float(out[0].sum()) == pytest.approx(log_z, abs=1e-10)
    np.testing.assert_allclose(out[3], trans, atol=1e-10)
    assert est.score_bound(X_TINY, lengths=LENGTHS_TINY, U=U_TINY) == pytest.approx(
        log_z, abs=1e-10)
    # the levels matter: the same weights without them give another normaliser
    plain_z = path_sums(X_TINY, LENGTHS_TINY, Lpi, LA[0], LE)[0]
    assert abs(plain_z - log_z) > 1e-3


@pytest.mark.parametrize("priors", ["default", "strong"])
def test_bound_is_below_the_exact_log_evidence_given_the_inputs(priors):
    kw = {} if priors == "default" else dict(
        startprob_prior=5.0, transmat_prior=np.array([[[8.0, 2.0], [2.0, 8.0]],
                                                      [[2.0, 8.0], [8.0, 2.0]]]),
        emissionprob_prior=np.array([[12.0, 4.0, 4.0], [4.0, 4.0, 12.0]]))
    est = _tiny(**kw)
    exact = exact_categorical_log_evidence(
        X_TINY.ravel(), LENGTHS_TINY, 2, 3, est.startprob_prior_, est.transmat_prior_,
        est.emissionprob_prior_, levels=U_TINY)
    assert est.lower_bound_ <= exact + 1e-10
    # a bound, not an unrelated number (the gap includes ln 2 of the two state namings)
    assert est.lower_bound_ > exact - 4.0
    # the terms add up to the bound
    t = est.lower_bound_terms_
    assert t["log_normaliser"] - t["kl_startprob"] - t["kl_transmat"] - t["kl_emission"] == \
        pytest.approx(est.lower_bound_, abs=1e-10)


def test_bound_is_the_evidence_when_every_state_is_known():
    """With every state known, q(s) is a point mass and q(theta) the exact posterior:
    the bound is ln p(X, s | U), which enumeration gives with the path fixed."""
    states = np.array([0, 1, 1, 0, 0])
    est = VBHiddenMarkov(2, n_symbols=3, transition_inputs="categorical", random_state=0,
                         transmat_prior=0.7).fit(X_TINY, lengths=LENGTHS_TINY, U=U_TINY,
                                                 states=states)
    exact = exact_categorical_log_evidence(
        X_TINY.ravel(), LENGTHS_TINY, 2, 3, est.startprob_prior_, est.transmat_prior_,
        est.emissionprob_prior_, known=states, levels=U_TINY)
    assert est.lower_bound_ == pytest.approx(exact, abs=1e-9)


def test_bound_never_decreases():
    rng = np.random.default_rng(3)
    A = np.array([[[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]],
                  [[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]],
                  [[1 / 3] * 3] * 3])
    B = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]])
    X, U, _, lengths = simulate(A, B, np.ones(3) / 3, 8, 80, rng)
    for acceleration in ("squarem", None):
        est = VBHiddenMarkov(3, transition_inputs="categorical", random_state=0,
                             acceleration=acceleration, bound_check="off",
                             init_params="random_params", tol=1e-8).fit(X, lengths=lengths, U=U)
        b = est.lower_bounds_
        assert np.all(np.diff(b) >= -1e-9 * np.abs(b[1:]))
        assert b[-1] - b[0] > 1.0  # it did climb


# ---------------------------------------------------------------------------
# recovery and model choice on simulated data
# ---------------------------------------------------------------------------


def test_recovers_an_input_effect_and_the_evidence_prefers_it():
    rng = np.random.default_rng(0)
    X, U, _, lengths = simulate(A_TRUE, B_TRUE, PI_TRUE, 20, 100, rng)
    Xt, Ut, _, lt = simulate(A_TRUE, B_TRUE, PI_TRUE, 10, 100, rng)
    kw = dict(n_components=2, random_state=0)
    io = VBHiddenMarkov(transition_inputs="categorical", **kw).fit(X, lengths=lengths, U=U)
    plain = VBHiddenMarkov(**kw).fit(X, lengths=lengths)
    # the transition matrices of both levels, up to the names of the states
    order = np.argsort(io.emissionprob_[:, 0])[::-1]
    A_hat = io.transmat_[:, order][:, :, order]
    np.testing.assert_allclose(A_hat, A_TRUE, atol=0.08)
    # held-out: the inputs predict the switches (per frame, nats)
    gain = io.score(Xt, lengths=lt, U=Ut) - plain.score(Xt, lengths=lt)
    assert gain > 0.1
    # the evidence prefers the input-driven model by far
    assert io.lower_bound_ - plain.lower_bound_ > 50.0


def test_the_evidence_does_not_prefer_inputs_that_do_not_matter():
    rng = np.random.default_rng(1)
    A_same = np.stack([A_TRUE[0], A_TRUE[0]])
    X, U, _, lengths = simulate(A_same, B_TRUE, PI_TRUE, 20, 100, rng)
    kw = dict(n_components=2, random_state=0)
    io = VBHiddenMarkov(transition_inputs="categorical", **kw).fit(X, lengths=lengths, U=U)
    plain = VBHiddenMarkov(**kw).fit(X, lengths=lengths)
    # the extra level costs its Dirichlet KL: the plain model wins by a margin
    assert plain.lower_bound_ - io.lower_bound_ > 1.0
    # and its two levels' matrices agree
    np.testing.assert_allclose(io.transmat_[0], io.transmat_[1], atol=0.06)


def test_a_level_absent_from_the_training_data_keeps_its_prior():
    rng = np.random.default_rng(2)
    X, U, _, lengths = simulate(A_TRUE, B_TRUE, PI_TRUE, 4, 50, rng)
    est = VBHiddenMarkov(2, transition_inputs="categorical", n_input_levels=3,
                         random_state=0).fit(X, lengths=lengths, U=U)
    assert est.n_input_levels_ == 3
    np.testing.assert_allclose(est.transmat_posterior_[2], est.transmat_prior_[2])
    U2 = U.copy()
    U2[1::2] = 2
    assert np.isfinite(est.score(X, lengths=lengths, U=U2))


def test_sample_follows_the_inputs():
    rng = np.random.default_rng(4)
    X, U, _, lengths = simulate(A_TRUE, B_TRUE, PI_TRUE, 20, 100, rng)
    est = VBHiddenMarkov(2, transition_inputs="categorical", random_state=0).fit(
        X, lengths=lengths, U=U)
    u = np.tile([0, 1], 1000)
    _, s = est.sample(2000, random_state=0, U=u)
    switched = s[1:] != s[:-1]
    assert switched[u[1:] == 1].mean() > 0.8 and switched[u[1:] == 0].mean() < 0.2


# ---------------------------------------------------------------------------
# scores and errors
# ---------------------------------------------------------------------------


def test_vb_score_conditions_on_the_inputs_and_other_scores_refuse():
    est = _tiny()
    vb = score(est, X_TINY, "vb", lengths=LENGTHS_TINY, U=U_TINY)
    assert vb.log_evidence == est.lower_bound_
    with pytest.raises(ValueError, match="U is not the U"):
        score(est, X_TINY, "vb", lengths=LENGTHS_TINY, U=1 - U_TINY)
    with pytest.raises(ValueError, match="U is required"):
        score(est, X_TINY, "vb", lengths=LENGTHS_TINY)
    for method in ("cs", "bic", "bic_map", "is", "laplace"):
        with pytest.raises(NotImplementedError, match="transition inputs"):
            score(est, X_TINY, method, lengths=LENGTHS_TINY, U=U_TINY)


def test_errors_name_the_argument():
    X, lengths = X_TINY, LENGTHS_TINY
    io = VBHiddenMarkov(2, transition_inputs="categorical")
    with pytest.raises(ValueError, match="U is required"):
        io.fit(X, lengths=lengths)
    with pytest.raises(ValueError, match="one input level per row"):
        io.fit(X, lengths=lengths, U=U_TINY[:4])
    with pytest.raises(ValueError, match="U must hold input levels >= 0"):
        io.fit(X, lengths=lengths, U=U_TINY - 1)
    with pytest.raises(ValueError, match="U must hold integer"):
        io.fit(X, lengths=lengths, U=U_TINY + 0.5)
    with pytest.raises(ValueError, match=r"outside the model's levels \[0, 1\)"):
        VBHiddenMarkov(2, transition_inputs="categorical", n_input_levels=1).fit(
            X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="transmat_prior has shape"):
        VBHiddenMarkov(2, transition_inputs="categorical",
                       transmat_prior=np.ones((3, 2, 2))).fit(X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="method='vb'"):
        VBHiddenMarkov(2, transition_inputs="categorical", method="ml").fit(
            X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="partial_fit"):
        io.partial_fit(X, lengths=lengths)
    with pytest.raises(ValueError, match="transition_inputs"):
        VBHiddenMarkov(2, transition_inputs="ordinal").fit(X, lengths=lengths, U=U_TINY)
    plain = VBHiddenMarkov(2, random_state=0).fit(X, lengths=lengths)
    with pytest.raises(ValueError, match="transition_inputs=None"):
        plain.predict(X, lengths=lengths, U=U_TINY)
    with pytest.raises(ValueError, match="transition_inputs=None"):
        VBHiddenMarkov(2).fit(X, lengths=lengths, U=U_TINY)
    fitted = _tiny()
    with pytest.raises(ValueError, match="U is required"):
        fitted.predict(X, lengths=lengths)
    with pytest.raises(ValueError, match=r"outside the model's levels \[0, 2\)"):
        fitted.score(X, lengths=lengths, U=U_TINY + 1)
    with pytest.raises(ValueError, match="U is required"):
        fitted.sample(5)
    # a model refitted without inputs forgets its levels
    fitted.set_params(transition_inputs=None).fit(X, lengths=lengths)
    assert not hasattr(fitted, "n_input_levels_")
    U_copy = U_TINY.copy()
    _tiny()
    np.testing.assert_array_equal(U_TINY, U_copy)  # inputs never modified
