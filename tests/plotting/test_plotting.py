"""Pictures of fitted models: each function renders to a PNG with Agg, and what it draws
is checked (axes, labels, number of artists) against the fitted model."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch, Rectangle  # noqa: E402

from sklearn_vb import (  # noqa: E402
    VBDiscreteDAG,
    VBHiddenMarkov,
    VBLinearDynamicalSystem,
    VBMixtureFactorAnalysers,
)
from sklearn_vb.datasets import make_beal_dag, make_hmm_sequences, make_lds, make_lds_params  # noqa: E402
from sklearn_vb.model_selection import DAGStructureSearch, StructureSearch  # noqa: E402
from sklearn_vb.plotting import (  # noqa: E402
    hinton,
    plot_ard,
    plot_bound_trace,
    plot_lds_states,
    plot_parameters,
    plot_score_vs_size,
    plot_structure,
    plot_structure_search,
)
from sklearn_vb.scoring import ScoreResult  # noqa: E402

from tests.model_selection.test_model_selection import X_TOY, NoisyScorer, ToyModel  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _render(fig, tmp_path, name="fig.png"):
    path = tmp_path / name
    fig.savefig(path)
    assert path.stat().st_size > 1000
    return path


@pytest.fixture(scope="module")
def hmm_data():
    return make_hmm_sequences([0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]],
                              [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]], [60] * 4, random_state=0)


@pytest.fixture(scope="module")
def hmm(hmm_data):
    X, _, lengths = hmm_data
    return VBHiddenMarkov(n_components=3, n_init=3, keep_restarts=True,
                          random_state=0).fit(X, lengths=lengths)


@pytest.fixture(scope="module")
def lds_data():
    X, _ = make_lds(make_lds_params(2, 4, 0, random_state=0), [80], random_state=0)
    lds = VBLinearDynamicalSystem(n_states=3, fit_intercept=False, max_iter=150,
                                  random_state=0).fit(X)
    return lds, X


# ------------------------------------------------------------------ score vs size

def _big_search():
    # values near -2850 make long tick labels, which used to push the y label out
    return StructureSearch(ToyModel(), {"k": [1, 2, 3, 4, 5]},
                           scoring={"vb": "vb", "ais": NoisyScorer(shift=-2840, se=0.5)},
                           random_state=0).fit(X_TOY)


def test_score_plot_keeps_its_labels_inside_the_default_figure(tmp_path):
    ax = plot_score_vs_size(_big_search(), offset=None)
    fig = ax.figure
    _render(fig, tmp_path)
    renderer = fig.canvas.get_renderer()
    box = ax.yaxis.label.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert ax.xaxis.label.get_window_extent(renderer).y0 >= 0


def test_score_plot_best_markers_stay_visible_when_they_coincide(tmp_path):
    search = StructureSearch(ToyModel(), {"k": [1, 2, 3]},
                             scoring={"vb": "vb", "ais": NoisyScorer(shift=10.0, se=0.0)},
                             random_state=0).fit(X_TOY)
    ax = plot_score_vs_size(search, offset="best")
    _render(ax.figure, tmp_path)
    stars = [line for line in ax.get_lines() if line.get_marker() == "*"]
    assert len(stars) == 2
    # hollow, of different sizes: the second star rings the first instead of hiding it
    assert all(s.get_markerfacecolor() == "none" for s in stars)
    assert stars[1].get_markersize() > stars[0].get_markersize()


def test_score_plot_labels_alias_corrected_values_as_approximations():
    search = StructureSearch(ToyModel(), {"k": [1, 2, 3]},
                             scoring={"ais": NoisyScorer(se=0.1)}, alias_correction=True,
                             random_state=0).fit(X_TOY)
    assert np.any(search.results_["log_alias_correction_ais"] > 0)
    ax = plot_score_vs_size(search)
    (label,) = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ln S" in label and "approximation" in label and "lower" not in label


def test_score_plot_draws_unreliable_estimates_without_error_bars():
    search = StructureSearch(ToyModel(), {"k": [1, 2, 3, 4]},
                             scoring={"vb": "vb", "ais": NoisyScorer(se=0.5)},
                             random_state=0).fit(X_TOY)
    # the scorer flagged the estimate of candidate 2 (as UnreliableEstimateWarning does)
    res = search.score_results_[2]["ais"]
    search.score_results_[2]["ais"] = ScoreResult(
        res.method, res.log_evidence, res.bound, stderr=res.stderr,
        diagnostics={"unreliable_reasons": ["effective sample size 1.2"]})
    ax = plot_score_vs_size(search)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[1] == "ais (stochastic lower bound; 1 unreliable, no error bar)"
    segments = ax.containers[0].lines[2][0].get_segments()
    drawn = [seg for seg in segments if len(seg) == 2 and np.all(np.isfinite(seg))]
    assert len(drawn) == 3                            # no bar for the flagged point
    np.testing.assert_allclose([seg[1][1] - seg[0][1] for seg in drawn], 4 * 0.5)
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert len(crosses) == 1 and crosses[0].get_xdata()[0] == 3


# ------------------------------------------------------------------ bound traces

def test_bound_trace_draws_every_restart_and_the_kept_run(hmm, tmp_path):
    ax = plot_bound_trace(hmm)
    _render(ax.figure, tmp_path)
    lines = ax.get_lines()
    # n_init=3 restarts, each of the categorical default's three starts, and the kept run
    assert len(lines) == len(hmm.restarts_) + 1 == 10
    np.testing.assert_allclose(lines[-1].get_ydata(), hmm.lower_bounds_)
    assert lines[-1].get_linewidth() > lines[0].get_linewidth()
    assert ax.get_ylabel() == "lower bound F (nats)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["restarts", "kept run"]


def test_bound_trace_marks_births_and_deaths_of_the_mfa_search(tmp_path):
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(80, 1)) @ rng.normal(size=(1, 4))
                        + rng.normal(scale=0.1, size=(80, 4)) + c for c in (0, 8, 16)])
    mfa = VBMixtureFactorAnalysers(random_state=0, max_iter_epoch=60).fit(X)
    ax = plot_bound_trace(mfa)
    _render(ax.figure, tmp_path)
    history = mfa.search_history_
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "lower bound (search)"
    assert ("birth accepted" in labels) == bool(np.any(history["event"] == "accept"))
    accepted = [line for line in ax.get_lines() if line.get_marker() == "^"]
    if accepted:
        assert len(accepted[0].get_xdata()) == int(np.sum(history["event"] == "accept"))


def test_bound_trace_marks_pruned_lds_dimensions(lds_data, tmp_path):
    lds, _ = lds_data
    ax = plot_bound_trace(lds)
    _render(ax.figure, tmp_path)
    alpha = lds.hyperparameter_history_["alpha"]
    n_pruned = int(np.sum(np.isnan(alpha[-1]) & ~np.isnan(alpha[0])))
    vlines = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert (len(vlines) > 0) == (n_pruned > 0)


def test_bound_trace_needs_a_fitted_estimator():
    with pytest.raises(ValueError, match="lower_bounds_"):
        plot_bound_trace(VBHiddenMarkov())


# ------------------------------------------------------------------ Hinton diagrams

def test_hinton_draws_one_square_per_nonzero_entry_with_area_proportional(tmp_path):
    W = np.array([[1.0, -0.25, 0.0], [0.5, 0.0, -1.0]])
    ax = hinton(W, title="W", xticklabels=["a", "b", "c"])
    _render(ax.figure, tmp_path)
    squares = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(squares) == 4 and ax.get_title() == "W"
    areas = sorted(p.get_width() * p.get_height() for p in squares)
    np.testing.assert_allclose(areas, 0.81 * np.array([0.25, 0.5, 1.0, 1.0]))
    colours = {tuple(p.get_facecolor()[:3]) for p in squares}
    assert colours == {(1.0, 1.0, 1.0), (0.0, 0.0, 0.0)}   # signs
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="2-D"):
        hinton(np.zeros((2, 2, 2)))


def test_parameters_of_each_estimator(hmm, lds_data, tmp_path):
    axes = plot_parameters(hmm)
    _render(axes[0].figure, tmp_path)
    assert [a.get_title() for a in axes] == ["transition matrix", "emission probabilities"]
    assert len(axes[0].patches) == np.count_nonzero(hmm.transmat_)
    lds, _ = lds_data
    axes = plot_parameters(lds)
    assert [a.get_title() for a in axes] == ["A (dynamics)", "C (output)"]
    assert len(axes[1].patches) == np.count_nonzero(lds.C_mean_)
    dag = VBDiscreteDAG(n_components=2, random_state=0, n_init=1).fit(
        make_beal_dag(n_samples=100, random_state=0))
    axes = plot_parameters(dag)
    assert len(axes) == len(dag.cpts_) and axes[1].get_title() == "p(x0 | parents)"
    with pytest.raises(ValueError, match="plot_parameters"):
        plot_parameters(StructureSearch(ToyModel(), {"k": [1]}).fit(X_TOY))


# ------------------------------------------------------------------ ARD, LDS states

def test_ard_precisions_of_an_lds(lds_data, tmp_path):
    lds, _ = lds_data
    ax = plot_ard(lds)
    _render(ax.figure, tmp_path)
    k = lds.n_states_
    assert ax.get_yscale() == "log" and len(ax.patches) == 2 * k
    heights = sorted(p.get_height() for p in ax.patches)
    np.testing.assert_allclose(heights, np.sort(np.concatenate([lds.alpha_, lds.gamma_])))
    hatched = sum(bool(p.get_hatch()) for p in ax.patches)
    assert hatched == 2 * int(np.sum(~np.asarray(lds.active_states_)))


def test_ard_precisions_of_an_mfa(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 1)) @ rng.normal(size=(1, 4)) + rng.normal(scale=0.1, size=(150, 4))
    mfa = VBMixtureFactorAnalysers(search=False, random_state=0).fit(X)
    ax = plot_ard(mfa)
    _render(ax.figure, tmp_path)
    finite = np.isfinite(mfa.ard_precisions_)
    assert len(ax.patches) == int(finite.sum())
    assert ax.get_xlabel() == "loading column j"


def test_lds_states_with_bands(lds_data, tmp_path):
    lds, X = lds_data
    axes = plot_lds_states(lds, X, dims=[0, 1])
    _render(axes[0].figure, tmp_path)
    assert len(axes) == 2 and axes[-1].get_xlabel() == "time step"
    for d, ax in enumerate(axes):
        assert len(ax.collections) == 2          # filtered and smoothed bands
        smoothed = ax.get_lines()[1]
        np.testing.assert_allclose(smoothed.get_ydata(), lds.transform(X)[:, d])
        filt, smooth = (c.get_paths()[0].get_extents() for c in ax.collections)
        # smoothing never widens the band: its total height is at most the filter's
        assert smooth.height <= filt.height + 1e-9
    with pytest.raises(ValueError, match="dims"):
        plot_lds_states(lds, X, dims=[7])
    with pytest.raises(ValueError, match="both be False"):
        plot_lds_states(lds, X, filtered=False, smoothed=False)


# ------------------------------------------------------------------ structures

def test_structure_graph_draws_nodes_and_edges(tmp_path):
    ax = plot_structure({"h": [], "a": ["h"], "b": ["h", "a"]}, hidden={"h"}, title="g")
    _render(ax.figure, tmp_path)
    circles = [p for p in ax.patches if isinstance(p, Circle)]
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    assert len(circles) == 3 and len(arrows) == 3
    shaded = [c for c in circles if c.get_facecolor()[0] < 1]
    assert len(shaded) == 1
    assert sorted(t.get_text() for t in ax.texts) == ["a", "b", "h"]
    # adjacency matrix and an undirected edge list
    ax = plot_structure(np.array([[0, 1], [0, 0]]))
    assert len([p for p in ax.patches if isinstance(p, FancyArrowPatch)]) == 1
    ax = plot_structure([(0, 1), (1, 2)], directed=False)
    assert all(p.get_arrowstyle().__class__.__name__ == "Curve"
               for p in ax.patches if isinstance(p, FancyArrowPatch))


def test_structure_search_draws_the_best_structures_with_scores(tmp_path):
    X = make_beal_dag(n_samples=100, random_state=0)
    candidates = [{"h": [], 0: ["h"], 1: ["h"], 2: ["h"], 3: ["h"]},
                  {"h": [], 0: ["h"], 1: ["h"], 2: [], 3: []},
                  {"h": [], 0: ["h"], 1: [], 2: [], 3: []}]
    est = VBDiscreteDAG(cardinalities={"h": 2, 0: 5, 1: 5, 2: 5, 3: 5}, hidden="h",
                        n_init=1, random_state=0)
    search = DAGStructureSearch(est, search="exhaustive", structures=candidates,
                                scoring=["vb", "bic"], random_state=0).fit(X)
    axes = plot_structure_search(search, n_best=2)
    _render(axes[0].figure, tmp_path)
    order = np.argsort(-search.results_["score_vb"])
    assert axes[0].get_title() == f"#1: vb = {search.results_['score_vb'][order[0]]:.2f}"
    n_edges = [len([p for p in ax.patches if isinstance(p, FancyArrowPatch)]) for ax in axes]
    assert n_edges == [int(search.results_["n_edges"][i]) for i in order[:2]]
    assert any("bic =" in t.get_text() for t in axes[0].texts)
    with pytest.raises(ValueError, match="structure"):
        plot_structure_search(StructureSearch(ToyModel(), {"k": [1]}).fit(X_TOY))
