"""``reproduce hmm``, §3.5.2 of Beal (2003): telling forwards from backwards English.

Text: *Alice's Adventures in Wonderland* (:func:`~sklearn_vb.datasets.fetch_alice_text`),
split into sentences over 26 letters and the blank
(:func:`~sklearn_vb.datasets.english_sentences`).  Training pool: the first
``english_train_pool`` sentences of 10 to 100 characters (the thesis's first ten are
reproduced exactly); a model trained on n sentences sees the first n.  Test set: a fixed
set of ``english_test`` sentences of any length, evenly spaced over the rest of the book.
Backwards sentences reverse each sentence's characters and keep its closing blank last.

One work unit is one random restart at one (n, k): theta_0 drawn as in §3.5.1
(normalised Uniform(0, 1) entries), ML EM from it on the forwards and, from a second
draw, on the backwards sentences; then, for every prior strength u0 (shared by pi, A and
C, spread as u0/k, u0/k and u0/27 per entry), MAP (softmax basis) and VB started from
each ML point (VB at q(theta) = Dir(10 theta_ML), MAP at theta_ML).  Every model is
scored by the log-likelihood of the test sentences at its point (VB: the posterior
mean, as in the thesis); a test sentence is classified forwards when the forwards model
gives it the higher probability (ties count one half).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..hmm.forward_backward import categorical_hmm_log_likelihood_batch
from ..datasets import encode_sentences, english_sentences, fetch_alice_text
from ..hmm import VBHiddenMarkov

__all__ = ["ENGLISH_FULL", "ENGLISH_QUICK", "english_available", "english_units",
           "run_english_unit", "summarize_english"]

N_SYMBOLS = 27

ENGLISH_FULL = {
    "english_text": None,
    "english_n": [1, 2, 3, 4, 5, 6, 8, 16, 32],
    "english_k": [1, 2, 4, 10, 20, 40, 60],
    "english_u0": [1.0, 2.0, 4.0, 8.0],
    # the thesis's canonical point (n, k, u0) around which Fig 3.4 varies one quantity
    "english_canonical": [2, 40, 2.0],
    # "slices": n at the canonical k and k at the canonical n, at the canonical u0, and
    # every u0 at the canonical (n, k) (the three slices of Fig 3.4); "grid": every
    # (n, k, u0)
    "english_grid": "slices",
    "english_restarts": 10,
    "english_test": 200,
    "english_train_pool": 32,
    "english_max_iter": 1000,
    "english_tol": 1e-4,
    "english_init_strength": 10.0,
    # probabilities of every model are floored at this value (rows renormalised) when
    # test sentences are scored: ML gives unseen symbols and transitions (almost) zero
    # probability, and a test sentence would otherwise have log-probability -inf
    "english_floor": 1e-10,
}
ENGLISH_QUICK = dict(ENGLISH_FULL, english_n=[1, 8], english_k=[4, 20], english_u0=[2.0],
                     english_canonical=[1, 20, 2.0], english_restarts=2, english_test=100,
                     english_max_iter=300)


@functools.lru_cache(maxsize=4)
def _corpus(path, n_train, n_test):
    sentences = english_sentences(fetch_alice_text(path))
    eligible = [i for i, s in enumerate(sentences) if 10 <= len(s) <= 100]
    if len(eligible) < n_train:
        raise ValueError(f"only {len(eligible)} sentences of 10-100 characters; "
                         f"english_train_pool={n_train} is too many.")
    train_idx = eligible[:n_train]
    rest = np.arange(train_idx[-1] + 1, len(sentences))
    if rest.size < n_test:
        raise ValueError(f"only {rest.size} sentences after the training pool; "
                         f"english_test={n_test} is too many.")
    test_idx = rest[np.linspace(0, rest.size - 1, n_test).round().astype(int)]
    train = [sentences[i] for i in train_idx]
    test = [sentences[i] for i in test_idx]
    return train, test


def english_corpus(config):
    """``(train, test)`` sentence lists of the configuration."""
    return _corpus(config["english_text"], int(config["english_train_pool"]),
                   int(config["english_test"]))


def english_available(config):
    """Whether the text can be read without downloading anything."""
    try:
        english_corpus(config)
    except FileNotFoundError:
        return False
    return True


def english_units(config):
    english_corpus(config)  # a missing text is reported before any unit runs
    n0, k0, _ = config["english_canonical"]
    if config["english_grid"] == "grid":
        pairs = [(int(n), int(k)) for n in config["english_n"] for k in config["english_k"]]
    elif config["english_grid"] == "slices":
        pairs = [(int(n), int(k0)) for n in config["english_n"]]
        pairs += [(int(n0), int(k)) for k in config["english_k"] if (int(n0), int(k)) not in pairs]
    else:
        raise ValueError(f"english_grid must be 'slices' or 'grid'; got "
                         f"{config['english_grid']!r}.")
    # restarts outermost: an interrupted run has every (n, k) with fewer restarts
    return [("english", n, k, r) for r in range(int(config["english_restarts"]))
            for n, k in pairs]


def _strengths(n, K, config):
    """The prior strengths fitted at (n, K)."""
    n0, k0, u00 = config["english_canonical"]
    if config["english_grid"] == "grid" or (n, K) == (int(n0), int(k0)):
        return [float(u) for u in config["english_u0"]]
    return [float(u00)]


def _uniform_normalised(rng, shape):
    theta = rng.uniform(size=shape)
    return theta / theta.sum(axis=-1, keepdims=True)


def _fit(method, K, X, lengths, start, u0, config):
    priors = {"startprob_prior": u0 / K, "transmat_prior": u0 / K,
              "emissionprob_prior": u0 / N_SYMBOLS}
    return VBHiddenMarkov(K, n_symbols=N_SYMBOLS, method=method, init_params="posterior",
                          init_posterior=start, max_iter=int(config["english_max_iter"]),
                          tol=float(config["english_tol"]), **priors).fit(X, lengths=lengths)


def _floored(p, floor):
    p = np.maximum(p, floor)
    return p / p.sum(axis=-1, keepdims=True)


def _log_probabilities(models, test, floor):
    """ln p(sentence | theta) of every test sentence under each model's point (the ML
    or MAP estimate, VB's posterior mean), rows (forwards model, backwards model)."""
    X, lengths = test
    ends = np.cumsum(lengths)
    pi, A, B = (np.stack([_floored(getattr(m, name), floor) for m in models])
                for name in ("startprob_", "transmat_", "emissionprob_"))
    return categorical_hmm_log_likelihood_batch(pi, A, B, X.ravel(), ends - lengths, ends)[0]


