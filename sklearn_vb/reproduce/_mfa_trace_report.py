"""The Fig 4.12 part of the ``reproduce mfa`` report: importance-sampling estimates and
classification errors after each accepted epoch of one VB search on the digits 0-2
(unit :func:`._mfa_is.search_trace_unit`)."""

from __future__ import annotations

import numpy as np

from ._report import Verdict, markdown_table, pyplot, save_figure

__all__ = ["trace_section", "trace_verdicts"]


def _arrays(r):
    pts = r["points"]
    return {k: np.array([p[k] for p in pts], dtype=float)
            for k in ("iteration", "F", "log_evidence", "param_bound", "train_error",
                      "test_error", "n_components")}


def _figure(r, out_dir):
    a = _arrays(r)
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    ax = axes[0]
    ax.plot(a["iteration"], a["log_evidence"], "ko-", ms=3, label="ln p̂(Y)")
    ax.plot(a["iteration"], a["param_bound"], "b^--", ms=3, label="F(π, Λ̃)")
    ax.plot(a["iteration"], a["F"], "rs-", ms=3, label="F(π, ν, Λ̃, {x, s})")
    ax.set_xlabel("VBEM iteration")
    ax.set_ylabel("nats")
    ax.legend(fontsize=7, loc="center right", bbox_to_anchor=(1.0, 0.6))
    ax2 = ax.twinx()
    ax2.plot(a["iteration"], a["train_error"], "g:", label="train error")
    ax2.plot(a["iteration"], a["test_error"], "m-.", label="test error")
    ax2.set_ylabel("fraction classification error")
    ax2.legend(fontsize=7, loc="center right", bbox_to_anchor=(1.0, 0.3))
    ax.set_title("(a) after each accepted epoch", fontsize=9)
    ax = axes[1]
    ax.plot(a["iteration"], a["log_evidence"] - a["F"], "rs-", ms=3, label="ln p̂ − F")
    ax.plot(a["iteration"], a["log_evidence"] - a["param_bound"], "b^--", ms=3,
            label="ln p̂ − F(π, Λ̃)")
    ax.set_xlabel("VBEM iteration")
    ax.set_ylabel("nats")
    ax.legend(fontsize=7)
    ax.set_title("(b) the gaps", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out_dir, "mfa_fig4_12_search_is.png")


def _stats(r):
    a = _arrays(r)
    d_lp = np.diff(a["log_evidence"])
    d_err = np.diff(a["test_error"])
    up = d_lp > 0
    gap = a["log_evidence"] - a["F"]
    gap_p = a["log_evidence"] - a["param_bound"]
    return {"n": len(a["F"]),
            "corr_F": (float(np.corrcoef(a["F"], a["log_evidence"])[0, 1])
                       if len(a["F"]) > 2 else float("nan")),
            "gap_min": float(gap.min()), "gap_max": float(gap.max()),
            "F_range": float(a["F"].max() - a["F"].min()),
            "share_params": float(np.max(gap_p / np.where(gap != 0, gap, np.nan))),
            "err_diff": float(np.mean(np.abs(a["train_error"] - a["test_error"]))),
            "up": int(up.sum()), "up_err_down": int(np.sum(up & (d_err <= 0))),
            "err_first": float(a["test_error"][0]), "err_last": float(a["test_error"][-1])}


def trace_verdicts(summary):
    """The rows of the paper-says table for Fig 4.12."""
    r = summary.get("search_trace")
    if not r or len(r["points"]) < 2:
        return []
    st = _stats(r)
    return [
        Verdict("§4.7, Fig 4.12: F stays close to ln p̂ and moves in tandem with it through "
                "the search",
                f"{st['n']} models (each accepted epoch and the final fit): correlation of F "
                f"with ln p̂ {st['corr_F']:.3f}; the gap ln p̂ − F between "
                f"{st['gap_min']:.0f} and {st['gap_max']:.0f} nats while F rises by "
                f"{st['F_range']:.0f}", "yes" if st["corr_F"] > 0.95 else "partly"),
        Verdict("§4.7, Fig 4.12: F(π, Λ̃) very close to ln p̂ (most of the gap is the KL "
                "over ν, x, s)",
                f"ln p̂ − F(π, Λ̃) at most {st['share_params']:.0%} of ln p̂ − F",
                "yes" if st["share_params"] < 0.5 else "no"),
        Verdict("§4.7, Fig 4.12: training and test errors about equal and moving together; "
                "rises of ln p̂ mostly come with falls of the test error",
                f"mean absolute difference of training and test error {st['err_diff']:.3f}; test error "
                f"{st['err_first']:.3f} → {st['err_last']:.3f}; of {st['up']} rises of ln p̂, "
                f"{st['up_err_down']} with the test error not rising",
                "yes" if st["err_diff"] < 0.05 and st["up_err_down"] >= 0.5 * st["up"]
                else "partly"),
    ]


def trace_section(summary, config, out_dir):
    """The report's Fig 4.12 section ('' when the unit did not run)."""
    r = summary.get("search_trace")
    if not r:
        return ""
    rows = [[int(p["iteration"]), p["n_components"], f"{p['F']:.1f}",
             f"{p['log_evidence']:.1f} ± {p['stderr']:.1f}", f"{p['param_bound']:.1f}",
             f"{p['train_error']:.3f}", f"{p['test_error']:.3f}",
             "final" if p["final"] else f"{p['replay_gap']:.1e}"] for p in r["points"]]
    table = markdown_table(["iteration", "S", "F", "ln p̂ ± s.e.", "F(π, Λ̃)", "train error",
                            "test error", "replay − search F"], rows)
    return f"""
### Through the search (Fig 4.12)

The thesis trained one unsupervised VB MFA on 700 images of each of the digits 0, 1, 2,
recorded q(π)q(Λ̃) after every accepted epoch and estimated, off line, ln p(Y) and the
parameter-only bound F(π, Λ̃) by importance sampling from q (100 draws), beside the bound
F that guides the search and the training and test classification errors (each analyser
labelled by its majority class).  Here: the unsupervised search (k_max = 6, as §4.6.1) on the
{r['n_points']} training images of the digits 0-2 (test: their {r['n_test']} held-out images),
{r['n_births_accepted']} of {r['n_births_proposed']} proposed births accepted;
{config['is_digits_runs']} runs of {config['is_digits_samples']} draws from q per model.  The
model after an accepted epoch is the search replayed with `max_iter` set to the iteration of
that acceptance (the search is deterministic given `random_state` and stops right after the
epoch; the last column is the replay's F minus the F the full search recorded there, 0 when
the replay is exact), so nothing in the package records states for this; the last row is
the final fit.  Panel (b) shows the two gaps where the thesis rescaled the axis of (a).

{table}

{_figure(r, out_dir)}
"""
