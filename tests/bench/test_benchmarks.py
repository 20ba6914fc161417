"""The benchmark harness runs a workload, skips missing libraries and writes results."""

import json

import numpy as np
import pytest

from benchmarks import harness


def test_harness_measures_ratios_and_skips_missing_libraries(tmp_path):
    calls = {"ours": 0, "theirs": 0}

    @harness.workload("test-dummy", per="iteration")
    def dummy(quick):
        def ours():
            calls["ours"] += 1
            return {"n_iter": 10, "heldout": -1.5}

        def theirs():
            calls["theirs"] += 1
            sum(range(20000))
            return 5

        def missing():
            import a_library_that_is_not_installed  # noqa: F401

        def broken():
            raise RuntimeError("boom")

        return {"sklearn_vb": ours, "other": theirs, "absent": missing, "broken": broken}

    try:
        result = harness.run_workload("test-dummy", quick=False, repeats=3, verbose=False)
    finally:
        harness.WORKLOADS.pop("test-dummy")
    ours, other, absent, broken = result["measurements"]
    assert calls == {"ours": 4, "theirs": 4}  # one warm-up plus three repeats each
    assert ours.status == "ok" and ours.n_iter == 10 and ours.metrics == {"heldout": -1.5}
    assert other.ratio_ours_over_theirs == pytest.approx(ours.per_unit_ms / other.per_unit_ms)
    assert absent.status == "skipped" and "not installed" in absent.message
    assert broken.status == "error" and "boom" in broken.message
    json_path, md_path = harness.write_results([result], "unit", directory=tmp_path)
    payload = json.loads(json_path.read_text())
    assert payload["results"][0]["measurements"][1]["label"] == "other"
    assert "| test-dummy | absent | skipped" in md_path.read_text()


def test_core_workload_runs_in_quick_mode(tmp_path):
    from benchmarks import bench_core  # noqa: F401  (registers the workload)

    result = harness.run_workload("core-bernoulli-mixture", quick=True, verbose=False)
    assert [m.status for m in result["measurements"]] == ["ok", "ok"]
    assert result["measurements"][1].ratio_ours_over_theirs > 0


def test_harness_call_workloads_with_caps_summaries_and_ratios(tmp_path):
    @harness.workload("test-calls", per="call", repeats=2, warmup=False, ratio_to_first=True)
    def calls(quick):
        def first():
            return {"n_iter": 3, "to_target_s": 1.0, "elapsed_s": 2.0, "trace": {"bounds": [1, 2]}}

        def second():
            return {"n_iter": None, "to_target_s": 4.0, "elapsed_s": 8.0}

        def capped():
            raise harness.OverCap(30.0, {"peak_rss_mb": 12.0})

        def summarize(measurements):
            measurements[0].metrics["summary"] = len(measurements)
            measurements[1].ratios["to target ours/theirs"] = 0.25

        return {"fit": first, "score": second, "slow": capped}, summarize

    try:
        result = harness.run_workload("test-calls", quick=False, verbose=False)
    finally:
        harness.WORKLOADS.pop("test-calls")
    fit, score, slow = result["measurements"]
    assert fit.warmup_s is None and fit.median_s == 2.0 and fit.trace == {"bounds": [1, 2]}
    assert fit.metrics == {"to_target_s": 1.0, "summary": 3}
    assert score.ratios == {"to target ours/theirs": 0.25, "/ fit": pytest.approx(4.0)}
    assert score.ratio_ours_over_theirs is None  # not meaningful for "each row / first row"
    assert slow.status == "over cap" and slow.median_s == 30.0
    assert slow.ratios == {"/ fit": pytest.approx(15.0)} and slow.metrics == {"peak_rss_mb": 12.0}
    table = harness.markdown_table([result])
    assert "| ratios |" in table and "/ fit ≥ 15" in table

    # a run of one workload replaces only that workload's entry of a merged results file
    other = {**result, "workload": "test-other"}
    harness.write_results([result, other], "merged", directory=tmp_path)
    rerun = {**result, "measurements": result["measurements"][:1]}
    json_path, _ = harness.write_results([rerun], "merged", directory=tmp_path, merge=True)
    stored = {r["workload"]: r for r in json.loads(json_path.read_text())["results"]}
    assert set(stored) == {"test-calls", "test-other"}
    assert len(stored["test-calls"]["measurements"]) == 1
    assert len(stored["test-other"]["measurements"]) == 3


