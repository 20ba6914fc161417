"""``reproduce vmcmc``: a reduced quick mode, checked against what must hold."""

import numpy as np
import pytest

from sklearn_vb import reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.vmcmc(quick=True, parents=[1, 4], n=200, repeats=2, n_mcmc=[400],
                           bimodal_n_mcmc=1000, bimodal_repeats=1, verbose=0,
                           out=tmp_path_factory.mktemp("vmcmc"))


def test_relative_loglik_table(run):
    rel = run.summary["relative_loglik"][400]
    assert set(rel) == {1, 4}
    for p, row in rel.items():
        assert row["random_walk"]["mean"] == 0.0
        for m in ("vb", "block", "mixture", "vb_batch"):
            assert np.isfinite(row[m]["mean"])
        # the batch VB's mean is a better estimate than a short random walk's
        assert row["vb_batch"]["mean"] > -1.0
    # the sequential VB's q is a feasible point of the batch objective: never above it
    for b in run.summary["vb_bounds"].values():
        assert b["sequential"] <= b["batch"] + 1e-6
    secs = run.summary["seconds"][400]
    assert all(v > 0 for row in secs.values() for v in row.values())
    assert run.summary["parents_done"] == [1, 4] and run.summary["parents_missing"] == []


def test_report_only_covers_the_finished_parents(run, tmp_path):
    # a longer run on the same journal: the report names what is missing, computes nothing
    import shutil

    shutil.copytree(run.out / "cache", tmp_path / "cache")
    partial = reproduce.vmcmc(quick=True, parents=[1, 4, 7], n=200, repeats=2, n_mcmc=[400],
                              bimodal_n_mcmc=1000, bimodal_repeats=1, verbose=0,
                              out=tmp_path, report_only=True)
    assert partial.summary["parents_done"] == [1, 4]
    assert partial.summary["parents_missing"] == [7]
    assert partial.summary["timing"]["computed"] == 0
    assert "not yet run: 7" in partial.report
    assert partial.summary["relative_loglik"] == run.summary["relative_loglik"]


def test_report(run):
    assert "relative" in run.report.lower() and "Table 1" in run.report
    assert "vmcmc_relative_400.png" in run.report
    assert "Beside the paper" in run.report and "Acceptance rates" in run.report


def test_bimodal_modes_and_moments(run):
    bi = run.summary["bimodal"]
    ex = bi["exact"]
    # the exact posterior has two modes, both with real mass, summing to one
    assert len(ex["mode_mass"]) == 2 and min(ex["mode_mass"]) > 0.02
    assert abs(sum(ex["mode_mass"]) - 1.0) < 1e-9 or ex["n_basins"] > 2
    # the hidden parent's weight: the modes lie on either side of zero
    (a, _), (b, _) = ex["mode_location"]
    assert a * b < 0
    # q sits in one mode and under-estimates the spread of w_h
    assert bi["q_summary"]["variance"][0] < ex["variance"][0]
    ind, reg = bi["samplers"]["independence"], bi["samplers"]["regeneration"]
    # the independence sampler with q never leaves q's mode
    assert min(ind["mode_mass"]["mean"]) < 0.01
    assert ind["variance"]["mean"][0] < 0.5 * ex["variance"][0]
    # refitting q at regeneration times corrects its under-estimated variance
    assert reg["variance"]["mean"][0] > 2 * ind["variance"]["mean"][0]
    for row in bi["samplers"].values():
        assert abs(sum(row["mode_mass"]["mean"]) - 1.0) < 1e-9 or ex["n_basins"] > 2
        assert np.all(np.isfinite(row["kurtosis"]["mean"]))
    assert "vmcmc_bimodal.png" in run.report and "Fig. 16" in run.report
    # Fig. 5: the widest proposal is rejected most often
    f5 = bi["fig5"]
    acc = [f5[s]["acceptance"]["random_walk"] for s in sorted(f5, key=float)]
    assert len(acc) == 3 and acc[-1] < acc[0]
    assert "vmcmc_fig5.png" in run.report


def test_fig11(run):
    f = run.summary["fig11"]
    assert len(f["loglik"]) == 4 and len(f["argmax"]) == 4
    # 1000 cases put the maximiser near the generating weight 1, not on it exactly
    assert all(abs(a - 1.0) < 0.5 for a in f["argmax"])
    assert "vmcmc_fig11.png" in run.report
