"""Scoring-model adapters of the package estimators against exact evidences of the
latent-class and discrete-HMM reference problems (``tests/scoring/test_scoring_reference.py``)."""

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._cs import cs_value
from tests.oracles.reference_models import DiscreteHMM, LatentClassModel

LATENT_CLASS_X = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])
LATENT_CLASS_EXACT = -13.721206877201771
HMM_X = np.array([0, 0, 1, 2, 2, 2, 1, 0])[:, None]


def tolerance_ok(est, se, exact):
    err = abs(est - exact)
    return err <= max(0.05, 4 * se) and err <= 0.5


@pytest.fixture(scope="module")
def hmm_fit():
    est = VBHiddenMarkov(n_components=2, n_symbols=3, n_init=3, max_iter=200, tol=1e-8,
                         random_state=0)
    return est.fit(HMM_X, lengths=[4, 4])


@pytest.fixture(scope="module")
def dag_fit():
    est = VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3, max_iter=200, tol=1e-10,
                        random_state=0)
    return est.fit(LATENT_CLASS_X)


def test_hmm_model_matches_enumeration_and_reference(hmm_fit):
    model = scoring_model_for(hmm_fit)
    data = model.prepare_data(HMM_X, lengths=[4, 4])
    exact = model.log_evidence(data)
    # the estimator's default prior (total concentration 1 per row) differs from the
    # Dirichlet(1) of the discrete-HMM reference problem; the same enumeration code with
    # Dirichlet(1) reproduces that problem's exact evidence
    ref = DiscreteHMM(2, 3, 1.0)
    assert ref.log_evidence(ref.prepare_data(HMM_X, lengths=[4, 4])) == pytest.approx(
        -9.759777231503435, abs=1e-10)
    np.testing.assert_allclose(model.prior_alpha["A"], hmm_fit.transmat_prior_)
    # sequence_ids give the same data as lengths
    d2 = model.prepare_data(HMM_X, sequence_ids=[0] * 4 + [1] * 4)
    rng = np.random.default_rng(0)
    th = model.sample_prior(rng, 5)
    np.testing.assert_allclose(model.log_likelihood(th, data), model.log_likelihood(th, d2))
    # the estimator's plug-in likelihood equals ours at its posterior-mean parameters
    mean = {"pi": hmm_fit.startprob_[None], "A": hmm_fit.transmat_[None],
            "B": hmm_fit.emissionprob_[None]}
    ll = model.log_likelihood(mean, data)[0]
    assert ll == pytest.approx(hmm_fit.score_samples(HMM_X, lengths=[4, 4]).sum(), abs=1e-8)

    vb = score(hmm_fit, HMM_X, "vb", lengths=[4, 4])
    assert vb.log_evidence <= exact + 1e-9
    cs = score(hmm_fit, HMM_X, "cs", lengths=[4, 4], random_state=0)
    assert cs.log_evidence <= exact + 1e-9
    for _ in range(100):
        assert cs_value(model, model.sample_prior(rng, 1), data)[0] <= exact + 1e-9
    ais = score(hmm_fit, HMM_X, "ais", lengths=[4, 4], n_temperatures=1000, n_chains=16,
                random_state=0)
    assert tolerance_ok(ais.log_evidence, ais.stderr, exact), (ais.log_evidence - exact, ais.stderr)
    assert score(hmm_fit, HMM_X, "bic", lengths=[4, 4], random_state=0).diagnostics["n"] == 8
    isr = score(hmm_fit, HMM_X, "is", sequence_ids=[0] * 4 + [1] * 4, n_samples=2000,
                n_runs=2, random_state=0, proposal="defensive")
    assert isr.log_evidence <= exact + 3 * isr.stderr + 0.05


def test_dag_model_matches_enumeration(dag_fit):
    model = scoring_model_for(dag_fit)
    data = model.prepare_data(LATENT_CLASS_X)
    exact = model.log_evidence(data)
    assert exact == pytest.approx(LATENT_CLASS_EXACT, abs=1e-9)
    assert dag_fit.exact_log_evidence(LATENT_CLASS_X) == pytest.approx(exact, abs=1e-9)
    # same likelihood as the reference latent-class model under matching parameters
    ref = LatentClassModel(2, (3, 3))
    rng = np.random.default_rng(1)
    th = ref.sample_prior(rng, 4)
    names = model.block_names
    mapped = {names[0]: th["pi"][:, None, :], names[1]: th["B0"], names[2]: th["B1"]}
    assert [model.param_space[n].shape for n in names] == [(1, 2), (2, 3), (2, 3)]
    np.testing.assert_allclose(model.log_likelihood(mapped, data),
                               ref.log_likelihood(th, ref.prepare_data(LATENT_CLASS_X)),
                               rtol=1e-10)
    assert model.n_parameters() == 9 and model.n_aliases() == 2

    vb = score(dag_fit, LATENT_CLASS_X, "vb", alias_correction=True)
    assert vb.log_evidence <= exact + 1e-9
    assert vb.log_alias_correction == pytest.approx(np.log(2))
    cs = score(dag_fit, LATENT_CLASS_X, "cs", random_state=0, n_init=10)
    assert cs.log_evidence <= exact + 1e-9
    # Algorithm 6.2 through the adapter: the complete-data log-likelihood of a random
    # completion matches the reference model's, and CS-dagger runs on estimator data
    Xbig, _ = ref.simulate(ref.sample_prior(rng, 1), rng, 300)
    big = model.prepare_data(Xbig)
    cd = score(dag_fit, Xbig, "cs_dagger", random_state=0)
    assert (cd.diagnostics["d"], cd.diagnostics["d_complete"]) == (7, 9)
    Z = model.random_completion(big, rng)
    lc = model.log_complete_joint_per_case(mapped, Z, big)
    assert lc.shape == (4, 300)
    np.testing.assert_array_less(lc, model.log_likelihood_per_case(mapped, big) + 1e-12)
    ais = score(dag_fit, LATENT_CLASS_X, "ais", n_temperatures=1000, n_chains=16,
                random_state=0)
    assert tolerance_ok(ais.log_evidence, ais.stderr, exact), (ais.log_evidence - exact, ais.stderr)
    assert ais.log_evidence >= vb.log_evidence - 3 * ais.stderr - 0.05


def test_unsupported_estimator_raises():
    class Dummy:
        lower_bound_ = -1.0

    with pytest.raises(NotImplementedError, match="cs needs scoring_model"):
        score(Dummy(), np.zeros((2, 1)), "cs")
    with pytest.raises(NotImplementedError):
        scoring_model_for(Dummy())
