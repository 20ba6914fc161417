"""Figures drawn from the benchmark results: ``python -m benchmarks.figures``.

* ``results/scaling.png``: seconds per iteration against problem size, one panel per
  curve of ``results/scaling.json`` (log-log, with a dotted line of slope 1 through the
  first point: a curve parallel to it grows linearly);
* ``results/scaling_memory.png``: the extra peak resident memory of the same fits;
* ``results/selection.png``: the structure-selection panels, one bar per library and
  problem with a known truth, its exact-recovery rate over the seeds, one panel per
  family (``results/selection.json``; ``selection_quick.png`` from the quick panels);
* ``results/scale.png``: held-out log-likelihood per symbol against the wall time and
  the CPU time of batch VBEM, online VB and hmmlearn's EM on many categorical sequences
  (``scale-hmm-categorical`` in ``results/scale.json``), with the band within 0.5 % of
  batch VBEM's final value;
* ``results/<stem>.png`` for every other results file with ratios: the ratio ours /
  theirs of each workload and peer as a bar on a log scale (left of 1: we are faster).

The documentation's benchmarks page shows every ``results/*.png`` under the results
file whose name it starts with.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .harness import load_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: the axis label of each scaling curve's size
_SIZE_LABELS = {
    "scaling-hmm-T": "T (frames), K = 10",
    "scaling-hmm-K": "K (states), T = 10^4",
    "scaling-lds-T": "T (frames), k = 4, p = 10",
    "scaling-lds-k": "k (states), p = 2k, T = 10^4",
    "scaling-dag-n": "n (cases), Beal's DAG",
    "scaling-dag-hidden": "hidden states, n = 5000",
    "scaling-mfa-N": "N (rows), p = 10",
    "scaling-mfa-p": "p (dimensions), N = 4000",
}


def _curve(result, key):
    """``(sizes, values)`` of the rows that ran; ``key`` a metric or None for seconds."""
    sizes, values = [], []
    for m in result["measurements"]:
        value = m.metrics.get(key) if key else m.median_s
        if m.status == "ok" and value is not None and value > 0:
            sizes.append(float(m.metrics["x"]))
            values.append(value)
    return sizes, values


def _workload_panels(results, prefix, n_cols, panel_size):
    """``(plt, fig, axes, results)`` for the workloads named ``prefix*``: one axis each in
    rows of ``n_cols`` (the unused ones hidden); None when there is no such workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [r for r in results if r["workload"].startswith(prefix)]
    if not results:
        return None
    n_rows = -(-len(results) // n_cols)
    width, height = panel_size
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width * n_cols, height * n_rows),
                             squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.set_visible(False)
    return plt, fig, axes, results


