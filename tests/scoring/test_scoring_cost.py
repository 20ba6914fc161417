"""The cheaper pieces behind the point and dimension scores, each against a slow exact
reference: batched per-frame likelihoods of the categorical HMM (one forward pass per
parameter set), the complete-data per-frame terms of the family HMMs in bounded memory
(the family's per-frame parameter gather), the singular values of the effective
dimension (a direct SVD), the Gaussian second moments (einsum), and the point EM that
runs the best screened-out restart on to a better optimum (a toy problem whose optima
are known)."""

import numpy as np
import pytest

from sklearn_vb import VBHiddenMarkov
from sklearn_vb.hmm.forward_backward import forward_backward
from sklearn_vb.datasets import make_hmm_sequences
from sklearn_vb.emissions import GaussianFullEmissions
from sklearn_vb.scoring import score, scoring_model_for
from sklearn_vb.scoring._dimension import _singular_values
from sklearn_vb.hmm import _scoring_family as hmm_family
from sklearn_vb._core.evidence.point_em import best_point_em
from sklearn_vb._core.evidence.params import take


def _categorical(seed=0):
    r = np.random.default_rng(seed)
    K, V = 3, 5
    A = 0.6 * np.eye(K) + 0.4 * r.dirichlet(np.ones(K), size=K)
    B = r.dirichlet(np.full(V, 0.5), size=K)
    X, _, L = make_hmm_sequences(np.ones(K) / K, A, B, [30, 1, 17], random_state=seed)
    est = VBHiddenMarkov(K, n_symbols=V, random_state=seed).fit(X, lengths=L)
    return est, X, L


def test_categorical_per_frame_batch_equals_one_pass_per_parameter_set():
    est, X, L = _categorical()
    model = scoring_model_for(est)
    data = model.prepare_data(X, lengths=L)
    params = model.sample_prior(np.random.default_rng(1), 7)
    got = model.log_likelihood_per_case(params, data)
    assert got.shape == (7, X.shape[0])
    for c in range(7):
        log_pi, log_A, log_B = (np.log(params[k][c]) for k in ("pi", "A", "B"))
        ref = forward_backward(log_pi, log_A, np.ascontiguousarray(log_B.T), data.symbols,
                               data.starts, data.ends, False)[1]
        np.testing.assert_allclose(got[c], ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), model.log_likelihood(params, data), rtol=1e-12)


@pytest.mark.parametrize("cov", ["full", "diag"])
def test_family_complete_terms_in_chunks_equal_the_per_frame_gather(monkeypatch, cov):
    r = np.random.default_rng(2)
    X = np.vstack([r.normal(size=(25, 2)) - 2.0, r.normal(size=(25, 2)) + 2.0])
    est = VBHiddenMarkov(2, emission="gaussian", covariance_type=cov, random_state=0).fit(
        X, lengths=[30, 20])
    model = scoring_model_for(est)
    data = model.prepare_data(X, lengths=[30, 20])
    params = model.sample_prior(r, 11)
    Z = model.random_completion(data, r)
    monkeypatch.setattr(hmm_family, "_TABLE_CHUNK", 4)  # several chunks, a ragged last one
    got = model.log_complete_joint_per_case(params, Z, data)
    emis = model.family.log_emission_along(params, Z, data.frames)
    first = np.zeros(Z.size, bool)
    first[data.starts] = True
    prev = np.concatenate([[0], Z[:-1]])
    trans = np.where(first, np.log(params["startprob"][:, Z]),
                     np.log(params["transmat"][:, prev, Z]))
    np.testing.assert_allclose(got, emis + trans, rtol=1e-12, atol=1e-12)
    one = model.log_complete_joint_per_case(take(params, 3), Z, data)
    np.testing.assert_allclose(one[0], got[3], rtol=1e-12)


def test_singular_values_of_a_wide_matrix_equal_a_direct_svd():
    r = np.random.default_rng(3)
    G = r.normal(size=(12, 5)) @ r.normal(size=(5, 400))  # rank 5
    G[:, :3] += 1e-9 * r.normal(size=(12, 3))
    s = _singular_values(G)
    ref = np.linalg.svd(G, compute_uv=False)
    np.testing.assert_allclose(s[:5], ref[:5], rtol=1e-10)
    assert np.all(s[5:] < 1e-6 * s[0]) and np.all(ref[5:] < 1e-6 * ref[0])