def _evaluate(forwards, backwards, test_f, test_b, floor):
    """Test log-probability per symbol (forwards sentences under the forwards model and
    backwards under backwards) and the discrimination rate."""
    ff, bf = _log_probabilities((forwards, backwards), test_f, floor)
    fb, bb = _log_probabilities((forwards, backwards), test_b, floor)
    right_f = (ff > bf) + 0.5 * (ff == bf)
    right_b = (bb > fb) + 0.5 * (bb == fb)
    n_symbols = float(test_f[1].sum())
    return {"logp_forwards": float(ff.sum() / n_symbols),
            "logp_backwards": float(bb.sum() / n_symbols),
            "discrimination": float(0.5 * (right_f.mean() + right_b.mean())),
            "wrong": [int(i) for i in np.flatnonzero(right_f < 1)[:50]],
            "n_iter": [int(forwards.n_iter_), int(backwards.n_iter_)],
            "states": [int(forwards.n_effective_components_),
                       int(backwards.n_effective_components_)]}


def run_english_unit(key, config, seed):
    _, n, K, _ = key
    train, test = english_corpus(config)
    data = {"f": encode_sentences(train[:n]), "b": encode_sentences(train[:n], reverse=True)}
    test_f, test_b = encode_sentences(test), encode_sentences(test, reverse=True)
    rng = np.random.RandomState(seed)
    s = float(config["english_init_strength"])
    floor = float(config["english_floor"])
    ml, starts = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for d in ("f", "b"):
            theta0 = {"startprob": _uniform_normalised(rng, K),
                      "transmat": _uniform_normalised(rng, (K, K)),
                      "emissionprob": _uniform_normalised(rng, (K, N_SYMBOLS))}
            ml[d] = _fit("ml", K, *data[d], theta0, 1.0, config)
            starts[d] = {"startprob": np.maximum(s * ml[d].startprob_, 1e-8),
                         "transmat": np.maximum(s * ml[d].transmat_, 1e-8),
                         "emissionprob": np.maximum(s * ml[d].emissionprob_, 1e-8)}
        out = {"ml": _evaluate(ml["f"], ml["b"], test_f, test_b, floor), "map": {}, "vb": {}}
        for u0 in _strengths(n, K, config):
            for method in ("map", "vb"):
                fits = {d: _fit(method, K, *data[d], starts[d], float(u0), config)
                        for d in ("f", "b")}
                out[method][repr(float(u0))] = _evaluate(fits["f"], fits["b"], test_f, test_b,
                                                           floor)
    out["n_train_symbols"] = int(data["f"][1].sum())
    return out


