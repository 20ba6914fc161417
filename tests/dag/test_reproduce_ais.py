"""``reproduce ais``: a reduced quick mode, checked number by number."""

import numpy as np
import pytest

from sklearn_vb import reproduce

CODES = ["1332", "3333", "0001", "0000", "1122", "0303"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce.ais(quick=True, schedule_K=[16, 64], schedule_starts=2, exact_sizes=[5],
                         exact_codes=CODES, exact_K=128, precision_sizes=[10],
                         precision_codes=CODES, precision_K=32, precision_repeats=2,
                         verbose=0, out=tmp_path_factory.mktemp("ais"))


def test_schedule_traces(run):
    sc = run.summary["schedule"]
    assert sc["K"] == [16, 64] and set(sc["traces"]) == {"0", "1", "true"}
    for trace in sc["traces"].values():
        assert np.all(np.isfinite(trace))
    assert sc["vb"] > sc["bic"]
    # a run started at the true parameters over-estimates at short schedules, far above
    # the runs started from the prior (Beal's Fig. 6.10)
    assert sc["traces"]["true"][0] > max(sc["traces"]["0"][0], sc["traces"]["1"][0]) + 100
    for key, r in run.results.items():
        if key[0] == "schedule":
            assert 0 <= r["acceptance"] <= 1


def test_exact_check(run):
    ex = run.summary["exact"][5]
    assert ex["n_structures"] == len(CODES)
    s = ex["scores"]
    # the bounds are never above the exact evidence, for every structure
    assert s["vb"]["below_exact"] == len(CODES) and s["vb"]["max_diff"] <= 1e-9
    assert s["cs"]["below_exact"] == len(CODES) and s["cs"]["max_diff"] <= 1e-9
    assert s["vb"]["mean_diff"] == pytest.approx(
        np.mean([run.results[("exact", 5, c, 0)]["vb"] - run.results[("exact", 5, c, 0)]["exact"]
                 for c in CODES]))
    for c in CODES:
        r = run.results[("exact", 5, c, 0)]
        assert np.isfinite(r["exact"]) and np.all(np.isfinite(r["ais_runs"]))
    for name in ("vb", "cs", "bic", "map", "ais"):
        assert 1 <= s[name]["rank_true"] <= len(CODES)
    assert 1 <= ex["rank_true_exact"] <= len(CODES)


def test_precision_and_report(run):
    p = run.summary["precision"][10]
    assert len(p["ranks"]) == 2 and all(1 <= r <= len(CODES) for r in p["ranks"])
    assert p["agree"] == (p["ranks"][0] == p["ranks"][1])
    # independent repeats give different estimates
    a = [run.results[("precision", 10, "1332", r)]["ais"] for r in range(2)]
    assert a[0] != a[1]
    assert "Fig. 6.10" in run.report and "Exact evidence at n = 5" in run.report
    assert (run.out / "ais_fig6_10.png").stat().st_size > 0
