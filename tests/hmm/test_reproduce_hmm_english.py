"""``reproduce hmm`` quick mode, §3.5.2 of Beal (2003): ML, MAP and VB HMMs telling
forwards from backwards sentences of *Alice's Adventures in Wonderland*."""

import numpy as np
import pytest

from sklearn_vb import reproduce
from sklearn_vb.datasets import fetch_alice_text


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    try:
        fetch_alice_text()
    except FileNotFoundError:
        pytest.skip("the text is not in the data directory (sklearn_vb.datasets."
                    "fetch_alice_text(download=True) fetches it)")
    return reproduce.hmm(quick=True, out=tmp_path_factory.mktemp("hmm_english"), verbose=0,
                         sections="english")


def _point(run, method, n, k):
    u0 = run.config["english_canonical"][2]
    (m,) = [m for m in run.summary["english"]["medians"]
            if m["method"] == method and m["n"] == n and m["k"] == k
            and (method == "ml" or m["u0"] == u0)]
    return m


def test_grid_and_restarts(run):
    config = run.config
    n0, k0, _ = config["english_canonical"]
    expected = {(n, k0) for n in config["english_n"]} | {(n0, k) for k in config["english_k"]}
    assert {(key[1], key[2]) for key in run.results} == expected
    assert {key[0] for key in run.results} == {"english", "english_check"}
    assert [key for key in run.results if key[0] == "english_check"] == [
        ("english_check", n0, k0, 0)]
    for m in run.summary["english"]["medians"]:
        assert m["restarts"] == config["english_restarts"]


def test_vb_beats_map_on_test_likelihood_with_fewest_sentences(run):
    n0, k0, _ = run.config["english_canonical"]
    n_min = min(run.config["english_n"])
    vb, map_ = _point(run, "vb", n_min, k0), _point(run, "map", n_min, k0)
    assert vb["logp_forwards"] >= map_["logp_forwards"]


def test_rates_and_log_probabilities_are_sensible(run):
    for m in run.summary["english"]["medians"]:
        assert 0.0 <= m["discrimination"] <= 1.0
        if m["method"] == "ml":
            continue
        # better than the uniform model over 27 symbols, worse than certainty
        assert -np.log(27) < m["logp_forwards"] < -1.0
        assert -np.log(27) < m["logp_backwards"] < -1.0
        # the thesis: VB and MAP tell the directions apart well above chance
        assert m["discrimination"] > 0.8
    for key, r in run.results.items():
        if key[0] != "english":
            continue
        for entry in [r["ml"], *r["map"].values(), *r["vb"].values()]:
            assert 0.0 <= entry["discrimination"] <= 1.0
            assert entry["logp_forwards"] < 0 and np.isfinite(entry["logp_forwards"])
        # the floor costs ML dearly on symbols and transitions it never saw
        assert r["ml"]["logp_forwards"] < min(e["logp_forwards"] for e in r["vb"].values())
    # more training sentences give higher test likelihood
    k0 = run.config["english_canonical"][1]
    ns = sorted(run.config["english_n"])
    for method in ("ml", "map", "vb"):
        assert _point(run, method, ns[-1], k0)["logp_forwards"] > \
            _point(run, method, ns[0], k0)["logp_forwards"]


def test_each_unit_is_reproducible(run):
    key = sorted(run.results)[0]
    again = reproduce.get_experiment("hmm").run_unit(key, run.config, 12345)
    first = reproduce.get_experiment("hmm").run_unit(key, run.config, 12345)
    assert again == first


def test_report_and_figure_are_written(run):
    assert "§3.5.2" in run.report and "are exactly" in run.report
    assert "VB outperforms MAP in test likelihood" in run.report
    for name in ("hmm_fig3_4_english.png", "hmm.md"):
        assert (run.out / name).exists()


def test_sections_follow_the_text(tmp_path):
    exp = reproduce.get_experiment("hmm")
    missing = str(tmp_path / "alice.txt")
    config = dict(exp.config(quick=True, english_text=missing), seed=0)
    assert {key[0] for key in exp.units(config)} == {"start"}
    with pytest.raises(FileNotFoundError, match="does not exist"):
        exp.units(dict(config, sections="english"))
    with pytest.raises(ValueError, match="sections must be"):
        exp.units(dict(config, sections="english,chapter6"))


def test_whole_grid_section(tmp_path):
    """Grid mode fits every (n, k, u0) and reports VB − MAP at each from the medians."""
    try:
        fetch_alice_text()
    except FileNotFoundError:
        pytest.skip("the text is not in the data directory")
    run = reproduce.hmm(quick=True, out=tmp_path, verbose=0, sections="english",
                        english_grid="grid", english_restarts=1)
    config = run.config
    medians = {(m["method"], m["u0"], m["n"], m["k"]): m for m in run.summary["english"]["medians"]}
    assert "### The whole grid" in run.report
    for u0 in config["english_u0"]:
        for n in config["english_n"]:
            gaps = [medians[("vb", u0, n, k)]["logp_forwards"]
                    - medians[("map", u0, n, k)]["logp_forwards"] for k in config["english_k"]]
            assert np.all(np.isfinite(gaps))
            assert f"| {n} | " + " | ".join(f"{g:+.3f}" for g in gaps) + " |" in run.report
    assert f"of {len(config['english_n']) * len(config['english_k'])} at u0 = " in run.report


def test_vb_scored_by_the_averaged_predictive_and_its_bound(run):
    """VB is also scored by its predictive averaged over q (SMC) and by the thesis's
    bound on it (eq. 3.84); the discrimination by the averaged predictive is on the
    slices, which in quick mode hold every point."""
    for m in run.summary["english"]["medians"]:
        if m["method"] != "vb":
            assert "logp_forwards_smc" not in m
            continue
        assert -np.log(27) < m["logp_forwards_smc"] < -1.0
        # the bound is far below: small Dirichlet counts make exp E[ln theta] tiny
        assert m["logp_forwards_bound"] < m["logp_forwards_smc"]
        assert 0.0 <= m["discrimination_smc"] <= 1.0
    check = run.summary["english"]["check"]
    assert [r["particles"] for r in check["smc"]] == run.config["english_check_particles"]
    for r in check["smc"]:
        assert len(r["logp"]) == 2 and r["spread"] >= 0.0
    assert check["bound"]["logp"] < min(min(r["logp"]) for r in check["smc"])
    assert "### How VB's averaged predictive is estimated" in run.report
    assert "[VB by the predictive averaged over q (eq. 3.81)]" in run.report

