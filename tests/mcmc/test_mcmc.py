"""sklearn_vb.mcmc.VariationalMCMC: invariance on a conjugate posterior, regeneration
tours, the cost of the mixture kernel, the dimension effect and the package models."""

import warnings

import numpy as np
import pandas as pd
import pytest

from sklearn_vb import (VBDiscreteDAG, VBHiddenMarkov, VBLinearDynamicalSystem,
                        VBMixtureFactorAnalysers, VBSigmoidBeliefNetwork)
from sklearn_vb.mcmc import VariationalMCMC, effective_sample_size
from sklearn_vb.scoring import ParamBlock, ParamSpace, ScoringModelMixin
from sklearn_vb._core.evidence.posteriors import FactorizedPosterior, GaussianQ


class GaussianPosteriorModel(ScoringModelMixin):
    """theta in R^3 in blocks of 1 and 2, prior N(0, s0 I), y_i ~ N(A theta, I): the
    posterior is Gaussian with known moments; q is a scaled and shifted version of it."""

    def __init__(self, q_scale=0.25, q_shift=0.0, seed=0, n=20, s0=10.0, iso=None):
        rng = np.random.default_rng(seed)
        d = 3 if iso is None else iso
        self.sizes = (1, 2) if iso is None else (iso,)
        self.A = np.eye(d) if iso is not None else rng.standard_normal((d, d)) + 2 * np.eye(d)
        self.n = 1 if iso is not None else n
        self.Y = np.zeros((1, d)) if iso is not None else rng.standard_normal((n, d)) + 1.0
        self.s0 = 1e8 if iso is not None else s0
        self.param_space = ParamSpace([ParamBlock(f"b{i}", (k,), "real")
                                       for i, k in enumerate(self.sizes)])
        self.cov = np.linalg.inv(np.eye(d) / self.s0 + self.n * self.A.T @ self.A)
        self.mean = self.cov @ (self.A.T @ self.Y.sum(0))
        self.q_scale, self.q_shift = q_scale, q_shift

    def _flat(self, p):
        return np.concatenate([np.asarray(p[f"b{i}"]).reshape(len(p[f"b{i}"]), -1)
                               for i in range(len(self.sizes))], axis=1)

    def log_prior(self, p):
        W = self._flat(p)
        return -0.5 * (W**2).sum(1) / self.s0 - 0.5 * W.shape[1] * np.log(2 * np.pi * self.s0)

    def sample_prior(self, rng, size):
        W = rng.standard_normal((size, self.A.shape[0])) * np.sqrt(self.s0)
        return dict(zip([f"b{i}" for i in range(len(self.sizes))],
                        np.split(W, np.cumsum(self.sizes)[:-1], axis=1)))

    def log_likelihood(self, p, X):
        R = self.Y[None] - (self._flat(p) @ self.A.T)[:, None, :]
        return -0.5 * (R**2).sum((1, 2))

    def n_cases(self, X):
        return self.n

    def prepare_data(self, X, **kw):
        return X

    def variational_posterior(self, X=None):
        m = self.mean + self.q_shift
        bounds = np.cumsum((0,) + self.sizes)
        return FactorizedPosterior([
            GaussianQ(f"b{i}", m[a:b], self.q_scale * self.cov[a:b, a:b])
            for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))])


