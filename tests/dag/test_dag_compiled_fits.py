"""The compiled EM / VBEM restarts of ``reproduce dag`` are the estimator's fits: the same
iterations, stopping, kept restart and scores as :class:`VBDiscreteDAG`."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG
from sklearn_vb.datasets import bipartite_structure
from sklearn_vb.reproduce._dag_units import (
    _fit_data,
    _patterns,
    _starts,
    _vbem,
    draw_data,
    fit_scores,
    n_connected_hidden,
)
from sklearn_vb.scoring import scoring_model_for

# the truth, the densest and sparsest structures, and ones whose likelihood is flat along
# hidden directions (several restarts reach the same optimum)
CODES = [(1, 3, 3, 2), (3, 3, 3, 3), (0, 0, 0, 0), (1, 0, 0, 0), (1, 0, 2, 1), (2, 2, 0, 1)]


def _estimator_scores(code, X, seed, n_init, max_iter, tol_per_case):
    """fit_scores through the estimator (the definition the compiled path follows)."""
    n = X.shape[0]
    U, w = _patterns(X)
    kw = dict(n_init=n_init, max_iter=max_iter, tol=tol_per_case * n, random_state=seed,
              bound_check="off")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = VBDiscreteDAG(*bipartite_structure(code), method="ml", **kw).fit(U, sample_weight=w)
        vb = VBDiscreteDAG(*bipartite_structure(code), method="vb", **kw).fit(U, sample_weight=w)
    model = scoring_model_for(em)
    theta = {b: np.asarray(t, float)[None] for b, t in zip(model.block_names, em.cpts_)}
    bic = em.log_likelihood_ - 0.5 * em.n_parameters_ * np.log(n)
    return {"map": em.log_likelihood_, "bic": bic,
            "bicp": bic + float(model.log_prior(theta)[0]), "cs": em.lower_bound_,
            "cs_dagger": em.lower_bound_ + 0.5 * n_connected_hidden(code) * np.log(n),
            "vb": vb.lower_bound_, "ln_S": vb.log_alias_count_, "d": em.n_parameters_,
            "em_iter": em.n_iter_, "vb_iter": vb.n_iter_, "vb_converged": vb.converged_}


@pytest.mark.parametrize("n", [10, 80, 640])
def test_compiled_scores_equal_the_estimators(n):
    X = draw_data(0, 2, n, 640)
    for i, code in enumerate(CODES):
        got = fit_scores(code, X, 100 + i)
        want = _estimator_scores(code, X, 100 + i, 3, 1000, 1e-6)
        assert got.keys() == want.keys()
        for key in ("map", "bic", "bicp", "cs", "cs_dagger"):
            # EM: the same arithmetic, so the same restart is kept even among ties
            assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-9), (code, key)
        for key in ("d", "em_iter", "vb_converged", "vb_iter"):
            assert got[key] == want[key], (code, key)
        # the estimator runs the same compiled VBEM
        assert got["vb"] == want["vb"], code
        assert got["ln_S"] == pytest.approx(want["ln_S"], rel=1e-14)


def test_compiled_vbem_respects_max_iter_and_keeps_the_best_restart():
    X = draw_data(0, 1, 200, 200)
    U, w = _patterns(X)
    data, est = _fit_data((1, 3, 3, 2), U, w)
    starts = _starts(est, data, 3, 3)
    singles = [_vbem(data, starts[i:i + 1], 7, 1e-9) for i in range(3)]
    for bound, n_iter, converged, alpha in singles:
        assert n_iter == 7 and not converged and np.isfinite(bound)
        assert np.all(alpha >= data.prior)  # prior plus expected counts
        assert alpha[:2].sum() == pytest.approx(2.0 + 200)  # the root s1 counts every case
    bound, n_iter, converged, alpha = _vbem(data, starts, 7, 1e-9)
    assert bound == max(s[0] for s in singles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = VBDiscreteDAG(*bipartite_structure((1, 3, 3, 2)), n_init=3, max_iter=7, tol=1e-9,
                            random_state=3, bound_check="raise").fit(U, sample_weight=w)
    assert bound == pytest.approx(ref.lower_bound_, rel=1e-10)
    assert np.allclose(alpha, np.concatenate([p.ravel() for p in ref.posterior_]), rtol=1e-8)


def test_patterns_are_numpys_distinct_rows_with_counts():
    X = draw_data(0, 4, 3000, 3000)
    for data in (X, X[:7], X.astype(float), np.array([[2, 0], [-1, 3], [2, 0]])):
        U, w = _patterns(data)
        U_ref, w_ref = np.unique(data, axis=0, return_counts=True)
        np.testing.assert_array_equal(U, U_ref)
        assert U.dtype == U_ref.dtype
        np.testing.assert_array_equal(w, w_ref)
