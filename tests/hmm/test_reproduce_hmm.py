"""``reproduce hmm`` quick mode: Beal (2003) §3.5.1 with two random starts, checked
number by number."""

import numpy as np
import pytest

from sklearn_vb import reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.hmm(quick=True, out=tmp_path_factory.mktemp("hmm"), verbose=0,
                         sections="structure")


def test_ml_uses_every_state_and_vb_keeps_about_seven(run):
    med = run.summary["median"]
    assert med["ml_states_used"] >= 10
    assert 5 <= med["vb_states_kept"] <= 8
    assert med["vb_iterations"] < med["ml_iterations"]
    counts = run.summary["states_kept_counts"]
    assert sum(counts["ml"]) == sum(counts["vb_from_ml"]) == len(run.summary["per_start"]) == 2


def test_each_start_is_consistent(run):
    for key, r in run.results.items():
        ml, vb = r["ml"], r["vb_from_ml"]
        # EM never lowers the likelihood, VBEM never lowers the bound
        assert np.all(np.diff(ml["trace"]) >= -1e-7)
        assert np.all(np.diff(vb["trace"]) >= -1e-7)
        assert ml["trace"][-1] == pytest.approx(ml["log_likelihood"])
        assert vb["trace"][-1] == pytest.approx(vb["lower_bound"])
        # F <= ln p(Y) <= max over theta of ln p(Y | theta)
        assert vb["lower_bound"] < ml["log_likelihood"]
        assert ml["states_used"] == int(np.sum(np.array(ml["occupancy"]) >= 1.0))
        # the VB counts are the prior plus expected counts: every row sums above its prior
        assert np.all(np.array(vb["counts"]["transmat"]) > 0)
        assert np.sum(vb["occupancy"]) == pytest.approx(run.summary["n_symbols"])


def test_report_and_figures_are_written(run):
    assert "§3.5.1" in run.report and "| states kept by VB |" in run.report
    for name in ("hmm_fig3_2_traces.png", "hmm_fig3_3_hinton.png", "hmm.md"):
        assert (run.out / name).exists()
