"""Nested sampling against exact evidences."""

import pytest

from sklearn_vb.scoring import score
from tests.oracles import bdmc_instances as inst


@pytest.mark.parametrize("make", [inst.gaussian_mean, inst.clustering, inst.binary])
def test_nested_sampling_matches_the_exact_evidence(make):
    est, X, exact, _ = make()
    r = score(est, X, "nested_sampling", n_live=16, n_steps=10, random_state=0)
    assert r.bound == "approx"
    assert r.diagnostics["converged"]
    assert abs(r.log_evidence - exact) < 0.4 + 3 * r.stderr


def test_nested_sampling_needs_two_live_particles():
    est, X, _, _ = inst.gaussian_mean()
    with pytest.raises(ValueError, match="n_live"):
        score(est, X, "nested_sampling", n_live=1)
