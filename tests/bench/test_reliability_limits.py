"""The long-sequence benchmark rows (``benchmarks/bench_limits.py``) at a tiny size."""

import pytest

from benchmarks import bench_limits, harness


@pytest.mark.parametrize("case", [bench_limits.hmm_case, bench_limits.lds_case])
def test_limits_row_reports_time_memory_and_a_finite_bound(case):
    row = bench_limits.measure(case, 400, 2, quick=True)
    assert row["iterations"] == 2 and row["bound_finite"]
    assert row["elapsed_s"] > 0 and row["cpu_s_per_iteration"] > 0
    assert row["peak_rss_mb"] is None or row["peak_rss_mb"] > 0
    assert harness.WORKLOADS["limits-hmm"].stem == "limits"
