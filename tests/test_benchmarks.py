"""The benchmark harness runs a workload, skips missing libraries and writes results."""

import json

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
