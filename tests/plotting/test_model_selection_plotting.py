"""The score-vs-size plot helper and the HMM structure-search example (quick mode)."""

import importlib.util
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from sklearn_vb.model_selection import StructureSearch  # noqa: E402
from sklearn_vb.plotting import plot_score_vs_size  # noqa: E402

from tests.model_selection.test_model_selection import X_TOY, NoisyScorer, ToyModel  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "model_selection_hmm_states.py"


def test_plot_draws_every_score_with_error_bars_where_stochastic():
    search = StructureSearch(ToyModel(), {"k": [1, 2, 3, 4, 5]},
                             scoring={"vb": "vb", "ais": NoisyScorer(se=0.5)},
                             random_state=0).fit(X_TOY)
    fig, ax = plt.subplots()
    assert plot_score_vs_size(search, ax=ax) is ax  # size parameter found automatically
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["vb (lower bound)", "ais (stochastic lower bound)"]
    lines = [l for l in ax.get_lines() if l.get_marker() == "o"]
    np.testing.assert_allclose(lines[0].get_xdata(), [1, 2, 3, 4, 5])
    np.testing.assert_allclose(lines[0].get_ydata(), search.results_["score_vb"])
    np.testing.assert_allclose(lines[1].get_ydata(), search.results_["score_ais"])
    # exactly one error-bar container, for the stochastic score, of +-2 standard errors
    assert len(ax.containers) == 1
    segments = ax.containers[0].lines[2][0].get_segments()
    heights = [seg[1][1] - seg[0][1] for seg in segments]
    np.testing.assert_allclose(heights, 4 * 0.5)
    stars = [l for l in ax.get_lines() if l.get_marker() == "*"]
    assert [s.get_xdata()[0] for s in stars] == [3, 4]
    assert ax.get_xlabel() == "k"
    plt.close(fig)


def test_plot_offset_and_errors():
    search = StructureSearch(ToyModel(), {"k": [1, 2, 3]}).fit(X_TOY)
    fig, ax = plt.subplots()
    plot_score_vs_size(search, "k", offset="best", ax=ax)
    assert max(ax.get_lines()[0].get_ydata()) == 0.0
    with pytest.raises(ValueError, match="param='nope'"):
        plot_score_vs_size(search, "nope", ax=ax)
    with pytest.raises(ValueError, match="not a score"):
        plot_score_vs_size(search, "k", scores=["bic"], ax=ax)
    with pytest.raises(ValueError, match="fitted StructureSearch"):
        plot_score_vs_size(object())
    plt.close(fig)
    assert math.isfinite(search.best_score_)


def test_hmm_states_example_quick(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("model_selection_hmm_states", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "states.png"
    search = module.main(["--quick", "--output", str(out)])
    assert out.exists() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert search.best_params_ == {"n_components": 3}
    assert "chosen number of states: 3" in capsys.readouterr().out
