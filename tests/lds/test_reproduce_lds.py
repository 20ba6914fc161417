"""``reproduce lds`` quick mode: Beal (2003) §5.4.1 at two sequence lengths and the
VB / MAP / ML comparison at three state dimensions, checked number by number."""

import numpy as np
import pytest

from sklearn_vb import reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.lds(quick=True, sections="dimension,compare,inputs",
                         out=tmp_path_factory.mktemp("lds"), verbose=0)


def test_ard_recovers_the_true_dimension_once_the_sequence_is_long(run):
    rec = run.summary["recovered_dimension"]
    assert rec[200] == 6
    assert rec[20] < rec[200]
    for T, fit in run.summary["dimension_fits"].items():
        # the kept dimensions are those with the smallest ARD precisions on C
        assert np.all(np.diff(fit["gamma"]) >= 0)
        assert len(fit["gamma"]) == 10


def test_point_estimates_overfit_as_k_grows_and_vb_does_not(run):
    mse = run.summary["test_mse"]
    rise = run.summary["mse_rise_at_largest_k"]
    assert rise["vb"] < rise["ml"] and rise["vb"] < rise["map"]
    assert rise["vb"] < 0.5
    for m in ("vb", "map", "ml"):
        assert rise[m] == pytest.approx(mse[m][-1] - min(mse[m]))
        # too few states (k = 2 < 6) predict worse than enough states, for every method
        assert mse[m][0] > min(mse[m][1:])
    # ML maximises the training likelihood: its objective is above MAP's likelihood term
    for k in (2, 6, 10):
        assert np.isfinite(run.results[("compare", k, "ml")]["train_objective"])


def test_report_and_figures_are_written(run):
    assert "§5.4.1" in run.report
    for name in ("lds_fig5_4_hinton.png", "lds_compare_k.png", "lds.md"):
        assert (run.out / name).exists()


def test_input_driven_ard_keeps_two_states_and_drops_the_noise_input_of_d(run):
    # Beal (2003) §5.4.2 on one data set: k = 2 states of the k = 4 fitted, D's third
    # (noise) column switched off by orders of magnitude while the first two stay
    inputs = run.summary["inputs"]
    (fit,) = inputs["fits"]
    assert fit["n_effective"] == 2
    delta = np.asarray(fit["delta"])
    assert delta[2] > 1e4 * delta[:2].max()
    assert inputs["findings"][0]["D3_off_D12_kept"]
    assert (run.out / "lds_fig5_8_precisions.png").exists()
    assert "§5.4.2" in run.report
