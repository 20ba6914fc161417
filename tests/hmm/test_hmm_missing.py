"""Missing values (NaN) in the X of VBHiddenMarkov, marginalised under the model.

Every claim is checked against an independent computation: the exact log evidence of
tiny categorical HMMs by enumerating the state paths and integrating the Dirichlet
parameters, the forward likelihood at the posterior-mean parameters by enumerating the
paths, and, with one state (no hidden path), the exact conjugate evidence of the
observed entries of every dimension, which VB reaches exactly.
"""

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import digamma, gammaln, logsumexp
from scipy.stats import norm

from sklearn_vb import VBHiddenMarkov
from sklearn_vb._core.base import BoundDecreaseWarning
from sklearn_vb.scoring import score
from sklearn_vb.scoring import scoring_model_for
from tests.oracles.hmm_paths import dirichlet_evidence as _dirichlet_evidence
from tests.oracles.hmm_paths import exact_categorical_log_evidence

# ---------------------------------------------------------------------------
# independent oracles
# ---------------------------------------------------------------------------


def enumerated_log_likelihood(log_emission, startprob, transmat):
    """ln sum over state paths of pi A ... prod_t p(x_t | s_t), one sequence;
    ``log_emission`` (T, K) with 0 where a frame's emission is marginalised out."""
    T, K = log_emission.shape
    terms = []
    for path in itertools.product(range(K), repeat=T):
        v = np.log(startprob[path[0]]) + log_emission[0, path[0]]
        for t in range(1, T):
            v += np.log(transmat[path[t - 1], path[t]]) + log_emission[t, path[t]]
        terms.append(v)
    return float(logsumexp(terms))


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------

X_CAT = np.array([0, np.nan, 2, 2, np.nan, 1, 0, np.nan]).reshape(-1, 1)
LENGTHS_CAT = [5, 3]


def _categorical_fit(X=X_CAT, lengths=LENGTHS_CAT, **kw):
    params = dict(n_components=2, n_symbols=3, random_state=0, n_init=2)
    params.update(kw)
    return VBHiddenMarkov(**params).fit(X, lengths=lengths)