def _entries(results, method, u0):
    """``{(n, k): [per-restart dict]}`` of one method (and prior strength)."""
    table = {}
    for key, r in results.items():
        entry = r["ml"] if method == "ml" else r[method].get(repr(float(u0)))
        if entry is not None:
            table.setdefault((key[1], key[2]), []).append(entry)
    return table


def _median(entries, name):
    return float(np.median([e[name] for e in entries]))


def summarize_english(results, config):
    """Medians over restarts of the test log-probability per symbol and of the
    discrimination rate, for every (method, u0, n, k) computed, and Fig 3.4's slices."""
    n0, k0, u00 = int(config["english_canonical"][0]), int(config["english_canonical"][1]), \
        float(config["english_canonical"][2])
    u0s = [float(u) for u in config["english_u0"]]
    medians = []
    for method, priors in (("ml", [None]), ("map", u0s), ("vb", u0s)):
        for u0 in priors:
            for (n, k), entries in sorted(_entries(results, method, u0).items()):
                medians.append({
                    "method": method, "u0": u0, "n": n, "k": k, "restarts": len(entries),
                    "logp_forwards": _median(entries, "logp_forwards"),
                    "logp_backwards": _median(entries, "logp_backwards"),
                    "discrimination": _median(entries, "discrimination"),
                    "states": float(np.median([np.mean(e["states"]) for e in entries])),
                    "n_iter": float(np.median([np.mean(e["n_iter"]) for e in entries]))})

    def pick(method, u0, n=None, k=None):
        return [m for m in medians if m["method"] == method
                and (method == "ml" or m["u0"] == u0)
                and (n is None or m["n"] == n) and (k is None or m["k"] == k)]

    slices = {}
    for method in ("ml", "map", "vb"):
        slices[method] = {
            "n": sorted(pick(method, u00, k=k0), key=lambda m: m["n"]),
            "k": sorted(pick(method, u00, n=n0), key=lambda m: m["k"]),
            # ML ignores the prior: its one point is repeated along the u0 axis
            "u0": [dict(m, u0=u) for u in u0s for m in pick(method, u, n=n0, k=k0)]}
    train, test = english_corpus(config)
    wrong = {}
    for key, r in results.items():
        if (key[1], key[2]) == (n0, k0):
            entry = r["vb"].get(repr(u00))
            for i in (entry or {}).get("wrong", []):
                wrong[i] = wrong.get(i, 0) + 1
    often_wrong = [test[i] for i, _ in sorted(wrong.items(), key=lambda t: -t[1])[:8]]
    return {"medians": medians, "slices": slices, "canonical": [n0, k0, u00],
            "train_sentences": train[:10], "n_test": len(test),
            "test_symbols": int(sum(len(s) for s in test)),
            "vb_often_wrong": often_wrong}


# --------------------------------------------------------------------------- report

#: Beal (2003) §3.5.2: the first ten training sentences as printed in the thesis.
THESIS_FIRST_TEN = [
    "i shall be late ",
    "thought alice to herself after such a fall as this i shall think nothing of tumbling "
    "down stairs ",
    "how brave theyll all think me at home ",
    "why i wouldnt say anything about it even if i fell off the top of the house ",
    "which was very likely true ",
    "down down down ",
    "would the fall never come to an end ",
    "i wonder how many miles ive fallen by this time ",
    "she said aloud ",
    "i must be getting somewhere near the centre of the earth ",
]

