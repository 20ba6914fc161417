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


def _oracle_incomplete_dimension(code, rng, h=1e-5):
    """The generic dimension of the map from a structure's CPTs to the distribution of
    (y1..y4) over all 5^4 configurations: the rank of its Jacobian (central differences
    in the row logits) at a random point.  Written out for the bipartite class alone
    (two binary hidden parents, four five-valued children), independently of the
    package's pattern tables and perturbation code."""
    n_par = [bin(c).count("1") for c in code]
    sizes = [2, 2] + [5 * 2 ** k for k in n_par]  # logits: p(s1), p(s2), then each child
    phi0 = rng.standard_normal(sum(sizes))

    def distribution(phi):
        parts = np.split(phi, np.cumsum(sizes)[:-1])
        soft = lambda z: np.exp(z - z.max(axis=-1, keepdims=True)) / np.exp(  # noqa: E731
            z - z.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)
        ps1, ps2 = soft(parts[0]), soft(parts[1])
        cpts = [soft(p.reshape(-1, 5)) for p in parts[2:]]
        p = np.zeros((5,) * 4)
        for s1 in (0, 1):
            for s2 in (0, 1):
                term = ps1[s1] * ps2[s2]
                factors = []
                for c, t in zip(code, cpts):
                    row = [s for bit, s in ((0, s1), (1, s2)) if c >> bit & 1]
                    idx = sum(v << i for i, v in enumerate(row))
                    factors.append(t[idx])
                p += term * np.einsum("a,b,c,d->abcd", *factors)
        return p.ravel()

    J = np.stack([(distribution(phi0 + h * e) - distribution(phi0 - h * e)) / (2 * h)
                  for e in np.eye(phi0.size)], axis=1)
    s = np.linalg.svd(J, compute_uv=False)
    return int(np.sum(s > 1e-7 * s[0]))


def test_effective_dimensions_match_an_exact_jacobian_rank(single):
    """§6.5.2: Algorithm 6.2's d agrees with the generic rank of the Jacobian of p(y)
    (the incomplete-data model's dimension), d' with the naive count of eq. 6.24 (every
    CPT entry is free given complete data), both unchanged with a ten times smaller step."""
    rng = np.random.default_rng(0)
    dims = single.summary["dimension"]
    assert dims["n_structures"] == len(single.config["dimension_codes"])
    for code, r in dims["rows"].items():
        c = tuple(int(ch) for ch in code)
        assert r["d"] == _oracle_incomplete_dimension(c, rng), code
        assert r["d_complete"] == r["naive"]
        assert (r["d_small_step"], r["d_complete_small_step"]) == (r["d"], r["d_complete"])
    rows = dims["rows"]
    # closed forms: no edges, 4 x 4 free entries; one binary parent of a single child
    # gives that child a mixture of two distributions over 5 values, still 4 free entries
    assert rows["0000"]["d"] == 16 and rows["1000"]["d"] == 16
    assert sum(dims["d_prime_minus_d"].values()) == dims["n_structures"]
    assert "§6.5.2" in single.report and (single.out / "dag_dimension.png").stat().st_size > 0


def test_hysteresis_units_pair_a_forward_and_a_backward_pass(single):
    cfg = single.config
    keys = [k for k in single.results if k[0] == "hysteresis"]
    assert len(keys) == (len(cfg["hysteresis_sizes"]) * len(cfg["hysteresis_e_tau"])
                         * len(cfg["hysteresis_temperatures"]) * cfg["hysteresis_repeats"])
    for k in keys:
        r = single.results[k]
        h = r["hysteresis"]
        runs, back = np.asarray(r["ais_runs"]), np.asarray(h["backward_runs"])
        lme = lambda v: np.log(np.mean(np.exp(v - v.max()))) + v.max()  # noqa: E731
        assert h["forward"] == pytest.approx(r["ais"]) == pytest.approx(lme(runs))
        assert h["backward"] == pytest.approx(lme(back))
        assert h["gap"] == pytest.approx(h["backward"] - h["forward"])
        assert len(h["profile"]) == min(16, k[3])
    cells = single.summary["hysteresis"]["cells"]
    assert len(cells) == len(keys) // cfg["hysteresis_repeats"]
    for c in cells.values():
        assert 0 <= c["hot_share"] <= 1 and 0 < c["hot_steps"] <= 1
        assert c["beta_start"][0] == 0.0 and c["beta_end"][-1] == 1.0
    text = single.report
    assert "Fig. 6.13" in text and "not run" not in text
    for name in ("dag_fig6_3.png", "dag_fig6_13.png", "dag_hysteresis.png"):
        assert (single.out / name).stat().st_size > 0


def test_fig_6_3_reads_the_rank_from_which_a_score_stays_near_the_top():
    from sklearn_vb.reproduce.dag import _settles

    sizes = [10, 20, 40, 80]
    assert _settles([50, 3, 30, 2], sizes, top=20) == 80
    assert _settles([5, 3, 1, 2], sizes, top=20) == 10
    assert _settles([5, 3, 1, 40], sizes, top=20) is None
