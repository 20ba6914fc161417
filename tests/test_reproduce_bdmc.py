"""``reproduce bdmc``: a reduced quick mode, checked against what must hold."""

import numpy as np
import pytest

from sklearn_vb import reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.bdmc(
        quick=True, n_samples=10, n_features=4, truth_K=300, trials=1, cross_K=40,
        budgets={"ais": [10, 300], "rais": [300], "smc": [16], "shme": [16],
                 "nested_sampling": [5], "cms": [20], "hme": [50], "lw": [50], "vb": [2],
                 "bic": [0]},
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


def test_report_and_cross_table(run):
    cross = run.summary["cross"]
    assert set(cross) == {"clustering", "low_rank", "binary"}
    for d in cross:
        assert all(np.isfinite(v) for v in cross[d].values())
    assert "Table 1" in run.report and "BDMC" in run.report
    assert "bdmc_clustering.png" in run.report