_LABELS = {"ml": "ML", "map": "MAP", "vb": "VB"}
_STYLE = {"ml": ("0.5", "s", ":"), "map": ("tab:red", "x", "--"), "vb": ("tab:blue", "o", "-")}


def _figure(summary, out_dir):
    from ._report import pyplot, save_figure

    plt = pyplot()
    n0, k0, u00 = summary["canonical"]
    fig, axes = plt.subplots(3, 2, figsize=(10, 11))
    captions = {"n": f"k = {k0}, u0 = {u00:g}", "k": f"n = {n0}, u0 = {u00:g}",
                "u0": f"n = {n0}, k = {k0}"}
    names = {"n": "training sentences n", "k": "hidden states k", "u0": "prior strength u0"}
    letters = iter("abcdef")
    for row, axis in enumerate(("n", "k", "u0")):
        for col, (quantity, title) in enumerate((("logp_forwards", "test log-probability per symbol"),
                                                 ("discrimination", "discrimination rate"))):
            ax = axes[row, col]
            for method in ("ml", "map", "vb"):
                if quantity == "logp_forwards" and method == "ml":
                    continue  # far below the others, as in the thesis's figure
                pts = summary["slices"][method][axis]
                if not pts:
                    continue
                x = np.arange(len(pts))
                color, marker, ls = _STYLE[method]
                ax.plot(x, [p[quantity] for p in pts], color=color, marker=marker, ls=ls,
                        label=_LABELS[method])
                ax.set_xticks(x)
                ax.set_xticklabels([f"{p[axis]:g}" for p in pts])
            if quantity == "discrimination":
                ax.set_ylim(0.4, 1.02)
            ax.set_xlabel(names[axis])
            ax.set_title(f"({next(letters)}) {title}: {captions[axis]}", fontsize=9)
            ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out_dir, "hmm_fig3_4_english.png")


def _slice_table(summary, axis):
    from ._report import markdown_table

    by = {m: {p[axis]: p for p in summary["slices"][m][axis]} for m in ("ml", "map", "vb")}
    values = sorted(set().union(*[set(v) for v in by.values()]))

    def get(m, v, q):
        p = by[m].get(v)
        return None if p is None else p[q]

    rows = [[f"{v:g}"] + [get(m, v, "logp_forwards") for m in ("ml", "map", "vb")]
            + [get(m, v, "discrimination") for m in ("ml", "map", "vb")]
            + [get("vb", v, "states")] for v in values]
    return markdown_table([axis, "ML log p", "MAP log p", "VB log p", "ML disc.", "MAP disc.",
                           "VB disc.", "VB states"], rows, digits=3)


#: test log-probabilities per symbol closer than this count as equal in the verdicts
SAME = 0.01


def _verdict(gap):
    """"yes" when VB beats MAP by more than :data:`SAME` nats per symbol at every point,
    "no" when it does at none."""
    gap = np.asarray(gap)
    if np.all(gap > SAME):
        return "yes"
    if np.all(np.abs(gap) <= SAME):
        return f"no: equal within {SAME:g} nats/symbol"
    return "partly" if np.any(gap > SAME) else "no"


