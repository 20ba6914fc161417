"""``reproduce bdmc``: a reduced quick mode, checked against what must hold."""

import numpy as np
import pytest

from sklearn_vb import reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.bdmc(
        quick=True, n_samples=10, n_features=4, truth_K=300, trials=2, cross_K=40,
        cross_hyper_K=100,
        budgets={"ais": [10, 300], "rais": [300], "smc": [16], "smc_paper": [1, 8],
                 "shme": [16], "nested_sampling": [5], "cms": [20], "hme": [50], "lw": [50],
                 "vb": [2], "bic": [0]},
        verbose=0, out=tmp_path_factory.mktemp("bdmc"))


def test_ground_truth_and_negative_controls(run):
    for m, t in run.summary["truth"].items():
        # forward and reverse joint AIS agree within a nat: the truth
        assert abs(t["gap"]) < 1.0
        per = run.summary["methods"][m]
        truth = t["truth"]
        # VB is a lower bound; the harmonic mean over-, likelihood weighting under-estimates
        assert per["vb"][0]["mean"] < truth + 0.5
        assert per["hme"][0]["bias"] > 0
        assert per["lw"][0]["bias"] < 0
        # a longer AIS schedule is closer
        assert per["ais"][1]["rmse"] < per["ais"][0]["rmse"] + 0.5
        assert per["vb_sym"][0]["mean"] == pytest.approx(per["vb"][0]["mean"] + t["log_symmetry"])
        # the paper's one-particle SMC is a stochastic lower bound: not far above the truth
        assert all(r["mean"] < truth + 3.0 for r in per["smc_paper"])
        # pooling: the mean of Z is at least the mean of the logs, the harmonic mean of
        # the reverse estimator at most; VB pools to its best trial
        for r in per["ais"]:
            assert r["pooled"] >= r["mean"] - 1e-9
        for r in per["rais"]:
            assert r["pooled"] <= r["mean"] + 1e-9
        assert per["vb"][0]["pooled"] >= per["vb"][0]["mean"] - 1e-9
        assert all(r["pooled_error"] == pytest.approx(r["pooled"] - truth)
                   for rows in per.values() for r in rows)
        # VB from the simulating latents is a lower bound too
        assert run.summary["hint"][m]["vb"] < truth + 0.5


def test_report_and_cross_table(run):
    cross = run.summary["cross"]
    assert set(cross) == {"clustering", "low_rank", "binary"}
    for d in cross:
        assert all(np.isfinite(v) for v in cross[d].values())
        assert all(np.isfinite(r["ais"]) and len(r["chains"]) == run.config["cross_chains"]
                   for r in run.summary["cross_hyper"][d].values())
    assert "Table 1" in run.report and "BDMC" in run.report
    assert "bdmc_clustering.png" in run.report
    assert "SMC-1" in run.report and "VB from a hint" in run.report
    assert "pooled" in run.report


@pytest.fixture(scope="module")
def package_run(tmp_path_factory):
    return reproduce.bdmc(
        quick=True, package_models=1,
        package_sizes=[20],
        package={"models": ["hmm_categorical", "hmm_gaussian", "mfa", "lds", "dag"],
                 "truth_K_grid": [300], "truth_chains": 4,
                 "ais_options": {"n_temperatures": 100, "n_chains": 4}},
        verbose=0, out=tmp_path_factory.mktemp("bdmc_package"))


def test_package_models_sandwich_and_vb_below_the_truth(package_run):
    cases = package_run.summary["cases"]
    assert {c["model"] for c in cases} == {"hmm_categorical", "hmm_gaussian", "mfa", "lds",
                                           "dag"}
    for c in cases:
        t = c["truth"]
        se = np.hypot(t["stderr_lower"], t["stderr_upper"])
        assert np.isfinite([t["lower"], t["upper"], se]).all()
        # forward AIS is a stochastic lower, reverse AIS an upper bound on the same number
        assert t["lower"] <= t["upper"] + 1.0 + 3 * se, c["model"]
        # the grid stops at the first K whose gap is under a nat in size
        assert [h["K"] for h in t["history"]] == [300][:len(t["history"])]
        assert t["converged"] == (abs(t["gap"]) < 1.0)
        g = c["gaps"]
        # only the mixture of factor analysers re-derives its hyperparameters in a refit
        assert c["same_model"] == (c["model"] != "mfa")
        if g["vb"]["same_model"]:
            # VB is a lower bound on ln p(Y) of the model the truth is computed for
            assert g["vb"]["gap"] <= 3 * se / 2, c["model"]
        assert g["vb_alias"]["gap"] == pytest.approx(g["vb"]["gap"] + c["log_aliases"])
        for key, v in g.items():
            # a score is finite unless the model does not offer it (the reason is kept)
            assert np.isfinite(v["gap"]) or key in c["errors"], (c["model"], key)
        for key in ("vb", "bic", "cs", "is", "ais"):
            assert np.isfinite(g[key]["gap"]), (c["model"], key)


def test_package_report(package_run):
    rep = package_run.report
    assert "bdmc_package.png" in rep and "VB − truth" in rep
    assert (package_run.out / "bdmc_package.png").exists()
