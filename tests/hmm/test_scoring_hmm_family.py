"""The family-parameterised HMM scoring adapter serves every emission family: on a
categorical HMM it agrees with the all-Dirichlet adapter (likelihood, evidence, complete
evidence), so the family pieces are the same mathematics seen from the scoring layer."""

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.emissions import EMISSION_FAMILIES, EmissionFamily
from sklearn_vb.scoring import scoring_model_for
from sklearn_vb.hmm.scoring_model import HMMScoringModel
from sklearn_vb.hmm.scoring_model import FamilyHMMScoringModel

X = np.array([0, 0, 1, 2, 2, 2, 1, 0])[:, None]
LENGTHS = [4, 4]


@pytest.fixture(scope="module")
def categorical():
    est = VBHiddenMarkov(n_components=2, n_symbols=3, n_init=2, random_state=0)
    return est.fit(X, lengths=LENGTHS)


def test_categorical_family_adapter_matches_dirichlet_adapter(categorical):
    generic = FamilyHMMScoringModel(categorical)
    dirichlet = scoring_model_for(categorical)
    assert isinstance(dirichlet, HMMScoringModel)
    assert generic.n_parameters() == dirichlet.n_parameters() == 1 + 2 + 4
    d_gen = generic.prepare_data(X, lengths=LENGTHS)
    d_dir = dirichlet.prepare_data(X, lengths=LENGTHS)
    assert generic.log_evidence(d_gen) == pytest.approx(dirichlet.log_evidence(d_dir), abs=1e-10)
    th = generic.sample_prior(np.random.default_rng(0), 6)
    mapped = {"pi": th["startprob"], "A": th["transmat"], "B": th["emissionprob"]}
    np.testing.assert_allclose(generic.log_likelihood(th, d_gen),
                               dirichlet.log_likelihood(mapped, d_dir), rtol=1e-10)
    np.testing.assert_allclose(generic.log_prior(th), dirichlet.log_prior(mapped), rtol=1e-10)
    one = {k: v[:1] for k, v in th.items()}
    e = generic.e_step(one, d_gen)
    e_ref = dirichlet.e_step({k: v[:1] for k, v in mapped.items()}, d_dir)
    assert e.loglik == pytest.approx(e_ref.loglik, abs=1e-10)
    np.testing.assert_allclose(e.stats.emission.emis, e_ref.stats["B"], atol=1e-12)
    assert generic.log_complete_evidence(e.stats) == pytest.approx(
        dirichlet.log_complete_evidence(e_ref.stats), abs=1e-10)
    mean = generic.variational_posterior().mean()
    np.testing.assert_allclose(mean["emissionprob"][0], categorical.emissionprob_, rtol=1e-12)


def test_every_registered_family_implements_the_interface():
    for cls in EMISSION_FAMILIES.values():
        family = cls()
        assert isinstance(family, EmissionFamily)
        assert family.emission and family.hyper_names
