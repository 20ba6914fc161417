"""``reproduce mfa`` quick mode: Beal (2003) Chapter 4 on small problems, checked number
by number (components found on well-separated clusters, the BIC-ML baseline, importance
sampling finite with its diagnostics, the report and figures)."""

import numpy as np
import pytest

from sklearn_vb import reproduce
from sklearn_vb.datasets import make_embedded_clusters, make_grid_clusters, make_spaced_clusters
from sklearn_vb.mfa import fa_free_parameters
from sklearn_vb.reproduce._mfa_digits import cluster_accuracy
from sklearn_vb.reproduce._mfa_synthetic import VARIANTS, cluster_dimensions, clusters_unit


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
    # 6 of the 18 clusters, 20 points each, from one analyser, with the thesis's spatial
    # split and with the package default (responsibility split) on the same data
    assert set(run.summary["clusters"]) == {"spatial", "default"}
    assert set(run.summary["components_found"]) == {"spatial", "default"}
    for variant, by in run.summary["clusters"].items():
        r = by[20][0]
        found = run.summary["components_found"][variant][20]
        assert all(isinstance(c, int) and c >= 1 for c in found)
        # well separated: each split of the search finds about the 6 clusters
        assert 4 <= r["n_components"] <= 10 and r["ari"] > 0.6
        assert r["births_accepted"] >= r["n_components"] - 1 and r["converged"]
        assert len(r["means"]) == r["n_components"]
        assert np.all(np.diff(r["trace"]["bound"]) > -1e3)
    assert 1 <= run.summary["is_clusters"][4.0]["search_components"] <= 8
    for variant in ("spatial", "default"):
        emb = run.summary["embedded"][variant][16][0]
        assert emb["n_components"] >= 1 and len(emb["per_cluster"]) == 6 and emb["converged"]
        assert np.sum(emb["counts"]) == 6 * 16


def test_spatial_split_is_used_by_the_variant():
    # the unit builds the estimator with the variant's settings: the spatial split
    # places the children at mu +- d, so its search differs from the default's
    config = reproduce.get_experiment("mfa").config(quick=True)
    config["seed"] = 0
    a = clusters_unit(("clusters", 10, 0, "spatial"), config, 1)
    b = clusters_unit(("clusters", 10, 0, "default"), config, 1)
    assert a["trace"]["bound"] != b["trace"]["bound"]
    assert VARIANTS["spatial"][0] == {"split": "spatial"}
    assert "b*" in VARIANTS["spatial_fixed_b"][1]


def test_sections_and_variants_choose_the_units():
    from sklearn_vb.reproduce.mfa import _units

    exp = reproduce.get_experiment("mfa")
    config = exp.config(quick=False, sections="clusters")
    keys = _units(config)
    assert {k[0] for k in keys} == {"clusters"}
    assert len(keys) == 4 * 3 * 2  # variants x sizes x repetitions
    config = exp.config(quick=False, sections="spiral,embedded", synthetic_variants="spatial")
    keys = _units(config)
    assert {(k[0], k[-1]) for k in keys} == {("spiral", "spatial"), ("embedded", "spatial")}
    with pytest.raises(ValueError, match="sections"):
        _units(exp.config(quick=False, sections="clusters,nonsense"))
    with pytest.raises(ValueError, match="cluster_variants"):
        _units(exp.config(quick=False, cluster_variants="default,nope"))
    # the sections and variants settings are ignored when resuming a journal
    for name in ("sections", "cluster_variants", "synthetic_variants"):
        assert name in exp.resume_ignores


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


def test_ml_birth_search_is_the_table_4_2_baseline(run):
    row = run.summary["classification"][30]
    assert row["ml_search"]["mean"] > 70.0
    assert row["ml_search"]["n_searches"] == 10
    # every search returns the smallest-BIC model it passed through
    assert row["ml_search"]["bic_is_min"] == 10
    for d in range(10):
        u = run.results[("classify", "ml_search", 30, 0, d)]
        assert u["n_births_proposed"] >= 1  # the birth search ran
        assert u["bic"] <= u["min_bic_visited"] + 1e-9 * abs(u["min_bic_visited"])
        assert all(k == 5 for k in u["n_factors"])  # k = 5 in every analyser
    verdicts = run.report.split("## §4.5.1")[0]
    assert "ML MFA with k = 5 grown from one analyser" in verdicts
    assert "BIC ML MFA, birth search" in verdicts


def test_fig_4_12_trace_after_each_accepted_epoch(run):
    r = run.summary["search_trace"]
    pts = r["points"]
    assert len(pts) == r["n_births_accepted"] + 1  # each accepted epoch and the final fit
    its = [p["iteration"] for p in pts]
    assert its == sorted(its)
    for p in pts:
        assert np.isfinite(p["log_evidence"]) and 0 <= p["test_error"] <= 1
        # importance sampling from q: ln p̂ >= the mean log weight F(π, Λ̃) (Jensen)
        assert p["log_evidence"] >= p["param_bound"] - 1e-9
        if not p["final"]:
            assert abs(p["replay_gap"]) <= 1e-8 * abs(p["F"])  # the replay is the search
    assert "Fig 4.12" in run.report and (run.out / "mfa_fig4_12_search_is.png").exists()


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
    # §4.5.1 states both configurations' results beside the thesis's claim
    section = run.report.split("## §4.5.1")[1].split("## §4.5.2")[0]
    assert "| spatial split |" in section and "| package default |" in section
    assert "little difficulty finding the correct number" in section
    for variant in ("spatial", "default"):
        assert VARIANTS[variant][1] in section
    for name in ("mfa.md", "mfa_fig4_3_clusters.png", "mfa_table4_2_digits.png",
                 "mfa_fig4_14_is.png", "mfa_fig4_13_gaps.png"):
        assert (run.out / name).exists()


def test_clusters_report_states_every_configuration_beside_the_thesis():
    # hand-made units: two configurations on the same two data sets of 50 points per
    # cluster; a fit whose analysers kept no factor is marked, each result is put
    # beside the thesis's 18 in words
    from sklearn_vb.reproduce._mfa_report import _section_clusters, summarize

    def unit(S, factors, bound):
        return {"n_components": S, "n_factors": [factors] * S, "lower_bound": bound,
                "ari": 1.0, "means": [[0.0, 0.0]] * S,
                "covariances": [[[1.0, 0.0], [0.0, 1.0]]] * S,
                "trace": {"bound": [bound - 1, bound], "event": ["iter", "accept"]}}

    results = {("clusters", 50, 0, "spatial"): unit(18, 1, -3900.0),
               ("clusters", 50, 1, "spatial"): unit(18, 1, -3800.0),
               ("clusters", 50, 0, "default_fixed_b"): unit(18, 1, -3950.0),
               ("clusters", 50, 1, "default_fixed_b"): unit(33, 0, -4200.0)}
    config = reproduce.get_experiment("mfa").config(quick=False, sections="clusters")
    config["seed"] = 0
    summary = summarize(results, config)
    assert summary["components_found"] == {"spatial": {50: [18, 18]},
                                           "default_fixed_b": {50: [18, 33]}}
    text = _section_clusters(summary, config, None)
    assert "| spatial split | 18, 18 |" in text
    assert "| package default, b* = 1 | 18, 33° |" in text
    assert "| spatial split | -3900, -3800 |" in text
    assert f"{VARIANTS['spatial'][1]}: 18 and 18 (agrees)" in text
    assert f"{VARIANTS['default_fixed_b'][1]}: 18 and 33 (differs)" in text
    assert "little difficulty finding the correct number" in text
    assert "switched off" in text  # the mechanism, shown when a b* = 1 run is present
