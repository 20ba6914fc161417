"""The quick mode of every workload of ``benchmarks/bench_missing.py`` runs and reports
what its full run is read for: missing entries marginalised against imputation, and
input-driven transitions against the plain HMM."""

import numpy as np
import pytest

from benchmarks import bench_missing  # noqa: F401  (registers the workloads)
from benchmarks import harness

pytest.importorskip("statsmodels")


def _run(name):
    result = harness.run_workload(name, quick=True, verbose=False)
    rows = {m.label: m for m in result["measurements"]}
    for m in rows.values():
        assert m.status in ("ok", "skipped"), (name, m.label, m.message)
    return rows, result


def test_missing_workloads_register_under_the_missing_stem():
    names = {n for n in harness.WORKLOADS if n.startswith("missing-")}
    assert names == {"missing-hmm", "missing-lds", "missing-iohmm",
                     "missing-iohmm-continuous"}
    assert all(harness.WORKLOADS[n].stem == "missing" for n in names)


def test_masks_remove_the_fraction_and_keep_an_entry_per_row():
    Y = bench_missing.macro_growth()
    assert Y.shape == (202, 7) and np.allclose(Y.mean(0), 0) and np.allclose(Y.std(0), 1)
    X, missing = bench_missing.remove_at_random(Y, 0.5, seed=0)
    assert abs(missing.mean() - 0.5) < 0.05 and not missing.all(axis=1).any()
    assert np.array_equal(np.isnan(X), missing) and np.array_equal(X[~missing], Y[~missing])


def test_heldout_mixture_density_conditions_on_the_observed_entries():
    # one state, two perfectly correlated dimensions: the removed one is known exactly
    # given the other, so its conditional density is far above its marginal one
    Y = np.array([[1.0, 1.0]])
    missing = np.array([[False, True]])
    means = np.zeros((1, 2))
    cov = np.array([[[1.0, 0.99], [0.99, 1.0]]])
    conditional = bench_missing.heldout_gaussian_mixture(Y, missing, np.ones((1, 1)), means, cov)
    marginal = bench_missing.heldout_gaussian_mixture(
        Y, missing, np.ones((1, 1)), means, np.eye(2)[None])
    assert marginal == pytest.approx(-0.5 * np.log(2 * np.pi) - 0.5)
    var = 1 - 0.99 ** 2
    assert conditional == pytest.approx(-0.5 * (np.log(2 * np.pi * var) + 0.01 ** 2 / var))


def test_missing_hmm_quick(tmp_path):
    from benchmarks import report

    pytest.importorskip("hmmlearn")
    rows, result = _run("missing-hmm")
    ours = rows["sklearn_vb diag (NaN marginalised)"]
    imputed = rows["hmmlearn diag, mean-imputed"]
    for m in rows.values():
        if m.status == "ok":
            for f in ("0.1", "0.3", "0.5"):
                if m.metrics.get(f"nan_fit@{f}") == 1:  # pomegranate's EM diverged
                    assert np.isnan(m.metrics[f"heldout@{f}"])
                    continue
                assert np.isfinite(m.metrics[f"heldout@{f}"])
                assert -1 <= m.metrics[f"ari@{f}"] <= 1
            assert len(m.trace) == 3  # one mask per fraction in quick mode
    # marginalising half of the entries predicts them far better than mean imputation
    assert ours.metrics["heldout@0.5"] > imputed.metrics["heldout@0.5"] + 0.5
    assert ours.metrics["ari@0.1"] > 0.6
    json_path, _ = harness.write_results([result], "missing", directory=tmp_path)
    page = report.rst_page(directory=tmp_path)
    assert report.SECTIONS["missing"].split(":")[0] in page and "missing-hmm" in page


def test_missing_lds_quick():
    rows, _ = _run("missing-lds")
    ours = rows["sklearn_vb LDS (NaN marginalised)"]
    # better than the N(0, 1) marginal of the standardised columns (-1.419 nats)
    for f in ("0.1", "0.3", "0.5"):
        assert ours.metrics[f"heldout@{f}"] > -1.35
        assert 0 < ours.metrics[f"sq_error@{f}"] < 1
    peer = rows["statsmodels DynamicFactorMQ(2 factors, VAR(1))"]
    assert peer.status == "ok" and np.isfinite(peer.metrics["heldout@0.5"])


def test_missing_iohmm_quick():
    rows, _ = _run("missing-iohmm")
    io = rows["sklearn_vb input-driven HMM (U given)"]
    plain = rows["sklearn_vb plain HMM"]
    assert io.metrics["lower_bound"] > plain.metrics["lower_bound"] + 50
    assert io.metrics["heldout_loglik_per_frame"] > plain.metrics["heldout_loglik_per_frame"] + 0.05


def test_missing_iohmm_continuous_quick():
    rows, _ = _run("missing-iohmm-continuous")
    io = rows["sklearn_vb continuous-input HMM (U given)"].metrics
    plain = rows["sklearn_vb plain HMM"].metrics
    binned = rows["sklearn_vb categorical-input HMM, U in 4 quantile bins"].metrics
    # with the effect: the continuous model wins on evidence and held-out likelihood
    assert io["lower_bound"] > plain["lower_bound"] + 50
    assert io["lower_bound"] > binned["lower_bound"]
    assert io["heldout"] > plain["heldout"] + 0.05
    assert io["heldout"] <= io["heldout_true"] + 0.02
    # without it: the evidence does not prefer the inputs
    assert io["lower_bound_null"] < plain["lower_bound_null"] + 1.0
