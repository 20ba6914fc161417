"""The quick mode of every workload of ``benchmarks/bench_scale.py`` runs and reports
what its full run is read for."""

import numpy as np
import pytest

from benchmarks import bench_scale  # noqa: F401  (registers the workloads)
from benchmarks import harness


def _run(name, with_result=False):
    result = harness.run_workload(name, quick=True, verbose=False)
    for m in result["measurements"]:
        assert m.status in ("ok", "skipped"), (name, m.label, m.message)
    return (result["measurements"], result) if with_result else result["measurements"]


def test_scale_workloads_register_under_the_scale_stem():
    names = {n for n in harness.WORKLOADS if n.startswith(("scale-",))}
    assert names == {"scale-hmm-long-sequence", "scale-hmm-categorical",
                     "scale-hmm-memory-limit", "scale-dask-hmm", "scale-dask-dag"}
    assert all(harness.WORKLOADS[n].stem == "scale" for n in names)


def test_categorical_many_sequences_quick(tmp_path):
    from benchmarks import figures, report

    (batch, online, fast, online_fit, peer), result = _run("scale-hmm-categorical",
                                                           with_result=True)
    for m in (batch, online, fast, online_fit) + ((peer,) if peer.status == "ok" else ()):
        trace = m.trace
        assert (len(trace["seconds"]) == len(trace["cpu_seconds"]) == len(trace["heldout"])
                >= (1 if m is peer else 2))
        assert np.all(np.diff(trace["seconds"]) > 0)
        assert np.all(np.diff(trace["cpu_seconds"]) >= 0)
        assert 0 < m.metrics["cpu_s"]
        assert trace["heldout"][-1] == m.metrics["heldout_loglik_per_symbol"] < 0
        assert m.metrics["peak_rss_mb"] >= m.metrics["start_rss_mb"] > 0
        assert m.metrics["n_symbols"] == 10_000
    assert len(batch.trace["seconds"]) == batch.n_iter  # one point per iteration
    for m in (online, fast, online_fit):
        assert "heldout_rel_gap_to_batch" in m.metrics
        assert m.ratios["time / batch time"] > 0
    assert online_fit.metrics["steps"] > 0 and online_fit.metrics["batch_size"] == 25
    assert batch.metrics["heldout_true_model"] < 0
    # the held-out-against-time figure and the docs page's section
    json_path, _ = harness.write_results([result], "scale", directory=tmp_path)
    assert figures.scale_figure(harness.load_results(json_path), tmp_path / "scale.png").is_file()
    page = report.rst_page(directory=tmp_path)
    assert report.SECTIONS["scale"].split(":")[0] in page and "scale-hmm-categorical" in page


def test_memory_limit_quick():
    (row,) = _run("scale-hmm-memory-limit")
    assert row.metrics["batch"] == "refused"
    message = row.metrics["batch_message"]
    assert "RLIMIT_AS" in message and "partial_fit" in message
    assert row.metrics["batch_needs_mb"] > row.metrics["limit_above_it_mb"]
    assert row.metrics["online_steps"] == 10  # one pass: 1000 sequences, minibatches of 100
    assert np.isfinite(row.metrics["online_bound_estimate"])


@pytest.mark.parametrize("name", ["scale-dask-hmm", "scale-dask-dag"])
def test_dask_against_in_memory_quick(name):
    pytest.importorskip("distributed")
    memory, *on_cluster = _run(name)
    # the HMM also fits a dask bag of the same sequences
    assert len(on_cluster) == (2 if name == "scale-dask-hmm" else 1)
    for row in on_cluster:
        assert row.metrics["bound_rel_diff"] < 1e-10
        assert row.metrics["n_iter_dask"] == row.metrics["n_iter_in_memory"]
        assert row.ratios["dask time / in-memory time"] > 0


def test_long_sequence_quick():
    svi, batch = _run("scale-hmm-long-sequence")
    assert svi.metrics["T"] == 20_000 and svi.metrics["steps"] > 0
    for m in (svi, batch):
        assert m.metrics["peak_rss_mb"] >= m.metrics["start_rss_mb"] > 0
        assert m.metrics["cpu_s"] > 0
    assert abs(svi.metrics["heldout_loglik_per_frame"]
               - batch.metrics["heldout_loglik_per_frame"]) < 0.05