def _batch_means_z(chains, mean):
    """z-scores of the pooled mean from 20 batch means per chain."""
    C, N, D = chains.shape
    b = chains[:, : (N // 20) * 20].reshape(C, 20, -1, D).mean(axis=2).reshape(-1, D)
    se = b.std(axis=0, ddof=1) / np.sqrt(b.shape[0])
    return (chains.reshape(-1, D).mean(axis=0) - mean) / se


def _cov_error(chains, cov):
    x = chains.reshape(-1, chains.shape[-1])
    return np.linalg.norm(np.cov(x, rowvar=False) - cov) / np.linalg.norm(cov)


def test_burn_in_adaptation_leaves_the_posterior_invariant():
    model = GaussianPosteriorModel(q_scale=0.25, q_shift=0.3)
    s = VariationalMCMC(model, "mixture", "burn_in", n_samples=2500, burn_in=500, n_chains=4,
                        random_state=0).fit(None)
    assert np.all(np.abs(_batch_means_z(s.samples_phi_, model.mean)) < 4)
    assert _cov_error(s.samples_phi_, model.cov) < 0.15
    # the frozen proposal is the moment match, far wider than the fitted q
    assert np.trace(s.proposal_.cov) > 2 * 0.25 * np.trace(model.cov)


def test_regeneration_adapts_q_and_its_tours_give_exact_moments():
    model = GaussianPosteriorModel(q_scale=0.25)
    s = VariationalMCMC(model, "independence", "regeneration", n_samples=3000, n_chains=2,
                        random_state=1).fit(None)
    for starts in s.tours_:
        assert starts[0] == 0 and np.all(np.diff(starts) > 0)
        assert len(starts) > 50
    est, se = s.tour_estimate()
    assert np.all(np.abs(est - model.mean) < 4 * se)
    second, se2 = s.tour_estimate(lambda x: x**2)
    assert np.all(np.abs(second - (np.diag(model.cov) + model.mean**2)) < 4 * se2)
    assert _cov_error(s.samples_phi_, model.cov) < 0.1
    # adapted: the acceptance of the refitted independence proposal is high
    assert s.acceptance_["independence"] > 0.6


def test_regeneration_without_refit_is_still_a_valid_chain():
    """With q kept fixed, the splitting alone: tours are valid regenerations, so the
    regenerative estimate is unbiased for the exact mean within its standard error."""
    model = GaussianPosteriorModel(q_scale=1.5)
    s = VariationalMCMC(model, "independence", "regeneration", n_samples=3000, n_chains=2,
                        regeneration_refit=False, random_state=2).fit(None)
    est, se = s.tour_estimate()
    assert np.all(np.abs(est - model.mean) < 4 * se)
    lengths = np.concatenate([np.diff(t) for t in s.tours_])
    # over-dispersed q and c = w(mode)/2: regenerations are frequent
    assert lengths.mean() < 5


def test_mixture_runs_one_sub_kernel_per_iteration():
    model = GaussianPosteriorModel()
    n_iter, C, B = 300, 3, 2
    counts = {}
    for kernel, nu in [("mixture", 0.5), ("block", 0.5), ("random_walk", 0.5), ("mixture", 1.0)]:
        s = VariationalMCMC(model, kernel, nu=nu, n_samples=n_iter, burn_in=0, n_chains=C,
                            random_state=0).fit(None)
        # C evaluations of the starting states, then one per block per chain-iteration
        assert s.n_likelihood_evaluations_ == C + n_iter * C * B
        assert sum(s.kernel_counts_.values()) == n_iter * C
        counts[(kernel, nu)] = s.kernel_counts_
    mix = counts[("mixture", 0.5)]
    assert 0.35 < mix["block"] / (n_iter * C) < 0.65
    assert counts[("mixture", 1.0)] == {"block": n_iter * C, "random_walk": 0}


def test_independence_acceptance_collapses_with_dimension():
    acc = {}
    for d in (1, 50):
        model = GaussianPosteriorModel(q_scale=0.5, iso=d)
        s = VariationalMCMC(model, "independence", n_samples=400, burn_in=50, n_chains=2,
                            random_state=0).fit(None)
        acc[d] = s.acceptance_["independence"]
    assert acc[50] < acc[1] / 5


def test_effective_sample_size_of_ar1_chains():
    rng = np.random.default_rng(0)
    rho, N = 0.8, 20000
    x = np.empty((2, N, 1))
    x[:, 0] = rng.standard_normal((2, 1))
    for t in range(1, N):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.standard_normal((2, 1))
    ess = effective_sample_size(x)[0]
    expected = 2 * N * (1 - rho) / (1 + rho)
    assert abs(ess / expected - 1) < 0.15


def test_bad_options_are_refused():
    model = GaussianPosteriorModel()
    with pytest.raises(ValueError, match="kernel"):
        VariationalMCMC(model, "gibbs").fit(None)
    with pytest.raises(ValueError, match="regeneration"):
        VariationalMCMC(model, "mixture", "regeneration").fit(None)
    with pytest.raises(ValueError, match="nu"):
        VariationalMCMC(model, nu=1.5).fit(None)


def _package_fits():
    rng = np.random.default_rng(0)
    hmm_X = np.array([0, 0, 1, 2, 2, 2, 1, 0, 1, 1, 0, 2])[:, None]
    dag_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])
    mfa_X = rng.standard_normal((15, 2)) @ np.array([[2.0, 1.0], [0.0, 0.5]])
    lds_Y = np.cumsum(rng.standard_normal((15, 2)), axis=0) * 0.3
    sbn_X = pd.DataFrame((rng.random((30, 2)) < 0.5).astype(float), columns=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            (VBHiddenMarkov(n_components=2, n_symbols=3, random_state=0).fit(hmm_X), hmm_X),
            (VBDiscreteDAG(n_components=2, cardinalities=3, random_state=0).fit(dag_X), dag_X),
            (VBMixtureFactorAnalysers(n_components=1, n_factors=1, search=False,
                                      random_state=0).fit(mfa_X), mfa_X),
            (VBLinearDynamicalSystem(n_states=1, fit_intercept=False, random_state=0,
                                     max_iter=100).fit(lds_Y), lds_Y),
            (VBSigmoidBeliefNetwork({"b": ["a"], "a": []}, n_init=1,
                                    random_state=0).fit(sbn_X), sbn_X),
        ]