def test_run_capped_reports_results_time_caps_and_errors():
    import time

    from benchmarks.capped_call import run_capped

    ok = run_capped(lambda: 42, 10.0, warm=lambda: None, n_calls=2)
    assert ok.status == "ok" and ok.values == [42, 42] and len(ok.seconds) == 2
    assert ok.warmup_s is not None and ok.peak_rss_mb > 0
    slow = run_capped(lambda: time.sleep(30), 0.5)
    assert slow.status == "over time cap" and slow.seconds == []
    failed = run_capped(lambda: 1 / 0, 10.0)
    assert failed.status == "error" and "ZeroDivisionError" in failed.message


def _run_subset(name, labels):
    """Run the quick version of a registered workload restricted to some candidates."""
    from dataclasses import replace

    spec = harness.WORKLOADS[name]

    def subset(quick):
        out = spec.func(quick)
        candidates, summarize = out if isinstance(out, tuple) else (out, None)
        candidates = {k: v for k, v in candidates.items() if k in labels}
        return (candidates, summarize) if summarize else candidates

    harness.WORKLOADS["test-subset"] = replace(spec, func=subset)
    try:
        return harness.run_workload("test-subset", quick=True, verbose=False)
    finally:
        harness.WORKLOADS.pop("test-subset")


def test_convergence_workloads_quick_subset():
    from benchmarks import bench_convergence  # noqa: F401  (registers the workloads)

    names = [n for n in harness.WORKLOADS if n.startswith("convergence-")]
    assert {"convergence-hmm-categorical-K8", "convergence-hmm-gaussian", "convergence-mfa-digits",
            "convergence-lds-p10-T300", "convergence-lds-p88-T3000",
            "convergence-dag-beal"} <= set(names)
    assert all(harness.WORKLOADS[n].stem == "convergence" for n in names)

    hmm = _run_subset("convergence-hmm-categorical-K8", {"sklearn_vb", "hmmlearn-log"})
    ours, peer = hmm["measurements"]
    assert ours.status == "ok" and ours.n_iter == len(ours.trace["bounds"])
    assert {"bound", "converged"} <= set(ours.metrics)
    if peer.status == "ok":  # hmmlearn installed: a common bound target was timed
        assert peer.metrics["target_bound"] <= min(ours.metrics["bound"], peer.metrics["bound"])
        assert ours.metrics["time_to_target_vs_hmmlearn-log_s"] > 0
        assert "time to common target ours/theirs" in peer.ratios
    else:
        assert peer.status == "skipped"

    _assert_long_run(hmm["measurements"][0])

    lds = _run_subset("convergence-lds-p10-T300", {"sklearn_vb", "pykalman EM (fixed budget)"})
    ours = lds["measurements"][0]
    assert ours.status == "ok"
    _assert_long_run(ours)
    assert lds["measurements"][1].status in ("ok", "skipped")

    dag = _run_subset("convergence-dag-beal", {"sklearn_vb"})
    _assert_long_run(dag["measurements"][0])
    mfa = _run_subset("convergence-mfa-digits", {"sklearn_vb"})
    ours = mfa["measurements"][0]
    _assert_long_run(ours)
    # the trace holds the continuation's bounds only
    assert ours.metrics["long_run_iters"] == len(ours.trace["long_run_bounds"])


def _assert_long_run(ours):
    """The reference-run metrics of a convergence row: the long run is not below the default fit."""
    assert ours.status == "ok", ours.message
    assert {"optimum_bound", "relative_gap_to_optimum", "long_run_iters", "long_run_converged",
            "long_run_iters_within_1e-6", "long_run_s"} <= set(ours.metrics)
    assert ours.metrics["relative_gap_to_optimum"] >= -1e-9
    assert ours.metrics["long_run_iters_within_1e-6"] is not None
    assert ours.trace["long_run_bounds"][-1] == ours.metrics["optimum_bound"]


def test_score_cost_workload_quick_subset():
    from benchmarks import bench_score_cost

    assert harness.WORKLOADS["score-cost-dag"].stem == "score_cost"
    assert set(bench_score_cost.METHODS) >= {"vb", "bic", "cs", "laplace", "is", "ais"}
    result = _run_subset("score-cost-dag", {"fit", "vb", "is"})
    fit, vb, is_ = result["measurements"]
    assert [m.label for m in result["measurements"]] == ["fit", "vb", "is"]
    assert fit.status == "ok" and {"bound", "converged"} <= set(fit.metrics)
    assert vb.status == "ok" and vb.metrics["log_evidence"] == pytest.approx(fit.metrics["bound"])
    assert vb.metrics["same_value_twice"] is True and vb.ratios["/ fit"] > 0
    assert is_.status in ("ok", "over cap")
    assert "peak_rss_mb" in is_.metrics
    if is_.status == "ok":
        assert {"stderr", "same_value_twice"} <= set(is_.metrics)


