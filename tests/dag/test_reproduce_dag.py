"""``reproduce dag``: a reduced quick mode of the single instance and of the multi-draw
study, checked number by number."""

import warnings

import numpy as np
import pytest

from sklearn_vb import VBDiscreteDAG, reproduce
from sklearn_vb.datasets import bipartite_structure
from sklearn_vb.reproduce._dag_units import draw_data, n_connected_hidden
from sklearn_vb.reproduce.dag import CODES, I_TRUE, TRUE, score_columns

N = 8  # small enough for the exact evidence by enumeration


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("dag")
    return reproduce.dag(quick=True, sizes=[N], n_init=1, ais_temperatures=32, verbose=0,
                         out=out, extras=1)


def test_table_6_1_ranks_are_ranks(single):
    t = single.summary["table_6_1"]
    assert sorted(t) == [N]
    for n, row in t.items():
        for col in ("MAP", "BIC*", "BICp*", "CS*", "CS†*", "VB*", "BIC", "BICp", "CS", "CS†",
                    "VB", "AIS(5)", "AIS#1", "AIS#5", "VBu", "VBcs"):
            assert isinstance(row[col], int) and 1 <= row[col] <= 136, (n, col, row[col])
        # the rank is 1 + the number of strictly higher scores
        cols = score_columns(single.results, "beal", n, extras=True)
        for col, v in cols.items():
            assert row[col] == 1 + int(np.sum(v > v[I_TRUE]))
            assert single.summary["score_gap"][n][col] == pytest.approx(v[I_TRUE] - v.max())
            assert single.summary["score_gap"][n][col] <= 0


def test_scores_obey_their_identities(single):
    for n in (N,):
        for code in CODES:
            f = single.results[("beal", n, code, "fit")]
            c = tuple(int(ch) for ch in code)
            # uniform prior: BICp - BIC = sum over observed rows of ln Gamma(5) = ln 24 / 4 (d - 2)
            assert f["bicp"] - f["bic"] == pytest.approx(np.log(24) / 4 * (f["d"] - 2), abs=1e-9)
            assert f["cs_dagger"] - f["cs"] == pytest.approx(0.5 * n_connected_hidden(c) * np.log(n))
            assert f["bic"] == pytest.approx(f["map"] - 0.5 * f["d"] * np.log(n))
            # CS-seeded VB is at least CS (Beal's Corollary 2.5); no cap can only help
            assert f["vb_from_cs"] >= f["cs"] - 1e-8
            assert f["vb_uncapped"] >= f["vb"] - 1e-8
            a = single.results[("beal", n, code, "ais32")]
            assert np.all(np.isfinite(a["ais_runs"])) and np.isfinite(a["ais"])
            # AIS^(5) pools the runs in the probability domain
            runs = np.asarray(a["ais_runs"])
            assert a["ais"] == pytest.approx(np.log(np.mean(np.exp(runs - runs.max()))) + runs.max())
            assert 0 <= a["acceptance"] <= 1


def test_bounds_below_the_exact_evidence(single):
    X = draw_data(0, "beal", N, 480)
    assert X.shape == (N, 4)
    for code in (TRUE, "3333", "0001"):
        f = single.results[("beal", N, code, "fit")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = VBDiscreteDAG(*bipartite_structure(tuple(int(c) for c in code)), n_init=1,
                                max_iter=1, random_state=0, bound_check="off").fit(X)
        exact = est.exact_log_evidence(X)
        assert f["vb"] <= exact + 1e-9 and f["cs"] <= exact + 1e-9
        assert f["vb_from_cs"] <= exact + 1e-9
        # the likelihood at the ML point is above the evidence when EM finds the maximum
        # (not guaranteed from one restart, but true here by a wide margin)
        assert f["map"] >= exact


def test_report_has_the_thesis_numbers_and_figures(single):
    text = single.report
    assert "Table 6.1" in text and "| 10 |" not in text  # only our sizes are listed
    # the thesis has no n = 8: its cells are dashes
    row = [line for line in text.splitlines() if line.startswith(f"| {N} |")][0]
    assert row.count("/ –") == 10
    assert "Table 6.3" in text and "Table 6.4" in text
    ais = single.summary["ais"][N]
    assert 0 <= ais["rejection"] <= 100 and len(ais["acceptance_by_quarter"]) == 4
    for name in ("dag.md", "dag_fig6_2.png", "dag_fig6_4.png", "dag_fig6_11_12.png",
                 "dag_summary.json"):
        assert (single.out / name).stat().st_size > 0


def test_draws_study_tables(tmp_path):
    run = reproduce.dag(quick=True, draws=2, sizes=[N], n_init=1, verbose=0, out=tmp_path)
    s = run.summary
    assert s["mode"] == "draws" and s["draws"] == 2
    assert len(run.results) == 2 * 136  # no AIS in the multi-draw study
    for col, row in s["table_6_2"].items():
        assert row["worse"] + row["same"] + row["better"] == pytest.approx(100.0)
    ranks = {k: np.asarray(v) for k, v in s["ranks"].items()}
    vb, bic = ranks["VB"], ranks["BIC"]
    assert s["table_6_2"]["BIC"]["better"] == pytest.approx(100 * np.mean(vb < bic))
    assert s["table_6_5"][N]["VB"] == int(np.sum(vb[:, 0] == 1))
    assert s["best_rank"]["CS"] == ranks["CS"].min(axis=0).tolist()
    # different draws are different data sets
    assert not np.array_equal(draw_data(0, 0, 50, N), draw_data(0, 1, 50, N))
    assert "Table 6.2" in run.report and "Table 6.5" in run.report
    for name in ("dag_fig6_5.png", "dag_fig6_9.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_map_score_is_the_likelihood_at_the_em_point():
    from sklearn_vb.scoring import score, scoring_model_for

    X = draw_data(0, "beal", N, 480)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = VBDiscreteDAG(*bipartite_structure((1, 3, 3, 2)), n_init=2, random_state=0,
                            bound_check="off").fit(X)
        r = score(est, X, "map", basis="natural", n_init=5, random_state=0)
        bic = score(est, X, "bic_map", random_state=1)
        m = score(est, X, "map", random_state=1)  # the same EM as BIC-MAP's
    model = scoring_model_for(est)
    theta = r.diagnostics["theta"]
    assert r.log_evidence == pytest.approx(float(model.log_likelihood(theta, model.prepare_data(X))[0]))
    assert r.log_evidence >= est.exact_log_evidence(X)  # eq. 6.63 at the ML point
    assert m.log_evidence == pytest.approx(bic.diagnostics["loglik"])
    assert bic.log_evidence == pytest.approx(m.log_evidence - 0.5 * 50 * np.log(N))
    with pytest.raises(ValueError, match="estimate"):
        score(est, X, "map", estimate="mode")


def test_fits_on_distinct_rows_with_counts_equal_fits_on_the_data():
    from sklearn_vb.reproduce._dag_units import _fit, fit_scores

    X = draw_data(0, 0, 60, 60)
    f = fit_scores((1, 3, 3, 2), X, 5, n_init=2)
    vb = _fit((1, 3, 3, 2), X, "vb", 5, 2, 1000, 1e-6)
    em = _fit((1, 3, 3, 2), X, "map", 5, 2, 1000, 1e-6, map_basis="natural")  # eq. 6.23
    assert f["vb"] == pytest.approx(vb.lower_bound_, abs=1e-8)
    assert f["cs"] == pytest.approx(em.lower_bound_, abs=1e-8)
    assert f["map"] == pytest.approx(em.log_likelihood_, abs=1e-8)
