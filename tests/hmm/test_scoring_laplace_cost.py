"""What makes the Laplace score of an HMM cost about a fit: forward differences of exact
gradients for the Hessian (``d + 1`` gradients, the gradient at the point shared with
the Newton step), and emission tables that recompute only the state a difference moved.
Each is checked against the slower computation it replaces."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._laplace import _Target


def _fitted(emission, covariance_type="full", D=2, T=80):
    rng = np.random.default_rng(7)
    z = (np.arange(T) // 8) % 2
    if emission == "poisson":
        X = rng.poisson(np.where(z[:, None] == 1, 5.0, 1.0) * np.ones(D))
    else:
        X = rng.normal(size=(T, D)) @ np.tril(np.ones((D, D))) * 0.5 + 2.5 * z[:, None]
    lengths = [T // 2, T - T // 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBHiddenMarkov(2, emission=emission, covariance_type=covariance_type,
                             random_state=0, max_iter=200).fit(X, lengths=lengths)
    return est, X, lengths


@pytest.fixture(scope="module", params=[("gaussian", "full"), ("gaussian", "diag"),
                                        ("poisson", "full")], ids=["full", "diag", "poisson"])
def fitted(request):
    return _fitted(*request.param)


def test_emission_table_reuses_unchanged_states_exactly(fitted):
    """After any sequence of calls the table equals the family's full table bit for bit,
    and only the perturbed state's column is recomputed."""
    est, X, lengths = fitted
    model = scoring_model_for(est)
    data = model.prepare_data(X, lengths=lengths)
    space = model.param_space
    phi = space.to_unconstrained(model.variational_posterior().mean())[0]
    calls = []
    tables = model.family.log_likelihood_tables

    def counting(params, Xv):
        calls.append(np.shape(next(iter(params.values())))[1])
        return tables(params, Xv)

    model.family.log_likelihood_tables = counting
    theta0, _ = space.from_unconstrained(phi[None])
    model._emission_table(theta0, data)
    assert calls == [model.K]  # nothing remembered yet
    for j in range(space.size):
        p = phi.copy()
        p[j] += 0.3
        theta, _ = space.from_unconstrained(p[None])
        calls.clear()
        got = model._emission_table(theta, data)
        np.testing.assert_array_equal(got, tables(theta, data.frames)[0])
        # a move of one coordinate recomputes one state (none for a transition)
        assert calls == ([] if j < model.K - 1 + model.K * (model.K - 1) else [1])
        calls.clear()
        np.testing.assert_array_equal(model._emission_table(theta0, data),
                                      tables(theta0, data.frames)[0])
        assert len(calls) <= 1
    # new data: everything is recomputed
    other = model.prepare_data(X[::-1].copy(), lengths=lengths)
    calls.clear()
    np.testing.assert_array_equal(model._emission_table(theta, other),
                                  tables(theta, other.frames)[0])
    assert calls == [model.K]


def test_gradient_with_remembered_tables_is_unchanged(fitted):
    """The exact gradient does not depend on which tables were remembered."""
    est, X, lengths = fitted
    data_model = scoring_model_for(est)
    data = data_model.prepare_data(X, lengths=lengths)
    space = data_model.param_space
    phi = space.to_unconstrained(data_model.variational_posterior().mean())[0]
    warm = _Target(data_model, data, "exact", 1)
    for j in range(space.size):  # fill the memo with perturbed points
        p = phi.copy()
        p[j] += 1e-3
        warm.value_and_gradient(p)
    t1, g1 = warm.value_and_gradient(phi + 1e-4)
    cold = _Target(scoring_model_for(est), data, "exact", 1)
    t2, g2 = cold.value_and_gradient(phi + 1e-4)
    assert t1 == t2
    np.testing.assert_array_equal(g1, g2)


def test_forward_differences_equal_central_differences(fitted):
    """The default forward differences of exact gradients (step 1e-6) give the Laplace
    value of central differences (step 1e-4) to 1e-6 relative, with about half the
    gradients per Hessian."""
    est, X, lengths = fitted
    kw = dict(random_state=0, n_init=1, lengths=lengths)
    fwd = score(est, X, "laplace", **kw)
    ctr = score(est, X, "laplace", differences="central", **kw)
    assert fwd.log_evidence == pytest.approx(ctr.log_evidence, rel=1e-6, abs=1e-5)
    d = fwd.diagnostics["d"]
    n_hessians = 1 + fwd.diagnostics["newton_steps"]
    assert fwd.diagnostics["n_gradient_evaluations"] <= n_hessians * (d + 1) + 2 * d + 10


def test_laplace_is_seeded_and_checks_rel_step():
    est, X, lengths = _fitted("gaussian")
    a = score(est, X, "laplace", lengths=lengths)
    b = score(est, X, "laplace", lengths=lengths)
    assert a.log_evidence == b.log_evidence
    with pytest.raises(ValueError, match="rel_step"):
        score(est, X, "laplace", rel_step=-1.0, lengths=lengths)
