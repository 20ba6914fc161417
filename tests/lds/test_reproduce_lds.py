"""``reproduce lds`` quick mode: Beal (2003) §5.4.1 at two sequence lengths, the
VB / MAP / ML comparison at three state dimensions and the hyperparameter and bound
traces of Figs. 5.5, 5.7 and 5.8, checked number by number."""

import numpy as np
import pytest

from sklearn_vb import reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.lds(quick=True, sections="dimension,compare,inputs,traces",
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


def test_off_iteration_is_where_a_precision_stays_switched_off():
    from sklearn_vb.reproduce._lds_traces import _off_iteration

    assert _off_iteration([1.0, 5e3, 2.0, 2e3, 1e8]) == 4  # iterations are 1-based
    assert _off_iteration([1.0, 2e3, np.nan, np.nan]) == 2  # removed counts as off
    assert _off_iteration([2e3, 1e8]) == 1
    assert _off_iteration([1.0, 2e3, 1.0]) is None


def test_traces_of_figs_5_5_to_5_8(run):
    cfg = run.config
    s = run.summary["traces"]
    T = max(cfg["lengths"])
    assert s["T"] == T
    for variant in ("as_fitted", "thesis_updates"):
        dim, inp = s["dimension_traces"][variant], s["input_traces"][variant]
        # one record per VBEM iteration, in the original state labels
        assert np.shape(dim["alpha"]) == np.shape(dim["gamma"]) == (cfg["max_iter"], 10)
        assert len(dim["bound"]) == cfg["max_iter"]
        assert np.shape(inp["beta"]) == np.shape(inp["delta"]) == (cfg["input_max_iter"], 3)
        # the input fits keep the thesis's schedule: every precision is at its initial 1
        # until alpha and beta are first updated after iteration 10, gamma after 20
        alpha, gamma = np.asarray(inp["alpha"]), np.asarray(inp["gamma"])
        assert np.all(alpha[:10] == 1.0) and np.any(alpha[10] != 1.0)
        assert np.all(gamma[:20] == 1.0) and np.any(gamma[20] != 1.0)
        b = s["bound"][variant]
        F = np.asarray(inp["bound"])
        assert b["min_gain"] == pytest.approx(np.diff(F).min())
        assert b["min_gain"] > -1e-6 * abs(F[-1])  # VBEM never lowers the bound
        # switching each hyperparameter group on raises the gain per iteration
        assert set(b["jumps"]) == {10, 20, 30} and all(v > 1 for v in b["jumps"].values())
        d = s["dimension"][variant]
        assert d["n_extinct"] + d["n_kept"] == 10
        # D's noise column is switched off, its first two columns are not
        offs = s["switch_offs"][variant]
        assert offs["delta"][2] is not None and offs["delta"][:2] == [None, None]
    # the thesis-update refit optimises every hyperparameter from the first iteration
    # that has a q(theta) to optimise them for (the second)
    fp = np.asarray(s["dimension_traces"]["thesis_updates"]["alpha"])
    assert np.all(fp[0] == 1.0) and np.all(fp[1] != 1.0)
    text = run.report
    assert "Fig. 5.5" in text and "Fig. 5.7" in text and "not run" not in text
    for name in ("lds_fig5_5_hyper_traces.png", "lds_fig5_7_bound.png", "lds_fig5_8_traces.png"):
        assert (run.out / name).stat().st_size > 0
