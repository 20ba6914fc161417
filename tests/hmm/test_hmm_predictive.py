"""``sklearn_vb.hmm.predictive_log_likelihood``: the predictive probability of new
sequences under a fitted HMM (Beal 2003, eqs. 3.81, 3.84, 3.85), against the exact
average over q(theta) by enumeration of the state paths on tiny problems."""

import numpy as np
import pytest

from sklearn_vb.hmm import VBHiddenMarkov, predictive_log_likelihood
from sklearn_vb.hmm._scoring_dirichlet import DirichletCategoricalHMM
from sklearn_vb.hmm._state import SymbolSequences


@pytest.fixture(scope="module")
def model():
    rng = np.random.RandomState(0)
    X = rng.randint(0, 3, size=(40, 1))
    return VBHiddenMarkov(2, n_init=1, random_state=0).fit(X, lengths=[20, 20])


def _exact(model, x):
    """ln of the integral of p(x | theta) over q(theta), by enumerating every state path
    with q's Dirichlet rows integrated out (the evidence of x with q as the prior; the
    symbol V marks a missing value there)."""
    K, V = model.emissionprob_posterior_.shape
    oracle = DirichletCategoricalHMM(K, V, priors={"pi": model.startprob_posterior_,
                                                   "A": model.transmat_posterior_,
                                                   "B": model.emissionprob_posterior_})
    symbols = np.where(np.isnan(x), V, np.nan_to_num(x)).astype(np.int64)
    return oracle.log_evidence(SymbolSequences(symbols=symbols, starts=np.array([0]),
                                               ends=np.array([symbols.size])))


TEST = np.array([0, 2, 2, 1, 0, 0, 2, 1, 1, 0, 2, 0], dtype=float)


def test_smc_is_unbiased_for_the_average_over_q(model):
    exact = _exact(model, TEST)
    reps = np.array([predictive_log_likelihood(model, TEST[:, None], method="smc",
                                               n_particles=50, random_state=s)[0]
                     for s in range(200)])
    # the probability is estimated without bias: the mean of the estimates is the exact
    # average (spread of one estimate ~0.1 nats: the mean's standard error ~0.01)
    assert abs(np.log(np.mean(np.exp(reps - exact)))) < 0.05
    # its log is biased low, by about half its variance
    assert np.mean(reps) < exact + 0.02
    # more particles, less spread (one estimate's spread ~0.02 nats with 2000)
    many = [predictive_log_likelihood(model, TEST[:, None], method="smc", n_particles=2000,
                                      random_state=s)[0] for s in range(3)]
    assert np.max(np.abs(np.array(many) - exact)) < 0.1


def test_smc_with_missing_symbols_and_resampling_at_every_step(model):
    x = TEST.copy()
    x[[3, 7]] = np.nan
    exact = _exact(model, x)
    reps = np.array([predictive_log_likelihood(model, x[:, None], method="smc",
                                               n_particles=50, resample_below=1.0,
                                               random_state=s)[0] for s in range(200)])
    assert abs(np.log(np.mean(np.exp(reps - exact)))) < 0.05


def test_plain_monte_carlo_and_the_bound(model):
    exact = _exact(model, TEST)
    sample = predictive_log_likelihood(model, TEST[:, None], method="sample", n_draws=20000,
                                       random_state=0)[0]
    assert abs(sample - exact) < 0.05
    # eq. 3.84 is a lower bound on ln of eq. 3.81
    bound = predictive_log_likelihood(model, TEST[:, None], method="bound")[0]
    assert bound < exact


def test_one_value_per_sequence_scored_on_its_own(model):
    X = np.concatenate([TEST, TEST[:5]])[:, None]
    lengths = [TEST.size, 5]
    plugin = predictive_log_likelihood(model, X, lengths=lengths)
    assert np.allclose(plugin, model.score_samples(X, lengths=lengths, per="sequence"))
    bound = predictive_log_likelihood(model, X, lengths=lengths, method="bound")
    assert np.isclose(bound.sum(), model.score_bound(X, lengths=lengths))
    smc = predictive_log_likelihood(model, X, lengths=lengths, method="smc", n_particles=3000,
                                    random_state=1)
    # the second sequence is not informed by the first: its value is that of it alone
    # (one estimate's spread ~0.016 nats with 3000 particles)
    assert smc.shape == (2,) and abs(smc[1] - _exact(model, TEST[:5])) < 0.08
    again = predictive_log_likelihood(model, X, lengths=lengths, method="smc",
                                      n_particles=3000, random_state=1)
    assert np.array_equal(smc, again)


def test_other_families_and_refusals(model):
    rng = np.random.RandomState(1)
    Xg = rng.normal(size=(30, 2))
    gauss = VBHiddenMarkov(2, emission="gaussian", n_init=1, random_state=0).fit(Xg)
    sample = predictive_log_likelihood(gauss, Xg[:5], method="sample", n_draws=500,
                                       random_state=0)
    bound = predictive_log_likelihood(gauss, Xg[:5], method="bound")
    assert np.isfinite(sample).all() and np.isfinite(bound).all()
    with pytest.raises(NotImplementedError, match="categorical emissions only"):
        predictive_log_likelihood(gauss, Xg[:5], method="smc")
    with pytest.raises(ValueError, match="method must be one of"):
        predictive_log_likelihood(model, TEST[:, None], method="mean")
    with pytest.raises(ValueError, match="n_particles"):
        predictive_log_likelihood(model, TEST[:, None], method="smc", n_particles=0)
    point = VBHiddenMarkov(2, method="map", n_init=1, random_state=0).fit(TEST[:, None])
    assert np.isfinite(predictive_log_likelihood(point, TEST[:, None])).all()
    with pytest.raises(ValueError, match="needs q\\(theta\\)"):
        predictive_log_likelihood(point, TEST[:, None], method="smc")