def _gaussian_data(seed=0, T=60, D=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, D))
    X[T // 2:] += 4.0
    X[[2, 5, T - 5], [0, 1, 2]] = np.nan
    X[7] = np.nan
    return X


def _poisson_data(seed=0, T=60, D=2):
    rng = np.random.default_rng(seed)
    X = rng.poisson(np.where(np.arange(T)[:, None] < T // 2, 1.0, 6.0), size=(T, D))
    X = X.astype(float)
    X[[1, 9, T - 2], [0, 1, 0]] = np.nan
    X[T - 6] = np.nan
    return X


# ---------------------------------------------------------------------------
# categorical emissions
# ---------------------------------------------------------------------------


#: strong asymmetric priors: q(theta) stays near the prior, so VB's gap is small and a
#: missing symbol handled as an observed one (about ln 3 nats each) would show
STRONG = dict(startprob_prior=20.0, transmat_prior=20.0,
              emissionprob_prior=np.array([[60.0, 20.0, 20.0], [20.0, 20.0, 60.0]]))


@pytest.mark.parametrize("priors", ["default", "strong"])
def test_categorical_bound_is_below_the_exact_evidence_with_missing_symbols(priors):
    model = _categorical_fit(**(STRONG if priors == "strong" else {}))
    exact = exact_categorical_log_evidence(
        X_CAT.ravel(), np.array(LENGTHS_CAT), 2, 3, model.startprob_prior_,
        model.transmat_prior_, model.emissionprob_prior_)
    assert model.lower_bound_ <= exact + 1e-9
    if priors == "strong":
        assert exact - model.lower_bound_ < 0.2
    # the scoring layer's enumeration (used by the scorers) gives the same exact value
    sm = scoring_model_for(model)
    data = sm.prepare_data(X_CAT, lengths=LENGTHS_CAT)
    assert sm.log_evidence(data) == pytest.approx(exact, abs=1e-9)
    vb = score(model, X_CAT, "vb", lengths=LENGTHS_CAT).log_evidence
    assert vb <= exact + 1e-9


def test_categorical_one_state_bound_is_the_exact_evidence_of_the_observed_symbols():
    # with one state there is no hidden path, VB is exact: the Dirichlet-multinomial
    # evidence of the observed symbols alone
    X = np.array([0, 1, np.nan, 1, 2, np.nan, np.nan, 1]).reshape(-1, 1)
    model = VBHiddenMarkov(n_components=1, n_symbols=3, random_state=0).fit(X)
    counts = np.bincount(X[~np.isnan(X)].astype(int), minlength=3)
    alpha = model.emissionprob_prior_[0]
    expected = _dirichlet_evidence(alpha, counts)
    assert model.lower_bound_ == pytest.approx(expected, abs=1e-9)


def test_categorical_predictive_likelihood_is_the_forward_likelihood_with_missing_marginalised():
    model = _categorical_fit()
    per_sequence = model.score_samples(X_CAT, lengths=LENGTHS_CAT, per="sequence")
    log_B = np.log(model.emissionprob_)
    start = 0
    for i, T in enumerate(LENGTHS_CAT):
        x = X_CAT.ravel()[start:start + T]
        table = np.array([np.zeros(2) if np.isnan(v) else log_B[:, int(v)] for v in x])
        expected = enumerated_log_likelihood(table, model.startprob_, model.transmat_)
        assert per_sequence[i] == pytest.approx(expected, abs=1e-10)
        start += T
    assert model.score(X_CAT, lengths=LENGTHS_CAT) == pytest.approx(
        per_sequence.sum() / X_CAT.shape[0], abs=1e-12)


def test_a_fully_missing_tail_only_multiplies_by_one():
    model = _categorical_fit()
    x = np.array([0, 2, 2, 1, 0, 0]).reshape(-1, 1).astype(float)
    tail = np.vstack([x, [[np.nan]] * 3])
    frame = model.score_samples(tail)
    # p(x_t missing | past) = 1 at the posterior-mean parameters
    np.testing.assert_allclose(frame[-3:], 0.0, atol=1e-12)
    assert model.score_samples(tail, per="sequence")[0] == pytest.approx(
        model.score_samples(x, per="sequence")[0], abs=1e-10)


def test_predict_proba_at_a_missing_last_frame_is_the_transition_propagated_posterior():
    # q(s_T) of a last frame with no observation is q(s_{T-1}) propagated by the row-
    # normalised exp E[ln A] (the frame adds a transition and an emission factor 1)
    model = _categorical_fit()
    x = np.array([0, 2, 2, 1, np.nan, 0, np.nan]).reshape(-1, 1)
    proba = model.predict_proba(x)
    A = np.exp(digamma(model.transmat_posterior_)
               - digamma(model.transmat_posterior_.sum(axis=1, keepdims=True)))
    A /= A.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba[-1], proba[-2] @ A, rtol=1e-10)
    # a fully missing frame is not a deleted frame: the chain still takes a step
    assert model.predict(x).shape == (7,)


# ---------------------------------------------------------------------------
# Gaussian (diagonal) and Poisson emissions
# ---------------------------------------------------------------------------


def test_gaussian_diag_score_samples_is_the_marginal_of_the_observed_dimensions():
    X = _gaussian_data()
    model = VBHiddenMarkov(n_components=2, emission="gaussian", covariance_type="diag",
                           random_state=0).fit(X)
    x = np.array([[0.3, np.nan, -0.2], [np.nan, np.nan, np.nan], [4.1, 3.5, np.nan],
                  [3.8, np.nan, 4.4], [0.1, 0.2, 0.3]])
    sd = np.sqrt(model.covars_)
    table = np.zeros((5, 2))
    for t in range(5):
        for k in range(2):
            obs = ~np.isnan(x[t])
            table[t, k] = norm.logpdf(x[t, obs], model.means_[k, obs], sd[k, obs]).sum()
    expected = enumerated_log_likelihood(table, model.startprob_, model.transmat_)
    assert model.score_samples(x, per="sequence")[0] == pytest.approx(expected, abs=1e-10)


def test_gaussian_diag_one_state_bound_is_the_exact_evidence_per_dimension():
    # one state: VB is exact, and each dimension's Normal-Gamma sees only its observed
    # entries (its own count), so ln p(X) is a sum of per-dimension conjugate evidences
    X = _gaussian_data(seed=3, T=25)
    model = VBHiddenMarkov(n_components=1, emission="gaussian", covariance_type="diag",
                           random_state=0).fit(X)
    m0, b0 = model.means_prior_, model.beta_prior_
    a0, r0 = 0.5 * model.dof_prior_, 0.5 * model.scale_prior_
    expected = 0.0
    for d in range(X.shape[1]):
        x = X[~np.isnan(X[:, d]), d]
        n = x.size
        bn = b0 + n
        mn = (b0 * m0[d] + x.sum()) / bn
        an = a0 + 0.5 * n
        rn = r0[d] + 0.5 * (np.sum((x - x.mean()) ** 2)
                            + b0 * n * (x.mean() - m0[d]) ** 2 / bn)
        expected += (gammaln(an) - gammaln(a0) + a0 * np.log(r0[d]) - an * np.log(rn)
                     + 0.5 * np.log(b0 / bn) - 0.5 * n * np.log(2 * np.pi))
        assert model.means_posterior_[0, d] == pytest.approx(mn, rel=1e-10)
    assert model.lower_bound_ == pytest.approx(expected, abs=1e-8)
    # the per-dimension counts are carried by the posterior
    np.testing.assert_allclose(model.beta_posterior_[0],
                               b0 + (~np.isnan(X)).sum(axis=0), rtol=1e-12)


def test_poisson_one_state_bound_is_the_exact_evidence_per_dimension():
    X = _poisson_data(seed=2, T=25)
    model = VBHiddenMarkov(n_components=1, emission="poisson", random_state=0).fit(X)
    a0, b0 = model.rate_shape_prior_[0], model.rate_rate_prior_[0]
    expected = 0.0
    for d in range(X.shape[1]):
        x = X[~np.isnan(X[:, d]), d]
        a, b = a0[d] + x.sum(), b0[d] + x.size
        expected += (a0[d] * np.log(b0[d]) - gammaln(a0[d]) + gammaln(a) - a * np.log(b)
                     - np.sum(gammaln(x + 1)))
    assert model.lower_bound_ == pytest.approx(expected, abs=1e-8)


def test_poisson_score_samples_is_the_marginal_of_the_observed_counts():
    X = _poisson_data()
    model = VBHiddenMarkov(n_components=2, emission="poisson", random_state=0).fit(X)
    x = np.array([[1, np.nan], [np.nan, np.nan], [7, 5], [np.nan, 6]])
    table = np.zeros((4, 2))
    for t in range(4):
        obs = ~np.isnan(x[t])
        lam = model.rates_[:, obs]
        table[t] = np.sum(x[t, obs] * np.log(lam) - lam - gammaln(x[t, obs] + 1), axis=1)
    expected = enumerated_log_likelihood(table, model.startprob_, model.transmat_)
    assert model.score_samples(x, per="sequence")[0] == pytest.approx(expected, abs=1e-10)


# ---------------------------------------------------------------------------
# the whole API with NaN rows
# ---------------------------------------------------------------------------

CASES = {
    "categorical": (dict(n_symbols=3), lambda: np.tile(X_CAT, (6, 1))),
    "diag": (dict(emission="gaussian", covariance_type="diag"), _gaussian_data),
    "full": (dict(emission="gaussian", covariance_type="full"), _gaussian_data),
    "poisson": (dict(emission="poisson"), _poisson_data),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_method_accepts_missing_values_and_leaves_x_unchanged(case):
    params, make = CASES[case]
    X = make()
    X_copy = X.copy()
    model = VBHiddenMarkov(n_components=2, random_state=0, **params).fit(X)
    assert np.isfinite(model.lower_bound_)
    assert np.all(np.diff(model.lower_bounds_) >= -1e-8)
    assert np.isfinite(model.score(X))
    assert np.all(np.isfinite(model.score_samples(X)))
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.predict(X).shape == (X.shape[0],)
    log_weight, states = model.decode(X, parameters="expected_log")
    assert np.isfinite(log_weight) and states.shape == (X.shape[0],)
    assert np.isfinite(model.score_bound(X))
    for method in ("ml", "map"):
        # the MAP objective of full covariances does not match its M step for D > 1
        # (its softmax-basis term), so its trace may dip slightly: warn, not raise
        check = "warn" if (case, method) == ("full", "map") else "raise"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BoundDecreaseWarning)
            point = VBHiddenMarkov(n_components=2, random_state=0, method=method,
                                   bound_check=check, **params).fit(X)
        assert np.isfinite(point.score(X))
    online = VBHiddenMarkov(n_components=2, random_state=0, batch_size=1, total_samples=2,
                            **params)
    online.partial_fit(X[: len(X) // 2])
    online.partial_fit(X[len(X) // 2:])
    assert np.isfinite(online.score(X))
    np.testing.assert_array_equal(X, X_copy)


def test_online_steps_mix_complete_and_incomplete_chunks_for_diagonal_gaussians():
    # a chunk without missing entries gives one count per state, one with them a count
    # per state and dimension; the natural-gradient step combines the two
    X = _gaussian_data()
    complete = np.nan_to_num(X[:20], nan=0.5)
    model = VBHiddenMarkov(n_components=2, emission="gaussian", covariance_type="diag",
                           random_state=0, total_samples=3)
    model.partial_fit(complete)
    assert model.beta_posterior_.shape == (2,)
    model.partial_fit(X[20:])
    assert model.beta_posterior_.shape == (2, 3)
    assert np.isfinite(model.score(X))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("method", ["vb", "bic", "bic_map", "bicp", "cs", "cs_dagger",
                                    "laplace", "map", "is", "ais", "smc"])
def test_evidence_scores_accept_missing_values(case, method):
    params, make = CASES[case]
    X = make()[:24]
    model = VBHiddenMarkov(n_components=2, random_state=0, **params).fit(X)
    options = {"ais": dict(n_temperatures=30, n_chains=4), "is": dict(n_samples=200)}
    result = score(model, X, method, random_state=0, **options.get(method, {}))
    assert np.isfinite(result.log_evidence)


@pytest.mark.parametrize("method", ["cs", "ais"])
def test_categorical_evidence_scores_with_missing_values_near_the_exact_evidence(method):
    model = _categorical_fit()
    exact = exact_categorical_log_evidence(
        X_CAT.ravel(), np.array(LENGTHS_CAT), 2, 3, model.startprob_prior_,
        model.transmat_prior_, model.emissionprob_prior_)
    options = {"ais": dict(n_temperatures=200, n_chains=8)}.get(method, {})
    value = score(model, X_CAT, method, lengths=LENGTHS_CAT, random_state=0,
                  **options).log_evidence
    if method == "cs":  # a lower bound
        assert value <= exact + 1e-9
    else:
        assert abs(value - exact) < 1.0


# ---------------------------------------------------------------------------
# what is still refused
# ---------------------------------------------------------------------------


def test_infinity_is_still_refused_next_to_missing_values():
    # the NaN comes first: it is accepted, and the error is about the infinity
    X = _gaussian_data()
    X[8, 1] = np.inf
    with pytest.raises(ValueError, match="contains infinity"):
        VBHiddenMarkov(emission="gaussian", covariance_type="diag").fit(X)
    Xc = X_CAT.copy()
    Xc[3, 0] = np.inf
    with pytest.raises(ValueError, match="contains infinity"):
        VBHiddenMarkov(n_symbols=3).fit(Xc)


def test_a_feature_never_observed_is_refused():
    X = _gaussian_data()
    X[:, 1] = np.nan
    with pytest.raises(ValueError, match="feature 1"):
        VBHiddenMarkov(emission="gaussian", covariance_type="diag").fit(X)


def test_the_allow_nan_tag_follows_the_family():
    assert VBHiddenMarkov().__sklearn_tags__().input_tags.allow_nan
    assert VBHiddenMarkov(emission="poisson").__sklearn_tags__().input_tags.allow_nan
    assert VBHiddenMarkov(emission="gaussian",
                          covariance_type="diag").__sklearn_tags__().input_tags.allow_nan
    assert VBHiddenMarkov(emission="gaussian",
                          covariance_type="full").__sklearn_tags__().input_tags.allow_nan


# ---------------------------------------------------------------------------
# online VB over subchains of sequences with missing values
# ---------------------------------------------------------------------------


def _subchain_cases():
    rng = np.random.default_rng(3)
    cat = np.concatenate([rng.integers(0, 2, 150), rng.integers(1, 3, 150)]).astype(float)
    cat[[4, 77, 150, 151, 299]] = np.nan
    return {
        "categorical": (cat.reshape(-1, 1), dict(emission="categorical", n_symbols=3)),
        "diag": (_gaussian_data(T=300), dict(emission="gaussian", covariance_type="diag")),
        "full": (_gaussian_data(T=300), dict(emission="gaussian", covariance_type="full")),
        "poisson": (_poisson_data(T=300), dict(emission="poisson")),
    }


@pytest.mark.parametrize("case", ["categorical", "diag", "full", "poisson"])
def test_subchain_online_fit_with_missing_values_gives_a_finite_bound(case):
    X, params = _subchain_cases()[case]
    X_copy = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few passes: not converged
        model = VBHiddenMarkov(n_components=2, learning_method="online", subchain_length=20,
                               batch_size=4, max_iter=3, random_state=0, **params).fit(X)
    assert np.all(np.isfinite(model.lower_bounds_))
    assert np.isfinite(model.score(X))
    np.testing.assert_array_equal(X, X_copy)


@pytest.mark.parametrize("case", ["categorical", "diag", "full", "poisson"])
def test_subchain_statistics_with_missing_values_average_to_the_whole_data(case):
    # every subchain position with a buffer covering its sequence: the scaled window
    # statistics, per-dimension counts of observed entries included, are the data's
    from sklearn_vb.hmm import _subchains as sc
    from sklearn_vb.hmm._vbem import stats_from_vbe, vbe

    X, params = _subchain_cases()[case]
    lengths = [120, 9, 1, 170]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VBHiddenMarkov(n_components=2, max_iter=3, random_state=0,
                               **params).fit(X, lengths=lengths)
    fam, prior, post = model._family, model._hyper("prior"), model._hyper("posterior")
    data = model._sequence_data(X, lengths, None, reset=False)
    out, (_, _, LE) = vbe(fam, post, data)
    whole = stats_from_vbe(fam, out, data, prior.emission, LE).emission
    L = 7
    every = sc.positions_subchains(np.arange(sc.n_positions(data.lengths, L)), data.starts,
                                   data.lengths, L)
    local = sc.window_pass(fam, post, prior, data, every, 400).stats.emission
    for name in whole.__dataclass_fields__:
        expected = getattr(whole, name)
        if name == "Nd" and case != "full":  # full: the missing entries are latent
            assert expected is not None and getattr(local, name) is not None
        if expected is not None:
            np.testing.assert_allclose(every.scale * getattr(local, name), expected,
                                       rtol=1e-10, atol=1e-10, err_msg=name)
