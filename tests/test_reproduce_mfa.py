"""``reproduce mfa`` quick mode: Beal (2003) Chapter 4 on small problems, checked number
by number (components found on well-separated clusters, the BIC-ML baseline, importance
sampling finite with its diagnostics, the report and figures)."""

import numpy as np
import pytest

from sklearn_vb import reproduce
from sklearn_vb.datasets import make_embedded_clusters, make_grid_clusters, make_spaced_clusters
from sklearn_vb.mfa import fa_free_parameters
from sklearn_vb.reproduce._mfa_digits import cluster_accuracy
from sklearn_vb.reproduce._mfa_synthetic import cluster_dimensions


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.mfa(quick=True, out=tmp_path_factory.mktemp("mfa"), verbose=0)


def test_generators_follow_the_thesis_protocols():
    X, labels = make_embedded_clusters(32, random_state=0)
    assert X.shape == (192, 10) and np.bincount(labels).tolist() == [32] * 6
    for c, d in enumerate((7, 4, 3, 2, 2, 1)):
        # intrinsic dimension d plus noise .01: d eigenvalues near 1, the rest near .01
        ev = np.linalg.eigvalsh(np.cov(X[labels == c].T))[::-1]
        assert np.all(ev[d:] < 0.05) and ev[d - 1] > 0.2
    X, labels = make_grid_clusters(20, random_state=0)
    assert X.shape == (360, 2) and labels.max() == 17
    X, labels = make_spaced_clusters(4000, spacing=3.0, random_state=0)
    centres = np.array([X[labels == c].mean(0) for c in range(4)])
    assert np.linalg.norm(centres[1] - centres[0]) == pytest.approx(3.03, abs=0.1)
    assert np.allclose(np.cov(X[labels == 0].T), np.eye(2), atol=0.15)


def test_helpers_against_hand_counts():
    # analyser 0 takes clusters 0 and 1 (a "box"), analyser 1 takes the rest
    counts = np.array([[30, 25, 0, 1, 0, 0], [2, 7, 32, 31, 32, 32]])
    dims = cluster_dimensions(counts, [3, 2])
    assert [c["found"] for c in dims] == [3, 3, 2, 2, 2, 2]
    assert all(c["shared"] for c in dims)
    tr, te, conf_tr, conf_te = cluster_accuracy(np.array([0, 0, 1, 1, 1]),
                                                np.array([3, 3, 5, 3, 5]),
                                                np.array([1, 0]), np.array([5, 5]), 2)
    assert (tr, te) == (0.8, 0.5)
    assert conf_tr[3, 3] == 2 and conf_tr[3, 5] == 1 and conf_te[5, 3] == 1
    assert fa_free_parameters([1, 2], 3) == 18  # thesis eq. 4.89 example


def test_search_finds_the_components_of_well_separated_clusters(run):
    # 18 clusters, 20 points each, from one analyser.  The search on main stops in a
    # local optimum of the shared-noise model here (7 analysers, several clusters
    # each): the check pins what it finds so that a change shows up
    r = run.summary["clusters"][20][0]
    assert 2 <= r["n_components"] <= 18 and r["births_accepted"] >= r["n_components"] - 1
    assert r["ari"] > 0.3
    assert len(r["means"]) == r["n_components"] and np.all(np.diff(r["trace"]["bound"]) > -1e3)
    assert 1 <= run.summary["is_clusters"][4.0]["search_components"] <= 8
    emb = run.summary["embedded"][16][0]
    assert emb["n_components"] >= 1 and len(emb["per_cluster"]) == 6
    assert np.sum(emb["counts"]) == 6 * 16


def test_bic_ml_baseline_and_vb_classify_digits(run):
    row = run.summary["classification"][30]
    for m in ("vb", "ml"):
        # ten one-class models classify 500 held-out digits far above chance (10 %)
        assert row[m]["mean"] > 70.0
        assert len(row[m]["components_per_class"]) == 10
    grid = run.results[("classify", "ml", 30, 0, 0)]["bic_grid"]
    assert len(grid) == 2 and all(np.isfinite(g[2]) for g in grid)
    # the kept ML model is the BIC minimiser of its grid
    best = min(grid, key=lambda g: g[2])
    assert run.results[("classify", "ml", 30, 0, 0)]["n_components"] == best[0]


def test_importance_sampling_is_finite_with_diagnostics(run):
    r = run.summary["is_clusters"][4.0]
    assert set(r["samplers"]) == {"1", "2", "3", "4", "5", "6"}
    assert r["F_best"] >= r["F"] - 1e-9
    assert r["F_best"] == pytest.approx(max(r["restart_bounds"]))
    for v in r["samplers"].values():
        assert np.isfinite(v["log_evidence"]) and v["stderr"] >= 0
        assert 0 < v["ess_fraction"] <= 1 and 0 < v["max_normalised_weight"] <= 1
        # ln p̂ >= mean log weight (Jensen), so the estimated KL is non-negative
        assert v["kl_theta"] >= -1e-9
        assert v["log_evidence"] > r["F"] - 5.0
    for S, d in run.summary["is_digits"].items():
        assert np.isfinite(d["log_evidence"]) and d["gap_params"] >= -1e-9
        assert d["n_components"] == S


def test_report_and_figures_are_written(run):
    for text in ("§4.5.1", "Table 4.1", "Table 4.2", "Table 4.3", "Fig 4.13"):
        assert text in run.report
    for name in ("mfa.md", "mfa_fig4_3_clusters.png", "mfa_table4_2_digits.png",
                 "mfa_fig4_14_is.png", "mfa_fig4_13_gaps.png"):
        assert (run.out / name).exists()
