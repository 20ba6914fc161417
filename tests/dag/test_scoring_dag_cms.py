"""The Chib–Murray–Salakhutdinov estimator on discrete DAGs with hidden nodes: the exact
conditionals it needs against the joint, and the estimate against enumerated evidence."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb import VBDiscreteDAG
from sklearn_vb._core.evidence.dirichlet import dirichlet_evidence
from sklearn_vb.scoring import score, scoring_model_for

# a hidden node with an observed parent and two observed children, one missing value
X_PARENT = np.array([[0, 0, 1], [1, 2, 0], [0, 0, 1], [1, 2, 1], [0, 1, np.nan], [1, 2, 0],
                     [0, 0, 0]])
STRUCTURE = ({"a": [], "h": ["a"], "b": ["h"], "c": ["h"]},
             {"a": 2, "h": 2, "b": 3, "c": 2})
# the latent-class model (one hidden root), complete data
X_CLASS = np.array([[0, 0], [0, 1], [2, 2], [2, 1], [0, 0], [2, 2]])


def _hidden_parent_dag(X=X_PARENT):
    return VBDiscreteDAG(*STRUCTURE, hidden=["h"], n_init=3, random_state=0).fit(X)


def _latent_class_dag():
    return VBDiscreteDAG(n_components=2, cardinalities=3, n_init=3, random_state=0).fit(X_CLASS)


def test_conditionals_agree_with_the_joint():
    """``ln p(theta) + ln p(z, X | theta) - ln p(theta | z, X)`` is ``ln p(z, X)`` (the
    Dirichlet integral of the completed counts) for every theta, and
    ``ln p(z | theta, X) = ln p(z, X | theta) - ln p(X | theta)``."""
    est = _hidden_parent_dag()
    m = scoring_model_for(est)
    d = m.prepare_data(X_PARENT)
    rng = np.random.default_rng(0)
    theta = m.sample_prior(rng, 5)
    Z = m.sample_latents(theta, d, rng)
    joint = m.log_latent_prior(theta, Z, d) + m.log_complete_likelihood_per_case(theta, Z, d).sum(1)
    # the completed counts of chain c, through the layout's entries
    for c in range(5):
        Zc = np.repeat(Z[c:c + 1], 3, axis=0)
        counts = m._completed_counts(Zc[:1], d, 1.0)[0]
        expect = sum(dirichlet_evidence(m.prior_alpha[b], blk.reshape(m.prior_alpha[b].shape))
                     for b, blk in zip(m.block_names, m.layout.split(counts)))
        th = m.sample_prior(rng, 3)
        got = (m.log_prior(th) + m.log_latent_prior(th, Zc, d)
               + m.log_complete_likelihood_per_case(th, Zc, d).sum(1)
               - m.log_param_conditional(th, Zc, d))
        np.testing.assert_allclose(got, expect, rtol=1e-10)
    np.testing.assert_allclose(m.log_latent_conditional(theta, Z, d),
                               joint - m.log_likelihood(theta, d), rtol=1e-10)


def test_tempered_latent_conditional_is_normalised_and_is_what_is_sampled():
    """One case with a missing value has 2 x 2 completions: their tempered conditional
    densities sum to one, and the sampler's frequencies follow them."""
    est = _hidden_parent_dag()
    m = scoring_model_for(est)
    d = m.prepare_data(X_PARENT[4:5])
    theta = m.sample_prior(np.random.default_rng(1), 1)
    H = int(d.row_start[1] - d.row_start[0])
    assert H == 4
    logs = np.array([m.log_latent_conditional(theta, np.array([[h]]), d, beta=0.4)[0]
                     for h in range(H)])
    assert logsumexp(logs) == pytest.approx(0.0, abs=1e-12)
    many = {k: np.repeat(v, 20000, axis=0) for k, v in theta.items()}
    draws = m.sample_latents(many, d, np.random.default_rng(2), beta=0.4)[:, 0]
    freq = np.bincount(draws, minlength=H) / draws.size
    np.testing.assert_allclose(freq, np.exp(logs), atol=0.015)


@pytest.mark.parametrize("make, X", [(_latent_class_dag, X_CLASS),
                                     (_hidden_parent_dag, X_PARENT)])
def test_cms_matches_the_enumerated_evidence(make, X):
    """From the fitted q's mean, averaged over four seeds: within 0.3 nats plus three
    standard errors of the mean of the exact ln p(X) (the chains swap the hidden labels
    on data this small, so no alias offset)."""
    est = make()
    m = scoring_model_for(est)
    exact = m.log_evidence(m.prepare_data(X))
    runs = [score(est, X, "cms", n_samples=150, n_runs=8, random_state=s) for s in range(4)]
    assert all(r.bound == "stochastic_lower" and np.isfinite(r.stderr) for r in runs)
    mean = np.mean([r.log_evidence for r in runs])
    se = np.sqrt(np.sum([r.stderr ** 2 for r in runs])) / len(runs)
    assert abs(mean - exact) < 0.3 + 3 * se, (mean, exact, se)