def test_gaussian_second_moments_equal_the_einsum():
    r = np.random.default_rng(4)
    R = r.dirichlet(np.ones(3), size=50)
    Xc = r.normal(size=(50, 4))
    np.testing.assert_allclose(GaussianFullEmissions._second_moments(R, Xc),
                               np.einsum("nk,ni,nj->kij", R, Xc, Xc), rtol=1e-12, atol=1e-12)


def _toy_em():
    """Objective with a local optimum 0 at x = 0 (where the first start sits, its EM step
    halves x) and the global optimum 5 at x = 20, reached from x >= 5 by a slow
    contraction x <- x + 0.01 (20 - x): after its screening budget a restart from 10 is
    still below 0."""

    def objective(x):
        return -x * x if x < 5 else 5.0 - 0.1 * (x - 20.0) ** 2

    def evaluate(theta):
        x = float(theta["x"][0])
        return objective(x), x

    def m_step(x, _):
        return {"x": np.array([0.5 * x if x < 5 else x + 0.01 * (20.0 - x)])}

    def starts(i):
        return {"x": np.array([0.0 if i == 0 else 9.0 + i])}

    return starts, evaluate, m_step


@pytest.mark.parametrize("finish", [True, False])
def test_point_em_finishes_the_best_screened_restart(finish):
    starts, evaluate, m_step = _toy_em()
    run = best_point_em(starts, evaluate, m_step, n_init=3, max_iter=5000, tol=1e-10,
                        owner="toy", restart_iter=20, finish_screened=finish)
    if finish:
        assert run.converged and abs(run.objective - 5.0) < 1e-6
        assert abs(float(run.theta["x"][0]) - 20.0) < 1e-2
    else:  # the restarts were dropped while still below the first run's optimum
        assert run.objective == 0.0 and float(run.theta["x"][0]) == 0.0


def test_point_em_does_not_finish_when_nothing_was_screened_out():
    starts, evaluate, m_step = _toy_em()
    calls = []

    def counting(theta):
        calls.append(1)
        return evaluate(theta)

    best_point_em(lambda i: {"x": np.array([0.0])}, counting, m_step, n_init=3,
                  max_iter=100, tol=1e-10, owner="toy", restart_iter=20)
    assert len(calls) == 3 * 2  # every run converges after two E steps


def test_cs_dagger_categorical_is_seeded_and_uses_the_batched_frames():
    est, X, L = _categorical(1)
    a = score(est, X, "cs_dagger", lengths=L)
    b = score(est, X, "cs_dagger", lengths=L)
    assert a.log_evidence == b.log_evidence
    assert 0 < a.diagnostics["d"] <= scoring_model_for(est).n_parameters()


def test_point_em_draws_per_init_screens_more_starts_at_the_same_budget():
    starts, evaluate, m_step = _toy_em()
    seen = []

    def first_far_start_is_late(i):
        seen.append(i)
        # only the sixth start lies in the better basin; the others sit at the first
        # run's optimum
        return {"x": np.array([13.0 if i == 6 else 0.0])}

    kw = dict(n_init=3, max_iter=5000, tol=1e-10, owner="toy")
    run = best_point_em(first_far_start_is_late, evaluate, m_step, **kw)
    assert seen == [0, 1, 2] and run.objective == 0.0
    seen.clear()
    run = best_point_em(first_far_start_is_late, evaluate, m_step, draws_per_init=4, **kw)
    assert seen == list(range(9)) and abs(run.objective - 5.0) < 1e-6


def test_only_the_hmm_screens_several_draws_per_restart():
    from sklearn_vb import VBDiscreteDAG
    from sklearn_vb.datasets import beal_true_structure, make_beal_dag

    dag = VBDiscreteDAG(*beal_true_structure(), n_init=1, max_iter=20, random_state=0).fit(
        make_beal_dag(40, random_state=1))
    assert scoring_model_for(dag).point_draws_per_init == 1
    assert scoring_model_for(_categorical()[0]).point_draws_per_init == 4