def _findings(summary):
    """Rows (thesis statement, what we find, agreement) computed from the medians."""
    sl = summary["slices"]
    rows = []

    def col(method, axis, q):
        return np.array([p[q] for p in sl[method][axis]])

    if sl["vb"]["n"]:
        ns = col("vb", "n", "n")
        gap = col("vb", "n", "logp_forwards") - col("map", "n", "logp_forwards")
        few = ns <= 3
        rows.append(("VB outperforms MAP in test likelihood when trained on only a few "
                     "sentences (Fig 3.4a)",
                     "VB − MAP at n = " + ", ".join(f"{n:g}: {g:+.3f}" for n, g in zip(ns, gap)),
                     _verdict(gap[few])))
        rows.append(("for large n VB and MAP converge to about the same performance",
                     f"VB − MAP = {gap[-1]:+.3f} nats/symbol at n = {ns[-1]:g} "
                     f"(largest size over the slice {np.max(np.abs(gap)):.3f})",
                     "yes" if abs(gap[-1]) <= 0.05 else "no"))
    wins, total = 0, 0
    for axis in ("n", "k", "u0"):
        for p_vb in sl["vb"][axis]:
            key = p_vb[axis]
            others = [p["discrimination"] for m in ("ml", "map") for p in sl[m][axis]
                      if p[axis] == key]
            if others:
                total += 1
                wins += p_vb["discrimination"] >= max(others) - 1e-12
    rows.append(("VB outperforms MAP and ML in discrimination (Fig 3.4b,d,f)",
                 f"VB's median rate is at least ML's and MAP's at {wins} of {total} points "
                 "of the three slices",
                 "yes" if wins >= 0.75 * total else ("partly" if wins >= total / 2 else "no")))
    if sl["vb"]["k"]:
        ks = col("vb", "k", "k")
        gap = col("vb", "k", "logp_forwards") - col("map", "k", "logp_forwards")
        rows.append(("as k increases VB outperforms MAP considerably in test likelihood "
                     "(Fig 3.4c)",
                     "VB − MAP at k = " + ", ".join(f"{k:g}: {g:+.3f}" for k, g in zip(ks, gap)),
                     _verdict(gap[ks >= 20])))
    if len(sl["vb"]["u0"]) > 1:
        us = col("vb", "u0", "u0")
        lv, lm = col("vb", "u0", "logp_forwards"), col("map", "u0", "logp_forwards")
        dv, dm = col("vb", "u0", "discrimination"), col("map", "u0", "discrimination")
        rows.append(("as u0 increases both MAP and VB test log-likelihoods decrease; u0 ≤ 2 "
                     "is suitable (Fig 3.4e)",
                     "MAP: " + ", ".join(f"{v:.3f}" for v in lm) + "; VB: "
                     + ", ".join(f"{v:.3f}" for v in lv) + " at u0 = "
                     + ", ".join(f"{u:g}" for u in us),
                     "yes" if lv[-1] < lv[0] and lm[-1] < lm[0]
                     and max(lv.max(), lm.max()) in np.concatenate([lv[us <= 2], lm[us <= 2]])
                     else "partly"))
        rows.append(("with a strong prior MAP's discrimination suffers while VB keeps high "
                     "rates (Fig 3.4f)",
                     "MAP: " + ", ".join(f"{v:.2f}" for v in dm) + "; VB: "
                     + ", ".join(f"{v:.2f}" for v in dv),
                     "yes" if dv[-1] > dm[-1] + 0.05 else "no"))
    return rows


def _grid_section(summary, config):
    """The whole n × k × u0 grid: VB − MAP test log-probability per (n, k) for each u0 and
    how often VB's discrimination is at least ML's and MAP's (grid mode only)."""
    from ._report import markdown_table

    rows = {(r["method"], r["u0"], r["n"], r["k"]): r for r in summary["medians"]}
    ns, ks = [int(n) for n in config["english_n"]], [int(k) for k in config["english_k"]]
    parts, wins, ahead = [], [], []
    for u0 in (float(u) for u in config["english_u0"]):
        table = []
        for n in ns:
            gaps = [rows[("vb", u0, n, k)]["logp_forwards"]
                    - rows[("map", u0, n, k)]["logp_forwards"] for k in ks]
            ahead += [(g, n, k, u0) for g, k in zip(gaps, ks) if g > SAME]
            table.append([n] + [f"{g:+.3f}" for g in gaps])
        parts.append(f"u0 = {u0:g}:\n\n" + markdown_table(["n \\ k"] + ks, table))
        won = sum(rows[("vb", u0, n, k)]["discrimination"]
                  >= max(rows[("map", u0, n, k)]["discrimination"],
                         rows[("ml", None, n, k)]["discrimination"]) for n in ns for k in ks)
        wins.append(f"{won} of {len(ns) * len(ks)} at u0 = {u0:g}")
    ahead.sort(reverse=True)
    where = ", ".join(f"(n, k, u0) = ({n}, {k}, {u:g}): {g:+.3f}" for g, n, k, u in ahead)
    tables = "\n\n".join(parts)
    return f"""
### The whole grid

VB − MAP test log-probability per symbol (medians over restarts; positive: VB ahead)
at every (n, k), one table per u0:

{tables}

VB ahead of MAP by more than {SAME:g} nats/symbol at {len(ahead)} of
{len(ns) * len(ks) * len(config["english_u0"])} grid points: {where or "none"}.  VB's median
discrimination rate is at least ML's and MAP's at {"; ".join(wins)}.
"""