def scaling_figure(results, key, ylabel, path):
    """One panel per workload; ``key`` a metric name or None for the timed seconds."""
    from matplotlib.ticker import NullFormatter

    panels = _workload_panels(results, "scaling-", n_cols=4, panel_size=(3.2, 2.8))
    if panels is None:
        return None
    plt, fig, axes, results = panels
    for ax, result in zip(axes.flat, results):
        sizes, values = _curve(result, key)
        name = result["workload"]
        ax.set_title(name.replace("scaling-", ""), fontsize=10)
        ax.set_xlabel(_SIZE_LABELS.get(name, "size"), fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        if not sizes:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            continue
        ax.loglog(sizes, values, "o-", color="C0")
        ax.loglog([sizes[0], sizes[-1]], [values[0], values[0] * sizes[-1] / sizes[0]], ":",
                  color="0.5", label="slope 1")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def selection_figure(results, path):
    """Recovery rate per problem and library, one panel per family."""
    import numpy as np

    panels = _workload_panels(results, "selection-", n_cols=3, panel_size=(5.0, 3.4))
    if panels is None:
        return None
    plt, fig, axes, results = panels
    for ax, result in zip(axes.flat, results):
        ax.set_title(result["workload"].replace("selection-", ""), fontsize=10)
        ms = [m for m in result["measurements"] if m.status == "ok"]
        problems = []
        for m in ms:
            for name, s in m.metrics.get("panel", {}).items():
                if s.get("recovery_rate") is not None and name not in problems:
                    problems.append(name)
        if not problems or not ms:
            ax.text(0.5, 0.5, "no problem with a known truth", ha="center", va="center",
                    transform=ax.transAxes, fontsize=8)
            continue
        width = 0.8 / len(ms)
        x = np.arange(len(problems))
        for i, m in enumerate(ms):
            panel = m.metrics.get("panel", {})
            rates = [panel.get(p, {}).get("recovery_rate") for p in problems]
            heights = [np.nan if r is None else r for r in rates]
            bars = ax.bar(x + (i - (len(ms) - 1) / 2) * width, heights, width, label=m.label,
                          color=f"C{i}")
            # a rate of 0 draws no bar: print every value on its bar
            ax.bar_label(bars, fmt="%.2f", fontsize=5)
        ax.set_xticks(x)
        ax.set_xticklabels(problems, rotation=35, ha="right", fontsize=7)
        ax.set_ylim(0, 1.15)
        ax.set_ylabel("exact recovery rate", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def scale_figure(results, path):
    """Held-out log-likelihood against the wall time and the CPU time of the
    ``scale-hmm-categorical`` rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in results if r["workload"] == "scale-hmm-categorical"]
    if not rows:
        return None
    measurements = [m for m in rows[0]["measurements"] if m.status == "ok" and m.trace]
    if not measurements:
        return None
    clocks = [("seconds", "wall time of the fit (s)")]
    if all("cpu_seconds" in m.trace for m in measurements):
        clocks.append(("cpu_seconds", "CPU time of the fit (s)"))
    fig, axes = plt.subplots(1, len(clocks), figsize=(6.4 * len(clocks), 4.2),
                             squeeze=False, sharey=True)
    target = measurements[0].metrics["heldout_loglik_per_symbol"]
    for ax, (clock, label) in zip(axes[0], clocks):
        for m in measurements:
            ax.plot(m.trace[clock], m.trace["heldout"], marker=".", label=m.label)
        ax.axhline(target - 0.005 * abs(target), color="grey", linestyle=":",
                   label="within 0.5 % of batch VBEM's final value")
        ax.set_xscale("log")
        ax.set_xlabel(label)
    axes[0][0].set_ylabel("held-out log-likelihood per symbol")
    sizes = measurements[0].metrics
    fig.suptitle(f"categorical HMM, K = {sizes['n_components']}, {sizes['n_symbols']:,} "
                 f"symbols in {sizes['n_sequences']:,} sequences", fontsize=10)
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


#: results files without a ratio figure: their figures are drawn by the functions above,
#: or (``machine``) their ratios compare a kernel with reference operations, not peers
_NO_RATIO_FIGURE = ("selection", "selection_quick", "scale", "scaling", "latest", "machine")


def ratio_figure(results, path, title=None):
    """One bar per workload and peer: the time ratio ours / theirs on a log scale, with
    the line at 1; None (nothing drawn) when no measurement has a ratio."""
    bars = [(f"{r['workload']}: {m.label}", m.ratio_ours_over_theirs)
            for r in results for m in r["measurements"]
            if m.status == "ok" and m.ratio_ours_over_theirs]
    if not bars:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, ratios = zip(*bars)
    fig, ax = plt.subplots(figsize=(7.2, 0.9 + 0.28 * len(bars)))
    y = range(len(bars))[::-1]
    ax.barh(list(y), ratios, color=["tab:green" if v < 1 else "tab:red" for v in ratios])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("time ours / theirs (log scale; below 1: sklearn_vb is faster)")
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.figures", description=__doc__)
    parser.add_argument("--results-dir", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    directory = Path(args.results_dir)
    for stem in ("selection", "selection_quick"):
        source = directory / f"{stem}.json"
        if source.is_file():
            path = selection_figure(load_results(source), directory / f"{stem}.png")
            if path is not None:
                print(f"written: {path}")
    source = directory / "scale.json"
    if source.is_file():
        path = scale_figure(load_results(source), directory / "scale.png")
        if path is not None:
            print(f"written: {path}")
    for source in sorted(directory.glob("*.json")):
        if source.stem in _NO_RATIO_FIGURE:
            continue
        try:
            results = load_results(source)
        except (KeyError, TypeError):  # a file of settings and totals, not of workloads
            continue
        path = ratio_figure(results, directory / f"{source.stem}.png")
        if path is not None:
            print(f"written: {path}")
    source = directory / "scaling.json"
    if not source.is_file():
        print(f"no {source}: run python -m benchmarks 'scaling-*' first")
        return 0
    results = load_results(source)
    for key, ylabel, name in [(None, "seconds per iteration", "scaling.png"),
                              ("extra_peak_mb", "extra peak memory (MB)", "scaling_memory.png")]:
        path = scaling_figure(results, key, ylabel, directory / name)
        if path is not None:
            print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
