"""The reproduction framework: registry, command line, journal and resume."""

import json

import numpy as np
import pytest

from sklearn_vb import reproduce
from sklearn_vb.__main__ import main
from sklearn_vb.reproduce import EXPERIMENTS, Experiment, Option, register, run, unit_seed
from sklearn_vb.reproduce._cache import Journal


class Interrupt(Exception):
    pass


CALLS = []


def _units(config):
    return [(n, s) for n in config["sizes"] for s in range(config["n_streams"])]


def _run_unit(key, config, seed):
    CALLS.append(key)
    if config.get("fail_after") is not None and len(CALLS) > config["fail_after"]:
        raise Interrupt(key)
    n, _ = key
    x = np.random.default_rng(seed).normal(size=n)
    return {"mean": float(x.mean()), "n": n, "nan": float("nan")}


def _summarize(results, config):
    means = {n: [r["mean"] for k, r in results.items() if k[0] == n] for n in config["sizes"]}
    return {"mean_by_n": {n: float(np.mean(v)) for n, v in means.items()}}


def _report(summary, config, out_dir):
    lines = [f"| {n} | {m:.6f} |" for n, m in summary["mean_by_n"].items()]
    return "# tiny\n\n" + "\n".join(lines) + "\n"


@pytest.fixture
def tiny():
    exp = register(Experiment(
        name="tiny_test", description="a tiny test experiment",
        quick={"sizes": [5, 10], "n_streams": 3, "fail_after": None},
        full={"sizes": [5, 10, 20], "n_streams": 4, "fail_after": None},
        units=_units, run_unit=_run_unit, summarize=_summarize, report=_report,
        options=(Option("n_streams", int, "streams per size"),)))
    CALLS.clear()
    yield exp
    EXPERIMENTS.pop("tiny_test", None)


def test_unit_seed_depends_on_seed_and_key_only():
    assert unit_seed(0, (10, 1)) == unit_seed(0, (10, 1))
    assert unit_seed(0, (10, 1)) != unit_seed(0, (10, 2))
    assert unit_seed(0, (10, 1)) != unit_seed(1, (10, 1))


def test_registry_rejects_duplicates_and_unknown(tiny):
    with pytest.raises(ValueError, match="already registered"):
        register(Experiment("tiny_test", "", {}, {}, _units, _run_unit, _summarize, _report))
    with pytest.raises(ValueError, match="experiment must be one of"):
        run("no_such_experiment")
    with pytest.raises(ValueError, match="unknown setting"):
        tiny(quick=True, bogus=1, verbose=0)
    with pytest.raises(ValueError, match="resume needs"):
        tiny(quick=True, resume=True, verbose=0)


def test_quick_and_full_configs_and_overrides(tiny):
    r = tiny(quick=True, verbose=0)
    assert len(r.results) == 6 and r.config["quick"] is True
    r = tiny(verbose=0, n_streams=1)
    assert sorted(r.results) == [(5, 0), (10, 0), (20, 0)]
    assert np.isnan(r.results[(5, 0)]["nan"])


def test_interrupted_run_resumes_to_the_same_result(tiny, tmp_path):
    ref = tiny(quick=True, verbose=0)
    CALLS.clear()
    out = tmp_path / "run"
    with pytest.raises(Interrupt):
        tiny(quick=True, out=out, fail_after=4, verbose=0)
    journal = out / "cache" / "tiny_test-quick-seed0.jsonl"
    # the header line plus the four units finished before the interruption
    assert len(journal.read_text().splitlines()) == 5
    CALLS.clear()
    # a changed configuration refuses to resume the journal
    with pytest.raises(ValueError, match="another configuration"):
        tiny(quick=True, out=out, resume=True, n_streams=2, verbose=0)
    CALLS.clear()
    with pytest.raises(ValueError, match="another configuration"):
        tiny(quick=True, cache=journal, resume=True, seed=1, fail_after=4, verbose=0)
    CALLS.clear()
    # fail_after is part of the configuration: resume with the same one, never failing
    # again because the counter restarts and only two units are left
    resumed = tiny(quick=True, out=out, resume=True, fail_after=4, verbose=0)
    assert len(CALLS) == 2  # only the missing units were computed
    assert resumed.results == ref.results
    assert resumed.summary["mean_by_n"] == ref.summary["mean_by_n"]
    assert resumed.timing["cached"] == 4 and resumed.timing["computed"] == 2
    assert (out / "tiny_test.md").read_text() == ref.report
    summary = json.loads((out / "tiny_test_summary.json").read_text())
    assert summary["timing"]["units"] == 6
    # a new run without resume keeps the finished journal aside
    new = tiny(quick=True, out=out, n_streams=1, verbose=0)
    assert len(Journal(journal, "tiny_test", new.config, 0).load()[0]) == 2
    assert len((out / "cache" / "tiny_test-quick-seed0.jsonl.bak").read_text().splitlines()) == 7


