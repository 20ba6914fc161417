"""The compiled engine of VariationalMCMC (sigmoid belief networks) against the Python
kernels: for a seed both run the same chain, with hidden nodes, -1/+1 parents, known
biases and missing values; and the compiled chains keep an exactly known posterior."""

import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_vb import VBSigmoidBeliefNetwork
from sklearn_vb.mcmc import VariationalMCMC
from sklearn_vb.scoring import scoring_model_for
from sklearn_vb._core.evidence.posteriors import FactorizedPosterior, GaussianQ


def _hidden_network():
    """y with a hidden parent h and an observed parent x (-1/+1 coding, known biases),
    a few values of x missing: several enumeration rows per case."""
    rng = np.random.default_rng(0)
    n = 40
    h = rng.random(n) < 0.6
    x = rng.random(n) < 0.5
    y = rng.random(n) < 1 / (1 + np.exp(-(1.0 + 2.0 * (2 * h - 1) - (2 * x - 1))))
    X = pd.DataFrame({"x": x, "y": y}).astype(float)
    X.loc[[3, 7, 11], "x"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBSigmoidBeliefNetwork({"y": ["h", "x"], "h": [], "x": []}, hidden=["h"],
                                     fixed_bias={"h": 0.4}, parent_coding="spin",
                                     prior_variance=10.0, n_init=1, random_state=0).fit(X)
    return est, X


def _observed_network():
    rng = np.random.default_rng(1)
    U = (rng.random((60, 3)) < 0.5).astype(float)
    y = (rng.random(60) < 1 / (1 + np.exp(-(0.3 + U @ [1.0, -0.5, 0.8])))).astype(float)
    X = pd.DataFrame(np.column_stack([U, y]), columns=["a", "b", "c", "y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBSigmoidBeliefNetwork({"y": ["a", "b", "c"], "a": [], "b": [], "c": []},
                                     n_init=1, random_state=0).fit(X)
    return est, X


@pytest.mark.parametrize("kernel", ["mixture", "independence", "block", "random_walk"])
@pytest.mark.parametrize("adapt", ["none", "burn_in"])
@pytest.mark.parametrize("network", [_hidden_network, _observed_network])
def test_compiled_engine_runs_the_python_chain(kernel, adapt, network):
    est, X = network()
    runs = {}
    for engine in ("python", "compiled"):
        runs[engine] = VariationalMCMC(est, kernel, adapt, n_samples=60, burn_in=20, n_chains=2,
                                       engine=engine, random_state=4).fit(X)
    py, cc = runs["python"], runs["compiled"]
    assert (py.engine_, cc.engine_) == ("python", "compiled")
    np.testing.assert_allclose(cc.samples_phi_, py.samples_phi_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(cc.log_target_, py.log_target_, rtol=1e-12, atol=1e-9)
    assert cc.acceptance_ == py.acceptance_
    assert cc.block_acceptance_ == py.block_acceptance_
    assert cc.kernel_counts_ == py.kernel_counts_
    assert cc.n_likelihood_evaluations_ == py.n_likelihood_evaluations_
    # the chain moved (a test of equal frozen chains would pass trivially)
    assert 0 < sum(cc.acceptance_.values())
    if adapt == "burn_in":
        np.testing.assert_allclose(cc.proposal_.cov, py.proposal_.cov, rtol=1e-9)


def test_auto_engine_and_refusals():
    est, X = _observed_network()
    assert VariationalMCMC(est, n_samples=5, n_chains=1, random_state=0).fit(X).engine_ == "compiled"
    regen = VariationalMCMC(est, "independence", "regeneration", n_samples=5, n_chains=1,
                            random_state=0)
    assert regen.fit(X).engine_ == "python"
    with pytest.raises(ValueError, match="engine='compiled' does not apply"):
        VariationalMCMC(est, "independence", "regeneration", engine="compiled", n_samples=5,
                        n_chains=1).fit(X)
    with pytest.raises(ValueError, match="engine"):
        VariationalMCMC(est, engine="numba").fit(X)
    heavy = scoring_model_for(est).variational_posterior().heavy_tailed()
    with pytest.raises(ValueError, match="Gaussian"):
        VariationalMCMC(est, engine="compiled", posterior=heavy, n_samples=5).fit(X)


def test_compiled_mixture_keeps_the_exact_posterior_of_a_bias():
    """A parentless node's bias b with n1 ones in n cases and prior N(0, v): the exact
    posterior on a fine grid; q is shifted by about one posterior standard deviation and
    twice as wide as the VB fit; the compiled mixture chain gets the grid's mean and
    variance within their Monte Carlo errors."""
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": (rng.random(30) < 0.7).astype(float)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBSigmoidBeliefNetwork({"a": []}, prior_variance=4.0, n_init=1,
                                     random_state=0).fit(X)
    g = np.linspace(-4, 6, 20001)
    n1, n = X["a"].sum(), len(X)
    lp = n1 * -np.logaddexp(0, -g) + (n - n1) * -np.logaddexp(0, g) - 0.5 * g**2 / 4.0
    p = np.exp(lp - lp.max())
    p /= p.sum()
    mean = p @ g
    var = p @ (g - mean) ** 2
    q = FactorizedPosterior([GaussianQ("w[a]", est.coef_[0] + 0.4, 2.0 * est.covariances_[0])])
    s = VariationalMCMC(est, "mixture", posterior=q, n_samples=6000, burn_in=300, n_chains=4,
                        engine="compiled", random_state=0).fit(X)
    draws = s.samples_phi_[..., 0]
    # batch-means standard error, 20 batches per chain
    b = draws.reshape(4, 20, -1).mean(axis=2).ravel()
    se = b.std(ddof=1) / np.sqrt(b.size)
    assert abs(draws.mean() - mean) < 4 * se
    # a sample variance's relative standard error is about sqrt(2 / ESS)
    assert abs(draws.var() / var - 1) < 4 * np.sqrt(2.0 / s.ess_[0])
    assert s.ess_[0] > 2000