#: every comparison library the benchmarks import (``benchmarks/peers.py``)
_PEER_MODULES = ["hmmlearn", "pykalman", "pgmpy", "bayespy", "statsmodels", "dynamax", "jax",
                 "torch", "pomegranate"]


def test_quick_mode_skips_every_absent_comparison_library(tmp_path):
    """``python -m benchmarks --quick`` with none of the peers importable: our rows run,
    every peer row is "skipped" (not "error"), and the results files are written."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    blocked = tmp_path / "blocked"
    for name in _PEER_MODULES:
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(
            f"raise ImportError('{name} is not installed (blocked by the test)')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), str(root)]),
           "MPLBACKEND": "Agg"}
    out = tmp_path / "results"
    workloads = ["hmm-categorical-small", "hmm-gaussian-diag", "lds-single",
                 "dag-latent-class-vs-pgmpy", "scaling-hmm-T", "machine-kalman-smoother-k4",
                 "mrf-bp-grid-30x30-vs-pomegranate"]
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--results-dir", str(out),
                           *workloads], cwd=root, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r["workload"]: r for r in harness.load_results(out / "quick.json")}
    assert sorted(results) == sorted(workloads)
    peers_seen = 0
    for name, result in results.items():
        ours, *others = result["measurements"]
        assert ours.status == "ok", (name, ours.message)
        for m in others:
            if m.label.startswith(("hmmlearn", "pykalman", "bayespy", "dynamax", "pgmpy",
                                   "pomegranate", "statsmodels")):
                peers_seen += 1
                assert m.status == "skipped" and "not installed" in m.message, (name, m)
            else:  # sizes of a scaling curve and the machine references still run
                assert m.status == "ok", (name, m.label, m.message)
    assert peers_seen >= 6
    assert (out / "quick.md").is_file()


def test_startup_workloads_quick_subset(monkeypatch):
    from benchmarks import bench_startup

    names = [n for n in harness.WORKLOADS if n.startswith("startup-")]
    assert set(names) == {"startup-import", "startup-first-fit-cold", "startup-first-fit-warm"}
    assert all(harness.WORKLOADS[n].stem == "startup" for n in names)
    # every public estimator has a first-fit row in a full run
    import sklearn_vb

    assert set(bench_startup.ESTIMATORS.values()) == set(sklearn_vb.__all__) - {"__version__"}

    (ours,) = _run_subset("startup-import", {"import sklearn_vb"})["measurements"]
    assert ours.status == "ok" and {"cpu_s", "process_s", "load_avg"} <= set(ours.metrics)

    # the cheapest first fit (no kernel on this small problem), cold then warm
    monkeypatch.setattr(bench_startup, "QUICK_ESTIMATORS", ["boltzmann"])
    monkeypatch.setattr(bench_startup, "_CACHES", {})
    for name in ("startup-first-fit-cold", "startup-first-fit-warm"):
        (row,) = harness.run_workload(name, quick=True, verbose=False)["measurements"]
        assert row.label == "boltzmann" and row.status == "ok", row.message
        assert {"import_s", "first_fit_s", "second_fit_s", "fit_cpu_s", "total_s"} <= set(row.metrics)
        assert row.median_s == row.metrics["first_fit_s"]
    assert set(bench_startup._CACHES) == {"boltzmann"}  # the warm row reused the cold row's cache


def test_selection_workloads_register_and_report_per_problem(tmp_path):
    """Every family's selection workload is registered under the ``selection`` stem; a
    panel row renders in the per-problem Markdown and the figure."""
    from benchmarks import bench_selection, figures, selection_report
    from benchmarks.selection.common import Outcome, Problem, overall, run_panel

    assert {f"selection-{f}" for f in bench_selection.FAMILIES} <= set(harness.WORKLOADS)
    assert all(harness.WORKLOADS[f"selection-{f}"].stem == "selection"
               for f in bench_selection.FAMILIES)

    def make(seed):
        return {"seed": seed}

    def method(problem, data, seed):
        if seed == 2:
            raise RuntimeError("boom")
        return Outcome(2 + seed, recovered=seed == 0, distance=float(seed), heldout=-1.0, gap=0.5)

    panel = run_panel([Problem("toy", 2, (0, 1, 2), make)], method)
    toy = panel["toy"]
    assert toy["recovery_rate"] == 0.5 and toy["distance"] == 0.5 and toy["ok"] == 2
    assert toy["selected"] == [2, 3] and len(toy["errors"]) == 1 and "boom" in toy["errors"][0]
    assert overall(panel)["mean_recovery_rate"] == 0.5
    m = harness.Measurement("sklearn_vb", "ok", median_s=1.0,
                            metrics={**overall(panel), "panel": panel})
    result = {"workload": "selection-toy", "per": "call", "measurements": [
        m, harness.Measurement("peer", "skipped", message="not installed")]}
    json_path, _ = harness.write_results([result], "selection", directory=tmp_path)
    md = selection_report.write_markdown(json_path).read_text()
    assert "| toy | toy | sklearn_vb | 2 | [2, 3] | 0.50 (2/3) [1 failed] | 0.50 |" in md
    assert "| toy | toy | peer |" in md and "skipped" in md
    assert figures.selection_figure(harness.load_results(json_path), tmp_path / "s.png").is_file()


def test_selection_time_cap_stops_a_slow_selection_and_counts_it_as_not_recovered():
    """With a time cap every selection runs in a child: a slow seed is stopped and counted,
    a fast one returns its outcome, an error comes back as its message."""
    import time

    from benchmarks.selection.common import Outcome, Problem, run_problem

    def method(problem, data, seed):
        if seed == 1:
            time.sleep(60)
        if seed == 2:
            raise RuntimeError("boom")
        return Outcome(3, recovered=True, distance=0.0, heldout=-1.0, gap=0.0)

    start = time.perf_counter()
    toy = run_problem(Problem("toy", 3, (0, 1, 2), lambda seed: {}), method, time_cap_s=3.0)
    assert time.perf_counter() - start < 30
    assert toy["ok"] == 1 and toy["over_time_cap"] == 1 and toy["time_cap_s"] == 3.0
    assert "boom" in toy["errors"][0]
    assert toy["recovery_rate"] == 0.5  # the stopped seed counts as not recovered
    assert toy["selected"] == [3] and toy["cpu_s"] >= 0.0


def test_selection_journal_resumes_a_stopped_panel(tmp_path, monkeypatch):
    """With SKLEARN_VB_SELECTION_JOURNAL a rerun takes the selections already made from
    the journal: the method is called only for the seeds it lacks, and the summary is the
    one an uninterrupted run gives."""
    from benchmarks.selection.common import Outcome, Problem, journal_for, run_problem

    class Stopped(BaseException):
        """What a killed run looks like to run_problem: not an error of one seed."""

    calls, stop_at = [], [2]

    def method(problem, data, seed):
        calls.append(seed)
        if seed in stop_at:
            stop_at.clear()
            raise Stopped  # the first run is stopped on its third selection
        return Outcome([seed, 1], recovered=seed == 0, distance=float(seed), heldout=-seed,
                       gap=0.5, extra={"n_edges": seed})

    problem = Problem("toy", [0, 1], (0, 1, 2), lambda seed: {})
    monkeypatch.setenv("SKLEARN_VB_SELECTION_JOURNAL", str(tmp_path / "journal.jsonl"))
    with pytest.raises(Stopped):
        run_problem(problem, method, journal=journal_for("toy: ours"))
    calls.clear()
    resumed = run_problem(problem, method, journal=journal_for("toy: ours"))
    assert calls == [2]
    monkeypatch.delenv("SKLEARN_VB_SELECTION_JOURNAL")
    assert journal_for("toy: ours") is None
    calls.clear()
    fresh = run_problem(problem, method)
    assert calls == [0, 1, 2]
    for key in ("recovery_rate", "distance", "heldout_loglik", "gap_to_true", "selected",
                "n_edges"):
        assert resumed[key] == fresh[key]


def test_small_hmm_workloads_quick_subset():
    """The small-fit workloads (JOSS setup): one per K = 2..10 with a fixed 5 iterations,
    three to convergence, all written to ``hmm_small``; every library runs exactly the
    fixed iterations."""
    from benchmarks import bench_hmm_small  # noqa: F401  (registers the workloads)

    fixed = sorted(n for n in harness.WORKLOADS if n.startswith("hmm-small-k"))
    assert fixed == [f"hmm-small-k{K:02d}" for K in range(2, 11)]
    assert {"hmm-small-converge-k02", "hmm-small-converge-k10"} <= set(harness.WORKLOADS)
    assert all(harness.WORKLOADS[n].stem == "hmm_small" and harness.WORKLOADS[n].per == "call"
               for n in harness.WORKLOADS if n.startswith("hmm-small-"))
    result = _run_subset("hmm-small-k03", {"sklearn_vb", "hmmlearn-em"})
    ours, peer = result["measurements"]
    assert ours.status == "ok" and ours.n_iter == 5 and ours.median_s > 0
    assert np.isfinite(ours.metrics["bound_per_frame"])
    assert peer.status in ("ok", "skipped")
    if peer.status == "ok":
        assert peer.n_iter == 5 and peer.ratio_ours_over_theirs > 0


def test_mrf_search_workload_runs_in_quick_mode():
    from benchmarks import bench_mrf_search  # noqa: F401  (registers the workloads)

    result = harness.run_workload("mrf-search-wine-13", quick=True, verbose=False)
    ours, *peers = result["measurements"]
    assert [m.label for m in result["measurements"]] == [
        "sklearn_vb", "GraphicalLassoCV", "GraphicalLasso (CV alpha)",
        "L1-logistic neighbourhood (OR)"]
    assert ours.status == "ok" and ours.metrics["data"] == bench_mrf_search.QUICK
    assert np.isfinite(ours.metrics["heldout"]) and ours.metrics["cpu_s"] > 0
    for m in peers:
        assert m.status == "ok", (m.label, m.message)
        assert m.ratio_ours_over_theirs > 0 and "heldout ours - theirs" in m.ratios
        assert isinstance(m.metrics["same_edges_as_sklearn_vb"], bool)


def test_mfa_digits_workloads_report_cpu_time_and_its_ratio():
    from benchmarks import bench_mfa  # noqa: F401  (registers the workloads)

    assert {"mfa-digits", "mfa-digits-default-threads"} <= set(harness.WORKLOADS)
    result = _run_subset("mfa-digits", {"sklearn_vb", "sklearn-bgmm"})
    ours, bgmm = result["measurements"]
    assert ours.status == bgmm.status == "ok"
    assert ours.metrics["cpu_s"] > 0 and ours.metrics["threads"] == "1"
    assert bgmm.ratios["cpu ours / this"] == pytest.approx(
        ours.metrics["cpu_s"] / bgmm.metrics["cpu_s"])


def test_dag_search_results_from_rows(tmp_path):
    """The DAG search benchmark's rows become harness workloads with CPU-time ratios
    (median of the per-seed ratios) and a markdown summary; a capped pgmpy row has no
    ratio."""
    from benchmarks import dag_search_vs_pgmpy as bench

    def row(search, seed, cpu, n=500, **kw):
        return {"network": "asia", "n": n, "seed": seed, "search": search, "load": 1.0,
                "edges": 8, "shd": 2, "bic": -100.0 - cpu, "heldout": -2.0, "wall_s": cpu,
                "cpu_s": cpu, "structure": {}, **kw}

    rows = [row("ours", 0, 0.1), row("ours", 1, 0.3), row("ours-hc", 0, 0.05),
            row("ours-hc", 1, 0.05), row("pgmpy-bic", 0, 2.0), row("pgmpy-bic", 1, 1.0),
            row("ours", 0, 1.0, n=20000),
            {"network": "asia", "n": 20000, "seed": 0, "search": "pgmpy-bic", "load": 1.0,
             "capped": 600.0}]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    json_path, md_path = bench.write(path, tmp_path, notes="A note.")
    results = {r["workload"]: r for r in harness.load_results(json_path)}
    small = {m.label: m for m in results["dag-search-asia-n500"]["measurements"]}
    assert small["ours"].median_s == pytest.approx(0.2)
    # per seed: 0.1 / 2.0 and 0.3 / 1.0
    assert small["pgmpy-bic"].ratio_ours_over_theirs == pytest.approx((0.05 + 0.3) / 2)
    assert small["pgmpy-bic"].ratios["ours-hc / this"] == pytest.approx((0.025 + 0.05) / 2)
    large = {m.label: m for m in results["dag-search-asia-n20000"]["measurements"]}
    assert large["pgmpy-bic"].status == "over cap" and large["pgmpy-bic"].ratio_ours_over_theirs is None
    text = md_path.read_text()
    assert "A note." in text and "## Summary per network and size" in text
    assert "| asia | 20000 | 0 | pgmpy-bic | | | | | > 600 | | 1.0 |" in text
