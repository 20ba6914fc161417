"""Sequential Monte Carlo over the cases ("smc") and its reverse, the sequential harmonic
mean estimator ("shme"), against exact evidences."""

import numpy as np
import pytest

from sklearn_vb.scoring import score
from tests import _bdmc_instances as inst

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
    r = score(est, X, "smc", n_particles=64, n_steps=2, random_state=0)
    assert r.diagnostics["move"] == "kernel"
    assert abs(r.log_evidence - exact) < TOL + 3 * r.stderr


def test_single_particle_smc_is_reproducible_and_resamples_never():
    est, X, exact, _ = inst.clustering()
    a = score(est, X, "smc", n_particles=1, n_runs=2, random_state=5)
    b = score(est, X, "smc", n_particles=1, n_runs=2, random_state=5)
    assert a.log_evidence == b.log_evidence
    assert a.diagnostics["n_resampled"] == [0, 0]
    # a single particle still gives a stochastic lower bound: not far above the truth
    assert a.log_evidence < exact + 3.0


def test_options_are_checked():
    est, X, _, _ = inst.clustering()
    with pytest.raises(ValueError, match="move"):
        score(est, X, "smc", move="nope")
    with pytest.raises(ValueError, match="order"):
        score(est, X, "smc", order=[0, 0, 1])
    with pytest.raises(ValueError, match="exact_posterior_samples"):
        score(est, X, "shme")
