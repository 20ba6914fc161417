"""``reproduce lds`` quick mode, §5.5 part: VB, MAP and ML LDS with output feedback on
the simulated gene-expression stand-in (34 sequences x 10 steps x 88 outputs), checked
number by number, and the simulator and feedback construction against their definitions."""

import numpy as np
import pytest

from sklearn_vb import reproduce
from sklearn_vb.reproduce._lds_gene import (feedback_design, gene_system,
                                            simulate_gene_sequences)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.lds(quick=True, sections="gene", out=tmp_path_factory.mktemp("gene"),
                         verbose=0)


@pytest.fixture(scope="module")
def config():
    return reproduce.get_experiment("lds").config(quick=True) | {"seed": 0}


def test_true_system_has_the_announced_sparse_stable_feedback(config):
    system = gene_system(config)
    D, support = system["D"], system["support"]
    assert D.shape == (88, 88)
    assert support.sum() == config["gene_regulators"] * config["gene_targets"]
    assert support.any(axis=0).sum() == config["gene_regulators"]
    assert not np.any(np.diag(support))  # a regulator never acts on itself
    assert np.max(np.abs(np.linalg.eigvals(D))) <= 0.7 + 1e-12
    # d0 = (I - D) 1 makes 1 the stationary mean of every gene: (I - D)^-1 d0 = 1
    assert np.allclose(np.linalg.solve(np.eye(88) - D, system["d0"]), 1.0)
    assert gene_system(config)["C"] == pytest.approx(system["C"])  # a function of the seed


def test_simulated_sequences_have_the_stationary_mean_and_the_noise_of_the_system(config):
    system = gene_system(config)
    Y = simulate_gene_sequences(system, 2000, 10, np.random.default_rng(1))
    assert Y.shape == (2000, 10, 88)
    # stationary mean 1 per gene (standard error of a gene's mean here is about 0.01)
    assert np.abs(Y.mean(axis=(0, 1)) - 1.0).max() < 0.05
    # the residual of y_t given the true states is not observable here, but that of the
    # feedback regression given y_{t-1} has at least the noise variance of every gene
    X, U, _ = feedback_design(Y)
    resid = X - U @ system["D"].T - system["d0"]
    assert np.all(resid.var(axis=0) > system["noise_sd"] ** 2)


def test_feedback_design_uses_the_first_observation_only_as_input():
    Y = np.arange(2 * 4 * 3, dtype=float).reshape(2, 4, 3)
    X, U, lengths = feedback_design(Y)
    assert lengths == [3, 3]
    np.testing.assert_array_equal(X, np.concatenate([Y[0, 1:], Y[1, 1:]]))
    np.testing.assert_array_equal(U, np.concatenate([Y[0, :-1], Y[1, :-1]]))


def test_errors_are_finite_and_vb_generalises_best(run):
    g = run.summary["gene"]
    assert g["k"] == [2, 6]
    for name in ("train_recon", "test_recon", "fresh_recon", "train_pred", "test_pred",
                 "fresh_pred"):
        for m in ("vb", "map", "ml"):
            v = np.asarray(g[name][m])
            assert np.all(np.isfinite(v)) and np.all(v > 0)
            # the rise to the largest k is measured from the smallest error over k
            assert g["rise_at_largest_k"][name][m] == pytest.approx(v[-1] - v.min())
    for i in range(2):
        # the point estimates fit the training sequences more closely than VB ...
        assert g["train_recon"]["ml"][i] < g["train_recon"]["vb"][i]
        assert g["train_recon"]["map"][i] < g["train_recon"]["vb"][i]
        # ... and do worse on new sequences (Beal 2003, Fig 5.11)
        for name in ("test_recon", "fresh_recon", "fresh_pred"):
            assert g[name]["vb"][i] < g[name]["ml"][i]
    # the reconstruction uses y_t through the smoothed state, the prediction does not
    assert np.all(np.asarray(g["fresh_recon"]["vb"]) < np.asarray(g["fresh_pred"]["vb"]))


def test_vb_finds_the_support_of_d_and_keeps_valid_states(run):
    g = run.summary["gene"]
    for i, k in enumerate(g["k"]):
        assert g["auc_abs"]["vb"][i] > 0.9          # chance is 0.5
        assert g["vb_auc_z"][i] > 0.9
        assert g["vb_column_auc_delta"][i] > 0.9   # ARD ranks the regulator genes first
        assert g["auc_abs"]["vb"][i] > g["auc_abs"]["ml"][i]
        assert 0 < g["vb_true_positives"][i] <= min(g["vb_n_selected"][i],
                                                    g["n_true_interactions"])
        n_false = g["vb_n_selected"][i] - g["vb_true_positives"][i]
        assert 0 <= g["vb_false_in_regulator_columns"][i] <= n_false
        for kept in g["vb_states_kept"][k]:
            assert 1 <= kept <= k
    for key, r in run.results.items():
        if key[2] == "vb":  # one ARD precision of A per kept state
            assert len(r["alpha"]) == r["states_kept"]
            assert np.all(np.asarray(r["alpha"]) > 0)
    # the shown matrices are the first data set's k = 2 fits
    shown = g["shown"]
    assert np.asarray(shown["vb"]["D"]).shape == (88, 88)
    assert np.all(np.asarray(shown["vb"]["D_sd"]) > 0)


def test_report_figures_and_section_choice(run):
    assert "## §5.5" in run.report and "## §5.4.1" not in run.report
    for name in ("lds_fig5_11_gene_errors.png", "lds_fig5_12_gene_interactions.png",
                 "lds.md"):
        assert (run.out / name).exists()
    with pytest.raises(ValueError, match="sections"):
        reproduce.lds(quick=True, sections="genes", verbose=0)