def test_journal_survives_a_truncated_last_line(tmp_path):
    path = tmp_path / "j.jsonl"
    j = Journal(path, "x", {"a": 1}, 0).start(fresh=True)
    j.add((1, "a"), {"v": 1.5}, 0.1)
    j.close()
    with open(path, "a") as fh:
        fh.write('{"key": [2, "a"], "res')  # killed mid-write
    j = Journal(path, "x", {"a": 1}, 0).start(fresh=False)
    j.add((3, "a"), {"v": 3.0}, 0.1)
    j.close()
    results, _ = Journal(path, "x", {"a": 1}, 0).load()
    assert results == {(1, "a"): {"v": 1.5}, (3, "a"): {"v": 3.0}}


def test_resume_ignores_settings_that_only_add_units(tiny, tmp_path):
    exp = EXPERIMENTS.pop("tiny_test")
    from dataclasses import replace

    register(replace(exp, resume_ignores=("n_streams",)))
    try:
        small = run("tiny_test", quick=True, out=tmp_path, n_streams=2, verbose=0)
        CALLS.clear()
        big = run("tiny_test", quick=True, out=tmp_path, n_streams=3, resume=True, verbose=0)
        assert len(CALLS) == 2  # only the third stream of each size is new
        assert all(big.results[k] == v for k, v in small.results.items())
        CALLS.clear()
        again = run("tiny_test", quick=True, out=tmp_path, n_streams=2, resume=True, verbose=0)
        assert CALLS == [] and again.results == small.results
    finally:
        EXPERIMENTS.pop("tiny_test", None)
        EXPERIMENTS["tiny_test"] = exp


def test_parallel_run_matches_sequential(tiny):
    seq = tiny(quick=True, verbose=0)
    par = tiny(quick=True, verbose=0, n_jobs=2, backend="threading", chunk_size=2)
    assert par.results == seq.results


def test_progress_line_shows_time_left(tiny, capsys):
    from sklearn_vb._core.progress import Progress

    p = Progress(1, "reproduce tiny_test", 4, clock=iter([0.0, 10.0, 10.0]).__next__)
    assert "left ~30.0s" in p.line(1)
    tiny(quick=True, verbose=1)  # runs silently when fast, and does not fail


def test_command_line(tiny, tmp_path, capsys):
    assert main(["reproduce", "--list"]) == 0
    assert "tiny_test" in capsys.readouterr().out
    out = tmp_path / "cli"
    assert main(["reproduce", "tiny_test", "--quick", "--out", str(out), "--n-streams", "2",
                 "--seed", "3", "--quiet"]) == 0
    text = (out / "tiny_test.md").read_text()
    ref = tiny(quick=True, n_streams=2, seed=3, verbose=0)
    assert text == ref.report
    CALLS.clear()
    assert main(["reproduce", "tiny_test", "--quick", "--out", str(out), "--n-streams", "2",
                 "--seed", "3", "--resume", "--quiet"]) == 0
    assert CALLS == []  # everything came from the journal
    with pytest.raises(SystemExit):
        main(["reproduce", "tiny_test", "--bogus"])


def test_python_entry_points_are_the_registered_experiments():
    for name, exp in EXPERIMENTS.items():
        if name != "tiny_test":
            assert getattr(reproduce, name) is exp
