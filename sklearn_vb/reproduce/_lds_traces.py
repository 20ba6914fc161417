"""Beal (2003) Figs. 5.5, 5.7 and 5.8 for ``reproduce lds``: the ARD hyperparameters and
the bound F along the VBEM iterations.

The traces are read from fits the experiment makes anyway (the estimator records them in
``hyperparameter_history_`` and ``lower_bounds_``): the §5.4.1 fit on the longest
sequence (Fig. 5.5, the thesis's T = 300) and the §5.4.2 fit on the first input-driven
data set (Figs. 5.7 and 5.8; the thesis had one data set).

The package's VBEM differs from the thesis's in three ways that shape these traces: the
exact hyperparameter updates (a switched-off column's precision reaches its cap in one
step, where the thesis's fixed-point update raises it by about T per iteration), the
rotation and translation moves, and the removal of dead state dimensions.  The
``traces`` section therefore also refits both problems with the thesis's algorithm
(:data:`THESIS_UPDATES`: fixed-point updates, eqs. 5.133-5.138, no moves), from the same
start (the random state of the fit it repeats), and draws both.  For §5.4.1 the thesis
names no staggered schedule, so that refit optimises every hyperparameter from the first
iteration and the order in which A and C lose a dimension is the algorithm's own; for
§5.4.2 it keeps the thesis's schedule (10, 20, 30).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..lds import VBLinearDynamicalSystem
from ._lds_inputs import OFF_PRECISION, TRACE_KEYS, fit_trace, input_data
from ._report import markdown_table, pyplot, save_figure
from ._runner import unit_seed

__all__ = ["THESIS_UPDATES", "trace_units", "run_trace_unit", "summarize_traces",
           "traces_verdicts", "traces_report"]

#: the thesis's VBEM: fixed-point hyperparameter updates and no moves
THESIS_UPDATES = {"hyperparameter_update": "fixed-point", "prune_states": False,
                  "rotations": False, "translations": False}
#: §5.4.1 refit: every hyperparameter optimised from the first iteration
DIMENSION_SCHEDULE = (0, 0, 0)
INPUT_SCHEDULE = (10, 20, 30)
#: half-width (iterations) of the window in which a peak of the bound's gain counts as a
#: local maximum, and in which it is matched with a column being switched off
PEAK_WINDOW = 10
VARIANTS = (("as_fitted", "as fitted (package defaults)"),
            ("thesis_updates", "thesis's updates (fixed-point, no moves)"))


def trace_units(config):
    return [("traces", "dimension", "fixed-point"), ("traces", "inputs", "fixed-point")]


def run_trace_unit(key, config, Y):
    """One refit with the thesis's updates; ``Y`` is the §5.4.1 sequence (used by the
    ``dimension`` unit).  The random state is that of the fit being repeated, so both
    start from the same initial state statistics."""
    _, problem, _ = key
    run_seed = int(config["seed"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if problem == "dimension":
            T = max(int(t) for t in config["lengths"])
            est = VBLinearDynamicalSystem(
                int(config["k_fit"]), fit_intercept=False, ard_check=False,
                hyperparameter_schedule=DIMENSION_SCHEDULE, max_iter=int(config["max_iter"]),
                tol=0.0, random_state=unit_seed(run_seed, ("dimension", T, "vb")),
                **THESIS_UPDATES).fit(Y[:T])
        else:
            X, U, _ = input_data(config, 0)
            est = VBLinearDynamicalSystem(
                int(config["input_k_fit"]), fit_intercept=False, ard_check=False,
                hyperparameter_schedule=INPUT_SCHEDULE, max_iter=int(config["input_max_iter"]),
                tol=0.0, random_state=unit_seed(run_seed, ("inputs", 0, "vb")),
                **THESIS_UPDATES).fit(X, U=U)
    return {"trace": fit_trace(est), "n_effective": int(est.n_effective_states_)}


# ----------------------------------------------------------------------------- summaries
def _off_iteration(values):
    """The first iteration (1-based) from which a precision stays at or above
    ``OFF_PRECISION`` (a removed dimension, NaN, counts as off); None if it never does."""
    v = np.asarray(values, dtype=float)
    off = np.isnan(v) | (v >= OFF_PRECISION)
    if not off[-1]:
        return None
    on = np.flatnonzero(~off)
    return int(on[-1] + 2) if on.size else 1


def _removed_iteration(values):
    v = np.asarray(values, dtype=float)
    gone = np.flatnonzero(np.isnan(v))
    return int(gone[0] + 1) if gone.size else None


def _columns(trace, name):
    return np.asarray(trace[name], dtype=float).reshape(len(trace["bound"]), -1)


def _switch_offs(trace):
    """``{name: [off iteration or None per column]}`` for alpha, beta, gamma, delta."""
    return {name: [_off_iteration(col) for col in _columns(trace, name).T]
            for name in TRACE_KEYS}


def _dimension_summary(trace):
    """Fig. 5.5: which state dimensions become extinct (both alpha and gamma switched
    off), when in A and when in C, and where the survivors end."""
    alpha, gamma = _columns(trace, "alpha"), _columns(trace, "gamma")
    dims = []
    for j in range(alpha.shape[1]):
        a_off, g_off = _off_iteration(alpha[:, j]), _off_iteration(gamma[:, j])
        last = np.flatnonzero(~np.isnan(alpha[:, j]))[-1]
        dims.append({"alpha_off": a_off, "gamma_off": g_off,
                     "removed": _removed_iteration(alpha[:, j]),
                     "extinct": a_off is not None and g_off is not None,
                     "last_log_inv_alpha": float(-np.log(alpha[last, j])),
                     "last_log_inv_gamma": float(-np.log(gamma[last, j]))})
    extinct = [d for d in dims if d["extinct"]]
    kept = [d for d in dims if not d["extinct"]]
    rng = lambda key, ds: ([min(d[key] for d in ds), max(d[key] for d in ds)]  # noqa: E731
                           if ds else None)
    return {"dims": dims, "n_extinct": len(extinct), "n_kept": len(kept),
            "kept_log_inv_alpha": rng("last_log_inv_alpha", kept),
            "kept_log_inv_gamma": rng("last_log_inv_gamma", kept),
            # the extinct dimensions' values at their last recorded iteration
            "extinct_log_inv_alpha": rng("last_log_inv_alpha", extinct),
            "extinct_log_inv_gamma": rng("last_log_inv_gamma", extinct),
            "a_before_c": sum(d["alpha_off"] < d["gamma_off"] for d in extinct),
            "a_with_c": sum(d["alpha_off"] == d["gamma_off"] for d in extinct),
            "c_before_a": sum(d["gamma_off"] < d["alpha_off"] for d in extinct),
            "n_removed": sum(d["removed"] is not None for d in dims),
            "n_iter": len(trace["bound"])}


def _bound_summary(trace, schedule=INPUT_SCHEDULE):
    """Fig. 5.7: monotonicity of F, the jump of the gain per iteration when each group of
    hyperparameters is switched on, and the local peaks of the gain afterwards."""
    F = np.asarray(trace["bound"], dtype=float)
    gain = np.diff(F)  # gain[t - 2] = F_t - F_(t-1), t = 2 .. n (iterations 1-based)
    it = np.arange(2, F.size + 1)
    jumps = {}
    for s in schedule:
        if 2 <= s < F.size:
            before, after = gain[s - 2], gain[s - 1]  # iterations s and s + 1
            jumps[int(s)] = float(after / before) if before > 0 else float("inf")
    peaks = []
    w = PEAK_WINDOW
    start = max(schedule) + 1
    for i in range(gain.size):
        t = int(it[i])
        if t <= start or gain[i] <= 0:
            continue
        lo, hi = max(0, i - w), min(gain.size, i + w + 1)
        window = gain[lo:hi]
        # a local maximum that stands out of its window (twice the window's smallest gain)
        if gain[i] == window.max() and gain[i] > 2.0 * max(window.min(), 0.0) and i not in (0, gain.size - 1):
            peaks.append({"iteration": t, "gain": float(gain[i])})
    return {"final_bound": float(F[-1]), "min_gain": float(gain.min()) if gain.size else 0.0,
            "jumps": jumps, "peaks": peaks}


def _peak_matches(peaks, trace, offs):
    """For every peak of the gain, the columns switched off and the state dimensions
    removed within ``PEAK_WINDOW`` iterations of it (e.g. ``["alpha 3", "state 3
    removed"]``)."""
    events = [(t, f"{name} {j + 1}") for name, cols in offs.items()
              for j, t in enumerate(cols) if t is not None]
    events += [(t, f"state {j + 1} removed")
               for j, t in enumerate(_removed_iteration(c) for c in _columns(trace, "alpha").T)
               if t is not None]
    out = []
    for p in peaks:
        near = [what for t, what in events if abs(t - p["iteration"]) <= PEAK_WINDOW]
        out.append({"iteration": p["iteration"], "gain": p["gain"], "columns": near})
    return out


def summarize_traces(results, config):
    """Traces and their readings for Figs. 5.5, 5.7 and 5.8; a variant is None when its
    fit was not run (e.g. ``sections="traces"`` alone has no as-fitted traces)."""
    T = max(int(t) for t in config["lengths"])
    dim = {"as_fitted": (results.get(("dimension", T, "vb")) or {}).get("trace"),
           "thesis_updates": (results.get(("traces", "dimension", "fixed-point"))
                              or {}).get("trace")}
    inp = {"as_fitted": (results.get(("inputs", 0, "vb")) or {}).get("trace"),
           "thesis_updates": (results.get(("traces", "inputs", "fixed-point"))
                              or {}).get("trace")}
    out = {"T": T, "dimension_traces": dim, "input_traces": inp,
           "dimension": {}, "bound": {}, "switch_offs": {}}
    for variant, tr in dim.items():
        if tr is not None:
            out["dimension"][variant] = _dimension_summary(tr)
    for variant, tr in inp.items():
        if tr is not None:
            offs = _switch_offs(tr)
            b = _bound_summary(tr)
            b["peaks"] = _peak_matches(b["peaks"], tr, offs)
            out["bound"][variant] = b
            out["switch_offs"][variant] = offs
    return out


# ----------------------------------------------------------------------------- verdicts
def _fmt_range(r, digits=1):
    return "–" if r is None else f"[{r[0]:.{digits}f}, {r[1]:.{digits}f}]"


def _fmt_set(d, key):
    """The distinct values of ``key`` over the extinct dimensions, e.g. "11" or "11–14"."""
    v = sorted({dim[key] for dim in d["dims"] if dim["extinct"]})
    return "–" if not v else (str(v[0]) if len(v) == 1 else f"{v[0]}–{v[-1]}")


def _fig5_8_misses(o):
    """The thesis's Fig. 5.8 findings that a run's switch-off iterations miss."""
    out = []
    a_off = sorted(t for t in o["alpha"] if t is not None)
    if len(a_off) != 2:
        out.append(f"{len(a_off)} columns of A off")
    elif a_off[-1] > 150:
        out.append(f"A's second column off only at iteration {a_off[-1]}")
    on_b = [j + 1 for j, t in enumerate(o["beta"]) if t is None]
    if on_b:
        out.append("B column(s) " + ", ".join(map(str, on_b)) + " stay on")
    n_c = sum(t is not None for t in o["gamma"])
    if n_c != 2:
        out.append(f"{n_c} columns of C off")
    if o["delta"][2] is None or any(t is not None for t in o["delta"][:2]):
        out.append("D's columns off: " + ", ".join(
            str(j + 1) for j, t in enumerate(o["delta"]) if t is not None))
    return out


def traces_verdicts(s, config, Verdict):
    """Rows of the report's paper-says / we-get table for Figs. 5.5, 5.7 and 5.8."""
    rows = []
    d_fp, d_as = s["dimension"].get("thesis_updates"), s["dimension"].get("as_fitted")
    if d_fp or d_as:
        parts = []
        ok = []
        if d_fp:
            parts.append(
                f"thesis's updates: {d_fp['n_extinct']} extinct, at ln(1/α) "
                f"{_fmt_range(d_fp['extinct_log_inv_alpha'])}, ln(1/γ) "
                f"{_fmt_range(d_fp['extinct_log_inv_gamma'])} after {d_fp['n_iter']} "
                f"iterations; {d_fp['n_kept']} kept, at ln(1/α) "
                f"{_fmt_range(d_fp['kept_log_inv_alpha'])}, ln(1/γ) "
                f"{_fmt_range(d_fp['kept_log_inv_gamma'])}; of the extinct, A off before C "
                f"in {d_fp['a_before_c']}, at the same iteration in {d_fp['a_with_c']}, "
                f"after C in {d_fp['c_before_a']}")
            ok.append(d_fp["n_extinct"] == 4 and d_fp["c_before_a"] == 0)
        if d_as:
            parts.append(
                f"as fitted: {d_as['n_extinct']} extinct (precisions at the cap in one "
                f"step, A at iteration {_fmt_set(d_as, 'alpha_off')}, C at "
                f"{_fmt_set(d_as, 'gamma_off')}, {d_as['n_removed']} removed from the model), "
                f"{d_as['n_kept']} kept at ln(1/α) "
                f"{_fmt_range(d_as['kept_log_inv_alpha'])}, ln(1/γ) "
                f"{_fmt_range(d_as['kept_log_inv_gamma'])}")
            ok.append(d_as["n_extinct"] == 4)
        rows.append(Verdict(
            f"Fig. 5.5 (T = {s['T']}): 4 of the 10 dimensions become extinct, reaching "
            "ln(1/α), ln(1/γ) ≈ −12 by 500 iterations; 6 stay in the top right "
            "(ln(1/α) ∈ [−4, −2.5], ln(1/γ) ∈ [−1, 2]); the L-shaped trajectories show "
            "dimensions leaving the dynamics (A) before the output (C)",
            "; ".join(parts),
            "yes" if all(ok) else "partly: see the Fig. 5.5 section"))
    b_fp, b_as = s["bound"].get("thesis_updates"), s["bound"].get("as_fitted")
    if b_fp or b_as:
        parts, rises, peaked = [], [], {}
        for label, b in (("thesis's updates", b_fp), ("as fitted", b_as)):
            if b is None:
                continue
            jumps = ", ".join(f"×{v:.3g} at {k}" for k, v in b["jumps"].items())
            matched = [p for p in b["peaks"] if p["columns"]]
            parts.append(f"{label}: smallest gain {b['min_gain']:.2g} nats; gain per "
                         f"iteration jumps {jumps}; {len(b['peaks'])} later peak(s) of the "
                         f"gain, {len(matched)} within {PEAK_WINDOW} iterations of a column "
                         "switched off or a state removed"
                         + (f" ({', '.join(str(p['iteration']) for p in matched)})"
                            if matched else ""))
            rises.append(b["min_gain"] > -1e-6 * abs(b["final_bound"])
                         and all(v > 1 for v in b["jumps"].values()))
            peaked[label] = bool(matched)
        # the thesis's peaks come from ARD switching parameters off: they are judged on
        # the thesis's algorithm when it ran (the package's removal move makes its own)
        ard_peak = peaked.get("thesis's updates", any(peaked.values()))
        if all(rises) and ard_peak:
            agree = "yes"
        elif all(rises):
            agree = ("partly: F rises monotonically and its gain jumps when each group "
                     "starts, but with the thesis's updates no later peak of the gain "
                     "coincides with a column being switched off"
                     + ("; the as-fitted run's peak is the package's removal move"
                        if peaked.get("as fitted") else ""))
        else:
            agree = "no: see the Fig. 5.7 section"
        rows.append(Verdict(
            "Fig. 5.7: F rises monotonically; its gain jumps when the hyperparameter groups "
            "are switched on (iterations 10, 20, 30) and peaks later (around 80, 110 and "
            "400) as parameters are removed",
            "; ".join(parts), agree))
    o_fp, o_as = s["switch_offs"].get("thesis_updates"), s["switch_offs"].get("as_fitted")
    if o_fp or o_as:
        parts, misses = [], []
        for label, o in (("thesis's updates", o_fp), ("as fitted", o_as)):
            if o is None:
                continue
            parts.append(f"{label}: " + "; ".join(
                f"{name} off " + ", ".join("–" if t is None else str(t) for t in cols)
                for name, cols in o.items()))
            misses += [f"{label}: {m}" for m in _fig5_8_misses(o)]
        rows.append(Verdict(
            "Fig. 5.8, time course: two columns of A off (1/α → 0) by about 150 iterations, "
            "every column of B off, two of C off, only D's third (noise) column off",
            "iteration from which each column's precision stays above "
            f"{OFF_PRECISION:g} (– never), columns in order: " + " / ".join(parts),
            "yes" if not misses else "partly: " + "; ".join(misses)))
    return rows


# ----------------------------------------------------------------------------- report
def _fig5_5(s, out_dir):
    plt = pyplot()
    variants = [(v, t) for v, t in VARIANTS if s["dimension_traces"].get(v) is not None]
    fig, axes = plt.subplots(1, len(variants), figsize=(5.2 * len(variants), 4.4),
                             squeeze=False)
    for ax, (variant, title) in zip(axes[0], variants):
        tr = s["dimension_traces"][variant]
        la = -np.log(_columns(tr, "alpha"))
        lg = -np.log(_columns(tr, "gamma"))
        for j in range(la.shape[1]):
            ok = ~np.isnan(la[:, j])
            x = np.concatenate([[0.0], la[ok, j]])  # iteration 0: every precision at 1
            y = np.concatenate([[0.0], lg[ok, j]])
            ax.plot(x, y, ".-", ms=2, lw=0.6, color=f"C{j % 10}", label=f"dim {j + 1}")
            ax.plot(x[-1], y[-1], "x" if ok.sum() < ok.size else "o", ms=6,
                    color=f"C{j % 10}")
        ax.annotate("iteration 0", (0, 0), fontsize=7, xytext=(4, 4),
                    textcoords="offset points")
        ax.set_xlabel("ln 1/α_j (dynamics, columns of A)")
        ax.set_ylabel("ln 1/γ_j (output, columns of C)")
        ax.set_title(title, fontsize=9)
    axes[0, 0].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return save_figure(fig, out_dir, "lds_fig5_5_hyper_traces.png")


def _fig5_7(s, out_dir):
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    for k, (variant, title) in enumerate(VARIANTS):
        tr = s["input_traces"].get(variant)
        if tr is None:
            continue
        F = np.asarray(tr["bound"])
        it = np.arange(1, F.size + 1)
        a1.plot(it, F, color=f"C{k}", lw=1, label=title)
        gain = np.diff(F)
        a2.semilogy(it[1:][gain > 0], gain[gain > 0], color=f"C{k}", lw=0.8, label=title)
    for ax in (a1, a2):
        for t in INPUT_SCHEDULE:
            ax.axvline(t, color="0.6", lw=0.6, ls=":")
        ax.set_xlabel("VBEM iteration")
    a1.set_ylabel("F (nats)")
    a1.set_title("(a) the bound F", fontsize=9)
    a2.set_ylabel("F_t − F_(t−1)")
    a2.set_title("(b) its gain per iteration (log)", fontsize=9)
    a1.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, out_dir, "lds_fig5_7_bound.png")


def _fig5_8(s, out_dir):
    plt = pyplot()
    variants = [(v, t) for v, t in VARIANTS if s["input_traces"].get(v) is not None]
    fig, axes = plt.subplots(len(variants), 4, figsize=(12, 2.9 * len(variants)),
                             squeeze=False, sharey=True)
    names = (("alpha", "(a) 1/α: columns of A"), ("beta", "(b) 1/β: columns of B"),
             ("gamma", "(c) 1/γ: columns of C"), ("delta", "(d) 1/δ: columns of D"))
    for r, (variant, title) in enumerate(variants):
        tr = s["input_traces"][variant]
        for c, (name, sub) in enumerate(names):
            ax = axes[r, c]
            v = _columns(tr, name)
            it = np.arange(1, v.shape[0] + 1)
            for j in range(v.shape[1]):
                ax.semilogy(it, 1.0 / v[:, j], lw=1, label=f"{j + 1}")
            ax.axhline(1.0 / OFF_PRECISION, color="k", lw=0.6, ls=":")
            ax.set_title(f"{sub}\n{title}", fontsize=8)
            if r == len(variants) - 1:
                ax.set_xlabel("VBEM iteration")
            if r == 0:
                ax.legend(fontsize=6, title="column", title_fontsize=6)
        axes[r, 0].set_ylabel("prior variance 1/precision")
    fig.tight_layout()
    return save_figure(fig, out_dir, "lds_fig5_8_traces.png")


def _present(part):
    """``[(title, value)]`` of the variants that ran, in the order of :data:`VARIANTS`."""
    return [(title, part[v]) for v, title in VARIANTS if part.get(v) is not None]


def traces_report(s, config, out_dir):
    have_dim = any(v is not None for v in s["dimension_traces"].values())
    have_inp = any(v is not None for v in s["input_traces"].values())
    text = """
## Figs. 5.5, 5.7 and 5.8: the hyperparameters and the bound during VBEM

Traces recorded by the fits themselves (`hyperparameter_history_`, `lower_bounds_`): the
§5.4.1 fit on the longest sequence and the §5.4.2 fit on the first data set, each "as
fitted" (the package's defaults: exact hyperparameter updates, rotation moves, removal of
dead dimensions), and a refit of each from the same start with the thesis's algorithm
(fixed-point updates of eqs. 5.133–5.138, no moves).  The §5.4.1 refit optimises every
hyperparameter from the first iteration (the thesis names no schedule there); the §5.4.2
fits keep the thesis's schedule (α, β from iteration 10, γ, δ from 20, the rest from 30).
A column counts as switched off once its precision stays above """ + f"{OFF_PRECISION:g}.\n"
    if have_dim:
        text += f"\n### Fig. 5.5: ln 1/α against ln 1/γ per state dimension (T = {s['T']})\n\n"
        text += _fig5_5(s, out_dir) + "\n\n"
        text += ("One trace per state dimension, from (0, 0) at iteration 0 (every "
                 "precision 1); circles: the last iteration, crosses: a dimension removed "
                 "from the model (its trace ends there).\n\n")
        rows = []
        for title, d in _present(s["dimension"]):
            for j, dim in enumerate(d["dims"]):
                rows.append([title, j + 1, "extinct" if dim["extinct"] else "kept",
                             dim["alpha_off"] or "–", dim["gamma_off"] or "–",
                             dim["removed"] or "–", dim["last_log_inv_alpha"],
                             dim["last_log_inv_gamma"]])
        text += markdown_table(["fit", "dim", "state", "A off at", "C off at", "removed at",
                                "last ln 1/α", "last ln 1/γ"], rows) + "\n"
    if have_inp:
        text += "\n### Fig. 5.7: the bound F during the input-driven fit (§5.4.2)\n\n"
        text += _fig5_7(s, out_dir) + "\n\n"
        rows = []
        for title, b in _present(s["bound"]):
            rows.append([title, b["final_bound"], f"{b['min_gain']:.2g}",
                         ", ".join(f"{k}: ×{v:.3g}" for k, v in b["jumps"].items()),
                         "; ".join(f"{p['iteration']} ({', '.join(p['columns']) or 'none'})"
                                   for p in b["peaks"]) or "none"])
        text += markdown_table(
            ["fit", "final F", "smallest gain", "gain ratio when a group starts (iteration s: "
             "gain of s + 1 / gain of s)",
             f"later peaks of the gain (columns switched off or states removed within "
             f"{PEAK_WINDOW} iterations)"], rows, digits=2) + "\n"
        text += "\n### Fig. 5.8: the hyperparameters during the input-driven fit (§5.4.2)\n\n"
        text += _fig5_8(s, out_dir) + "\n\n"
        rows = [[title] + [", ".join("–" if t is None else str(t) for t in o[name])
                           for name in TRACE_KEYS] for title, o in _present(s["switch_offs"])]
        text += ("Iteration from which each column's precision stays above "
                 f"{OFF_PRECISION:g} (– never; columns in order):\n\n")
        text += markdown_table(["fit", "α (A)", "β (B)", "γ (C)", "δ (D)"], rows) + "\n"
    return text
