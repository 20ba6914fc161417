"""Joint (theta, z) annealing with tempered Gibbs moves: AIS, reverse AIS and BDMC with
``anneal="joint"`` against exact evidences, beside the theta-only path."""

import numpy as np
import pytest

from sklearn_vb.scoring import UnreliableEstimateWarning, score
from tests.oracles import bdmc_instances as inst


@pytest.mark.parametrize("make", [inst.clustering, inst.binary])
def test_joint_ais_and_reverse_ais_sandwich_the_exact_evidence(make):
    est, X, exact, (ex, _) = make()
    lo = score(est, X, "ais", anneal="joint", n_temperatures=300, n_chains=32, random_state=0)
    assert lo.bound == "stochastic_lower"
    assert abs(lo.log_evidence - exact) < 0.3 + 3 * lo.stderr
    hi = score(est, X, "rais", anneal="joint", n_temperatures=300, n_chains=32,
               exact_posterior_samples=ex, random_state=0)
    assert abs(hi.log_evidence - exact) < 0.3 + 3 * hi.stderr
    theta_only = score(est, X, "ais", n_temperatures=300, n_chains=32, random_state=0)
    assert abs(theta_only.log_evidence - lo.log_evidence) < 0.5 + 3 * np.hypot(lo.stderr,
                                                                              theta_only.stderr)


def test_joint_bdmc_converges_on_the_low_rank_model():
    from sklearn_vb.bdmc_models import BayesianLowRank

    gen = BayesianLowRank(2)
    Y, params, _ = gen.simulate(12, 4, random_state=0)
    est = BayesianLowRank(2, random_state=0).fit(Y)
    ex = {k: v[None] for k, v in params.items()}
    r = score(est, Y, "bdmc", anneal="joint", K_grid=(100, 1000), n_chains=16,
              exact_posterior_samples=ex, random_state=0)
    lo, hi = r.interval
    assert r.diagnostics["converged"]
    assert abs(hi - lo) < 1.0
    # VB is a lower bound on the truth
    assert est.lower_bound_ < hi + 0.5


def test_single_temperature_joint_ais_is_joint_likelihood_weighting():
    est, X, exact, _ = inst.clustering()
    with pytest.warns(UnreliableEstimateWarning):
        r = score(est, X, "ais", anneal="joint", schedule=np.array([0.0, 1.0]), n_chains=4000,
                  random_state=0)
    # unbiased for Z but hopeless: far below the truth
    assert r.log_evidence < exact


def test_anneal_option_is_checked():
    est, X, _, _ = inst.clustering()
    with pytest.raises(ValueError, match="anneal"):
        score(est, X, "ais", anneal="sideways")
    with pytest.raises(ValueError, match="hysteresis"):
        score(est, X, "ais", anneal="joint", hysteresis=True, n_temperatures=10)
    fit, y, _, _ = inst.gaussian_mean()
    with pytest.raises(NotImplementedError, match="anneal='joint'"):
        score(fit, y, "ais", anneal="joint", n_temperatures=10)
