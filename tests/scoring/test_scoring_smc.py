"""Sequential Monte Carlo over the cases ("smc") and its reverse, the sequential harmonic
mean estimator ("shme"), against exact evidences."""

import numpy as np
import pytest

from sklearn_vb.scoring import score
from tests.oracles import bdmc_instances as inst

TOL = 0.5


@pytest.mark.parametrize("make", [inst.gaussian_mean, inst.clustering, inst.binary])
def test_smc_and_shme_sandwich_the_exact_evidence(make):
    est, X, exact, truth = make()
    r = score(est, X, "smc", n_particles=64, random_state=0)
    assert r.bound == "stochastic_lower"
    assert abs(r.log_evidence - exact) < TOL + 3 * r.stderr
    ex = {} if truth is None else {"exact_posterior_samples": truth[0]}
    u = score(est, X, "shme", n_particles=64, random_state=0, **ex)
    assert u.bound == "stochastic_upper"
    assert abs(u.log_evidence - exact) < TOL + 3 * u.stderr


def test_smc_on_a_dag_with_kernel_moves():
    est, X, exact, _ = inst.latent_class_dag()
    r = score(est, X, "smc", n_particles=64, n_steps=2, move="kernel", random_state=0)
    assert r.diagnostics["move"] == "kernel"
    assert abs(r.log_evidence - exact) < TOL + 3 * r.stderr


def test_single_particle_smc_is_reproducible_and_resamples_never():
    est, X, exact, _ = inst.clustering()
    a = score(est, X, "smc", n_particles=1, n_runs=2, random_state=5)
    b = score(est, X, "smc", n_particles=1, n_runs=2, random_state=5)
    assert a.log_evidence == b.log_evidence
    assert a.diagnostics["n_resampled"] == [0, 0]
    # a single particle still gives a stochastic lower bound: P(ln Z^ > ln Z + b) < e^-b,
    # so a run more than 7 nats above the truth happens with probability below 0.1 %
    assert a.log_evidence < exact + 7.0


def test_options_are_checked():
    est, X, _, _ = inst.clustering()
    with pytest.raises(ValueError, match="move"):
        score(est, X, "smc", move="nope")
    with pytest.raises(ValueError, match="order"):
        score(est, X, "smc", order=[0, 0, 1])
    with pytest.raises(ValueError, match="exact_posterior_samples"):
        score(est, X, "shme")


class _EveryCaseOnly:
    """A ScoringModel without ``log_likelihood_of_cases``: the sequential scorers then
    evaluate every case at each step."""

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        if name == "log_likelihood_of_cases":
            raise AttributeError(name)
        return getattr(self._model, name)


@pytest.mark.parametrize("make", [inst.clustering, inst.binary])
def test_per_case_likelihood_entry_point(make):
    from sklearn_vb.bdmc_models import BayesianLowRank
    from sklearn_vb.scoring import scoring_model_for
    from sklearn_vb.scoring._smc import case_log_likelihood

    est, X, exact, truth = make()
    low_rank = BayesianLowRank(2, random_state=0).fit(X)
    for fitted in (est, low_rank):
        m = scoring_model_for(fitted)
        data = m.prepare_data(X)
        params = m.sample_prior(np.random.default_rng(0), 3)
        full = m.log_likelihood_per_case(params, data)
        cases = np.array([3, 0, 3])
        np.testing.assert_allclose(m.log_likelihood_of_cases(params, data, cases),
                                   full[:, cases], rtol=1e-12)
        np.testing.assert_allclose(case_log_likelihood(_EveryCaseOnly(m), params, data, cases),
                                   full[:, cases], rtol=1e-12)
    # SMC and SHME give the same numbers with and without the entry point
    m = scoring_model_for(est)
    ex = {} if truth is None else {"exact_posterior_samples": truth[0]}
    for method, opts in (("smc", {}), ("shme", ex)):
        a = score(m, X, method, n_particles=8, n_runs=2, random_state=3, **opts)
        b = score(_EveryCaseOnly(m), X, method, n_particles=8, n_runs=2, random_state=3, **opts)
        assert a.log_evidence == pytest.approx(b.log_evidence, rel=1e-10)
