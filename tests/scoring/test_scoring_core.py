"""Core pieces of sklearn_vb.scoring: result object, numerics, parameter spaces, API."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_vb.scoring import (SCORERS, ParamBlock, ParamSpace, ScoreResult,
                                delta_method_stderr, get_scorer, importance_effective_sample_size,
                                log_mean_exp, score)
from sklearn_vb._core.numerics import (
    combine_unbiased_for_inverse_z,
    combine_unbiased_for_z,
    spawn_generators,
)


def test_score_result_is_frozen_and_corrected():
    r = ScoreResult("vb", -10.0, "lower", log_alias_correction=np.log(2))
    assert r.corrected == pytest.approx(-10.0 + np.log(2))
    with pytest.raises(Exception):
        r.log_evidence = 0.0
    with pytest.raises(ValueError, match="bound"):
        ScoreResult("vb", -1.0, "upper-ish")


def test_log_mean_exp_and_ess():
    rng = np.random.default_rng(0)
    a = rng.normal(size=50) * 3 - 1000.0
    assert log_mean_exp(a) == pytest.approx(logsumexp(a) - np.log(50), abs=1e-12)
    w = np.exp(a + 1000.0)
    assert importance_effective_sample_size(a) == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-10)
    # equal weights: ESS = M and zero delta-method stderr
    assert importance_effective_sample_size(np.full(7, -3.0)) == pytest.approx(7.0)
    se, ok = delta_method_stderr(np.full(20, 2.0))
    assert se == pytest.approx(0.0, abs=1e-7) and ok
    # -inf entries are zero weights; NaN raises
    assert log_mean_exp([0.0, -np.inf]) == pytest.approx(np.log(0.5))
    with pytest.raises(ValueError, match="NaN"):
        log_mean_exp([0.0, np.nan])


def test_delta_method_matches_monte_carlo_spread():
    # LME of M lognormal weights: the delta-method stderr matches the spread over runs
    rng = np.random.default_rng(1)
    M, sig = 400, 0.5
    ests, ses = [], []
    for _ in range(400):
        a = rng.normal(0, sig, M)
        ests.append(log_mean_exp(a))
        ses.append(delta_method_stderr(a)[0])
    assert np.std(ests) == pytest.approx(np.mean(ses), rel=0.15)


def test_combining_runs():
    a, b = np.array([0.0, 1.0]), np.array([2.0])
    assert combine_unbiased_for_z([a, b]) == pytest.approx(np.log((1 + np.e + np.e**2) / 3))
    assert combine_unbiased_for_inverse_z([a, b]) == pytest.approx(
        -np.log((1 + np.e + np.e**2) / 3)
    )


def test_spawned_streams_are_reproducible_and_distinct():
    g1 = spawn_generators(5, 3)
    g2 = spawn_generators(5, 3)
    x1 = [g.random() for g in g1]
    assert x1 == [g.random() for g in g2]
    assert len(set(x1)) == 3
    with pytest.raises(ValueError, match="random_state"):
        spawn_generators("abc", 2)


SPACE = ParamSpace([
    ParamBlock("w", (2,), "real"),
    ParamBlock("s", (3,), "positive"),
    ParamBlock("pi", (4,), "simplex"),
    ParamBlock("A", (2, 3), "simplex"),
])


def _random_phi(rng, C):
    return rng.normal(size=(C, SPACE.size))


def test_param_space_shapes_and_round_trip():
    assert SPACE.size == 2 + 3 + 3 + 2 * 2
    rng = np.random.default_rng(2)
    phi = _random_phi(rng, 5)
    params, logdet = SPACE.from_unconstrained(phi)
    assert params["A"].shape == (5, 2, 3)
    np.testing.assert_allclose(params["A"].sum(-1), 1.0)
    np.testing.assert_allclose(params["pi"].sum(-1), 1.0)
    assert np.all(params["s"] > 0)
    np.testing.assert_allclose(SPACE.to_unconstrained(params), phi, atol=1e-12)
    np.testing.assert_allclose(SPACE.log_det_jacobian(params), logdet, atol=1e-12)
    flat = SPACE.flatten(params)
    assert flat.shape == (5, SPACE.flat_size)
    back = SPACE.unflatten(flat)
    for k in params:
        np.testing.assert_array_equal(back[k], params[k])


def _free_coordinates(params):
    """theta restricted to the free coordinates (first K-1 of every simplex row)."""
    parts = []
    for b in SPACE.blocks:
        v = params[b.name]
        if b.constraint == "simplex":
            v = v[..., :-1]
        parts.append(v.reshape(len(v), -1))
    return np.concatenate(parts, axis=1)


def test_jacobian_matches_finite_differences():
    rng = np.random.default_rng(3)
    phi0 = _random_phi(rng, 3)
    h = 1e-6
    for c in range(3):
        J = np.empty((SPACE.size, SPACE.size))
        for j in range(SPACE.size):
            e = np.zeros(SPACE.size)
            e[j] = h
            tp = _free_coordinates(SPACE.from_unconstrained(phi0[c] + e)[0])[0]
            tm = _free_coordinates(SPACE.from_unconstrained(phi0[c] - e)[0])[0]
            J[:, j] = (tp - tm) / (2 * h)
        sign, logabs = np.linalg.slogdet(J)
        assert sign != 0
        assert SPACE.from_unconstrained(phi0[c:c + 1])[1][0] == pytest.approx(logabs, abs=1e-7)


def test_param_space_validation():
    with pytest.raises(ValueError, match="constraint"):
        ParamBlock("x", (2,), "unit")
    with pytest.raises(ValueError, match="simplex"):
        ParamBlock("x", (), "simplex")
    # a simplex of length 1 is the constant 1: no free coordinate, density and Jacobian 1
    one = ParamBlock("x", (3, 1), "simplex")
    assert one.constant and one.dim == 0 and one.size == 3
    sp = ParamSpace([one, ParamBlock("w", (2,))])
    val, ld = sp.from_unconstrained(np.array([[0.5, -1.0]]))
    np.testing.assert_array_equal(val["x"], np.ones((1, 3, 1)))
    assert ld[0] == 0.0 and sp.size == 2
    np.testing.assert_array_equal(sp.to_unconstrained(val), [[0.5, -1.0]])
    with pytest.raises(ValueError, match="unique"):
        ParamSpace([ParamBlock("x", (1,)), ParamBlock("x", (2,))])
    with pytest.raises(ValueError, match="missing"):
        SPACE.check({"w": np.zeros((1, 2))})


class _FittedWithBound:
    lower_bound_ = -12.5
    converged_ = True

    def bic(self, X):
        return 40.0


def test_score_vb_and_bic_without_scoring_model():
    est = _FittedWithBound()
    r = score(est, np.zeros((3, 1)), method="vb")
    assert r.method == "vb" and r.bound == "lower" and r.log_evidence == -12.5
    r = score(est, np.zeros((3, 1)), method="bic")
    assert r.log_evidence == -20.0 and r.bound == "approx"
    with pytest.raises(NotImplementedError, match="vb needs n_aliases"):
        score(est, np.zeros((3, 1)), method="vb", alias_correction=True)
    with pytest.raises(NotImplementedError, match="ais needs scoring_model"):
        score(est, np.zeros((3, 1)), method="ais")


def test_get_scorer_options():
    assert set(SCORERS) == {"vb", "map", "bic", "bic_map", "bicp", "laplace", "cs", "cs_dagger", "is", "ais",
                            "rais", "bdmc", "vmcmc", "smc", "shme", "nested_sampling", "cms",
                            "hme", "bethe_laplace", "hidden_laplace", "hidden_vb"}
    sc = get_scorer("ais", n_temperatures=50, n_chains=4)
    assert sc.params["n_temperatures"] == 50
    with pytest.raises(ValueError, match="unknown option"):
        get_scorer("vb", n_temperatures=3)
    with pytest.raises(ValueError, match="method"):
        get_scorer("nope")


def test_former_name_of_the_importance_sample_size_warns_and_still_works():
    import sklearn_vb.scoring as scoring

    with pytest.warns(FutureWarning, match="importance_effective_sample_size"):
        former = scoring.effective_sample_size
    assert former is importance_effective_sample_size