def english_report(summary, config, out_dir):
    """The §3.5.2 section of the report (markdown) and Fig 3.4 in ``out_dir``."""
    from ._report import markdown_table

    n0, k0, u00 = summary["canonical"]
    matches = summary["train_sentences"][:10] == THESIS_FIRST_TEN
    grid = ("the three slices of Fig 3.4 through the canonical point "
            f"(n, k, u0) = ({n0}, {k0}, {u00:g}): n ∈ {config['english_n']} at k = {k0}, "
            f"k ∈ {config['english_k']} at n = {n0}, both at u0 = {u00:g}, and "
            f"u0 ∈ {config['english_u0']} at (n, k) = ({n0}, {k0})"
            if config["english_grid"] == "slices" else
            f"every combination of n ∈ {config['english_n']}, k ∈ {config['english_k']} and "
            f"u0 ∈ {config['english_u0']}")
    findings = markdown_table(["the thesis says", "we find (medians)", "agree?"],
                              _findings(summary))
    text = f"""
## §3.5.2: forwards and backwards English

Text: Lewis Carroll, *Alice's Adventures in Wonderland* (Project Gutenberg eBook #11,
public domain), the file `examples/alice.txt` of the source distribution of the
`wordcloud` package (`pip download --no-deps --no-binary wordcloud wordcloud==1.9.6`,
read by `sklearn_vb.datasets.fetch_alice_text`).  Sentences end
at `.`, `!` or `?`; chapter headings are dropped; letters are lower-cased, everything but
the 26 letters and the blank is removed (p = 27) and every sentence ends with one blank.
Training sentences are the first {config['english_train_pool']} of 10 to 100 characters;
our first ten {'are exactly' if matches else 'differ from'} the ten printed in the
thesis.  Test set: {summary['n_test']} sentences of any length ({summary['test_symbols']}
symbols) evenly spaced over the rest of the book.  Backwards sentences reverse the
characters of each sentence and keep its closing blank last.

Models: ML, MAP (softmax basis) and VB HMMs with k states and Dirichlet priors of
strength u0 (u0/k per entry for π and A, u0/27 for C), fitted to the forwards and to the
backwards sentences; MAP and VB start from the ML point of the same restart (VB at
q(θ) = Dir({config['english_init_strength']:g} θ_ML)).  {config['english_restarts']}
restarts (random θ₀) at each point of the grid: {grid}.  Every fit stops when its
objective changes by less than {config['english_tol']:g} nats or after
{config['english_max_iter']} iterations.  Test log-probability per symbol: forwards test
sentences under the forwards model, at the point estimate (VB: the posterior mean, as in
the thesis), with every probability floored at {config['english_floor']:g} (ML gives
unseen symbols and transitions zero probability); discrimination: a sentence is called
forwards when the forwards model gives it the higher probability, averaged over the
forwards and the backwards test sentences.  All numbers are medians over restarts.

{_figure(summary, out_dir)}

### What the thesis reports and what we find

{findings}

ML's test log-probability (left out of the figure, as in the thesis) is far below MAP's
and VB's because of the probability floor: it counts the unseen events.

Dependence on n (k = {k0}, u0 = {u00:g}):

{_slice_table(summary, 'n')}

Dependence on k (n = {n0}, u0 = {u00:g}):

{_slice_table(summary, 'k')}

Dependence on u0 (n = {n0}, k = {k0}; ML does not use the prior):

{_slice_table(summary, 'u0')}

Forwards test sentences that VB (n = {n0}, k = {k0}, u0 = {u00:g}) most often calls
backwards (the thesis: "the shorter, and more reversible sentences ... 'alas ', 'pat ',
'oh ', and 'oh dear '"): {', '.join(repr(s) for s in summary['vb_often_wrong']) or 'none'}.
"""
    if config["english_grid"] == "grid":
        text += _grid_section(summary, config)
    return text