def test_every_package_model_can_be_sampled():
    for est, X in _package_fits():
        s = VariationalMCMC(est, "mixture", n_samples=20, burn_in=2, n_chains=2,
                            random_state=0).fit(X)
        name = type(est).__name__
        assert s.samples_phi_.shape[:2] == (2, 20), name
        assert np.all(np.isfinite(s.log_target_)), name
        assert set(s.acceptance_) == {"block", "random_walk"}, name
        assert 0 < s.acceptance_["random_walk"] <= 1, name
        assert s.ess_.shape == (s.samples_phi_.shape[2],), name


def test_mixture_beats_q_and_independence_on_logistic_regression():
    """The paper's main claim on a two-coefficient logistic regression (n = 50, prior
    N(0, 10 I)): with q the posterior covariance x 0.25, the mixture chain's covariance
    is closer to the exact (grid) posterior covariance than q's and the independence
    chain's."""
    rng = np.random.default_rng(3)
    n = 50
    a = (rng.random(n) < 0.5).astype(float)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.5 + 1.0 * a)))).astype(float)
    X = pd.DataFrame({"a": a, "y": y})
    est = VBSigmoidBeliefNetwork({"y": ["a"], "a": []}, prior_variance=10.0, n_init=1,
                                 tol=1e-9, random_state=0).fit(X)
    j = est.structure_.index("y")
    # exact posterior moments of y's weights on a grid
    g = np.linspace(-6, 8, 281)
    W = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    A = W[:, :1] + W[:, 1:] * a[None]
    lp = (-np.logaddexp(0, -(2 * y - 1)[None] * A).sum(1) - 0.5 * (W**2).sum(1) / 10.0)
    p = np.exp(lp - lp.max())
    p /= p.sum()
    mean = p @ W
    cov = (W - mean).T @ ((W - mean) * p[:, None])
    q_blocks = [GaussianQ(f"w[{nm}]", m, (0.25 * S if nm == "y" else S))
                for nm, m, S in zip(est.structure_.names, est.coef_, est.covariances_)]
    q = FactorizedPosterior(q_blocks)
    q_err = np.linalg.norm(0.25 * est.covariances_[j] - cov) / np.linalg.norm(cov)
    errs = {}
    for kernel in ("mixture", "independence"):
        s = VariationalMCMC(est, kernel, posterior=q, n_samples=1500, burn_in=150, n_chains=4,
                            random_state=0).fit(X)
        draws = s.samples_["w[y]"].reshape(-1, 2)
        errs[kernel] = np.linalg.norm(np.cov(draws, rowvar=False) - cov) / np.linalg.norm(cov)
    assert errs["mixture"] < q_err
    assert errs["mixture"] < errs["independence"]
