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
mean, as in the thesis, eq. 3.85); a test sentence is classified forwards when the
forwards model gives it the higher probability (ties count one half).  VB is scored in
two more ways (:func:`~sklearn_vb.hmm.predictive_log_likelihood`): by the predictive
averaged over q(theta) (eq. 3.81, estimated by sequential Monte Carlo with
``english_particles`` particles; forwards sentences under the forwards model at every
point, and both directions under both models, for the discrimination, on the slices of
Fig 3.4) and by the thesis's lower bound on it (eq. 3.84).  One more unit,
``("english_check", n0, k0, 0)``, fits one restart at the canonical point and scores it
with every estimator of eq. 3.81 (SMC with each of ``english_check_particles``, plain
Monte Carlo with ``english_check_draws`` draws from q), to show how far each is from
its limit.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import time

from ..hmm.forward_backward import categorical_hmm_log_likelihood_batch
from ..datasets import encode_sentences, english_sentences, fetch_alice_text
from ..hmm import VBHiddenMarkov, predictive_log_likelihood

__all__ = ["ENGLISH_FULL", "ENGLISH_QUICK", "THESIS_FIRST_TEN", "english_available",
           "english_corpus", "english_units", "run_english_unit", "summarize_english"]

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
    # particles of the SMC estimate of VB's predictive averaged over q(theta) (eq. 3.81)
    "english_particles": 100,
    # the check of the estimators of eq. 3.81 at the canonical point: SMC with each of
    # these numbers of particles, plain Monte Carlo with this many draws from q
    "english_check_particles": [30, 100, 300, 1000, 3000],
    "english_check_draws": 1000,
}
ENGLISH_QUICK = dict(ENGLISH_FULL, english_n=[1, 8], english_k=[4, 20], english_u0=[2.0],
                     english_canonical=[1, 20, 2.0], english_restarts=2, english_test=100,
                     english_max_iter=300, english_particles=20,
                     english_check_particles=[10, 40], english_check_draws=50)


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
    return [("english_check", int(n0), int(k0), 0)] + [
        ("english", n, k, r) for r in range(int(config["english_restarts"]))
        for n, k in pairs]


def _strengths(n, K, config):
    """The prior strengths fitted at (n, K)."""
    n0, k0, u00 = config["english_canonical"]
    if config["english_grid"] == "grid" or (n, K) == (int(n0), int(k0)):
        return [float(u) for u in config["english_u0"]]
    return [float(u00)]


def _on_slice(n, K, u0, config):
    """Whether (n, K, u0) is a point of one of Fig 3.4's three slices."""
    n0, k0, u00 = config["english_canonical"]
    n0, k0, u00 = int(n0), int(k0), float(u00)
    return (K == k0 and u0 == u00) or (n == n0 and u0 == u00) or (n, K) == (n0, k0)


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


def _rng(seed, *tags):
    """A generator of its own for every (unit seed, role) pair."""
    return np.random.RandomState([int(seed)] + [int(t) for t in tags])


def _averaged(forwards, backwards, test_f, test_b, config, seed, both):
    """VB's test scores by the predictive averaged over q(theta) (eq. 3.81, SMC) and by
    its lower bound (eq. 3.84): forwards sentences under the forwards model and, with
    ``both``, the discrimination from both directions under both models."""
    n_symbols = float(test_f[1].sum())
    smc = functools.partial(predictive_log_likelihood, method="smc",
                            n_particles=int(config["english_particles"]))
    ff = smc(forwards, test_f[0], lengths=test_f[1], random_state=_rng(seed, 0))
    bound = predictive_log_likelihood(forwards, test_f[0], lengths=test_f[1], method="bound")
    out = {"logp_forwards_smc": float(ff.sum() / n_symbols),
           "logp_forwards_bound": float(bound.sum() / n_symbols)}
    if both:
        bf = smc(backwards, test_f[0], lengths=test_f[1], random_state=_rng(seed, 1))
        fb = smc(forwards, test_b[0], lengths=test_b[1], random_state=_rng(seed, 2))
        bb = smc(backwards, test_b[0], lengths=test_b[1], random_state=_rng(seed, 3))
        right_f = (ff > bf) + 0.5 * (ff == bf)
        right_b = (bb > fb) + 0.5 * (bb == fb)
        out.update({"logp_backwards_smc": float(bb.sum() / n_symbols),
                    "discrimination_smc": float(0.5 * (right_f.mean() + right_b.mean()))})
    return out


def _fit_ml_points(n, K, config, rng):
    """The ML fits to the first n forwards and backwards training sentences from random
    theta_0 (``{"f": model, "b": model}``) and the VB/MAP starts they give."""
    train, _ = english_corpus(config)
    data = {"f": encode_sentences(train[:n]), "b": encode_sentences(train[:n], reverse=True)}
    s = float(config["english_init_strength"])
    ml, starts = {}, {}
    for d in ("f", "b"):
        theta0 = {"startprob": _uniform_normalised(rng, K),
                  "transmat": _uniform_normalised(rng, (K, K)),
                  "emissionprob": _uniform_normalised(rng, (K, N_SYMBOLS))}
        ml[d] = _fit("ml", K, *data[d], theta0, 1.0, config)
        starts[d] = {"startprob": np.maximum(s * ml[d].startprob_, 1e-8),
                     "transmat": np.maximum(s * ml[d].transmat_, 1e-8),
                     "emissionprob": np.maximum(s * ml[d].emissionprob_, 1e-8)}
    return data, ml, starts


def run_english_unit(key, config, seed):
    if key[0] == "english_check":
        return _run_check(key, config, seed)
    _, n, K, _ = key
    _, test = english_corpus(config)
    test_f, test_b = encode_sentences(test), encode_sentences(test, reverse=True)
    rng = np.random.RandomState(seed)
    floor = float(config["english_floor"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        data, ml, starts = _fit_ml_points(n, K, config, rng)
        out = {"ml": _evaluate(ml["f"], ml["b"], test_f, test_b, floor), "map": {}, "vb": {}}
        for u0 in _strengths(n, K, config):
            for method in ("map", "vb"):
                fits = {d: _fit(method, K, *data[d], starts[d], float(u0), config)
                        for d in ("f", "b")}
                entry = _evaluate(fits["f"], fits["b"], test_f, test_b, floor)
                if method == "vb":
                    entry.update(_averaged(fits["f"], fits["b"], test_f, test_b, config, seed,
                                           _on_slice(n, K, float(u0), config)))
                out[method][repr(float(u0))] = entry
    out["n_train_symbols"] = int(data["f"][1].sum())
    return out


def _run_check(key, config, seed):
    """One restart at the canonical point, its VB models scored by every estimator: the
    plug-in (eq. 3.85), the bound (eq. 3.84), SMC with each number of particles and plain
    Monte Carlo (eq. 3.81): the forwards test sentences' log-probability per symbol
    under the forwards model, with the CPU seconds it took, and (but for plain Monte
    Carlo) the discrimination rate and the mean margin, ln p under the sentence's own
    direction's model minus ln p under the other; for SMC also the mean over sentences
    of the spread of ln p between two seeds."""
    _, n, K, _ = key
    u0 = float(config["english_canonical"][2])
    _, test = english_corpus(config)
    tests = {"f": encode_sentences(test), "b": encode_sentences(test, reverse=True)}
    n_symbols = float(tests["f"][1].sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        data, _, starts = _fit_ml_points(n, K, config, np.random.RandomState(seed))
        vb = {d: _fit("vb", K, *data[d], starts[d], u0, config) for d in ("f", "b")}
        map_f = _fit("map", K, *data["f"], starts["f"], u0, config)

    def score(model, d, method, **kw):
        X, lengths = tests[d]
        return predictive_log_likelihood(vb[model], X, lengths=lengths, method=method, **kw)

    def scored(method, discriminate=True, **kw):
        t0 = time.process_time()
        ff = score("f", "f", method, **kw)
        seconds = time.process_time() - t0
        out = {"logp": float(ff.sum() / n_symbols), "seconds": seconds, "ff": ff}
        if discriminate:
            bf, fb, bb = (score(m, d, method, **kw) for m, d in (("b", "f"), ("f", "b"),
                                                                  ("b", "b")))
            right = 0.5 * (np.mean((ff > bf) + 0.5 * (ff == bf))
                           + np.mean((bb > fb) + 0.5 * (bb == fb)))
            out["discrimination"] = float(right)
            # how far apart the right and the wrong direction's models put a sentence
            out["margin"] = float(0.5 * (np.mean(ff - bf) + np.mean(bb - fb)))
        return out

    def plain(entry):
        return {k: v for k, v in entry.items() if k != "ff"}

    X, lengths = tests["f"]
    out = {"n": n, "k": K, "u0": u0,
           "map_plugin": float(predictive_log_likelihood(map_f, X, lengths=lengths).sum()
                               / n_symbols),
           "plugin": plain(scored("plugin")), "bound": plain(scored("bound")), "smc": []}
    for P in config["english_check_particles"]:
        runs = [scored("smc", n_particles=int(P), random_state=_rng(seed, P, r))
                for r in range(2)]
        out["smc"].append({"particles": int(P),
                           "logp": [r["logp"] for r in runs],
                           "discrimination": [r["discrimination"] for r in runs],
                           "margin": [r["margin"] for r in runs],
                           "spread": float(np.mean(np.abs(runs[0]["ff"] - runs[1]["ff"]))),
                           "seconds": float(np.mean([r["seconds"] for r in runs]))})
    M = int(config["english_check_draws"])
    out["sample"] = dict(plain(scored("sample", False, n_draws=M, random_state=_rng(seed, M))),
                         draws=M)
    return out


#: VB's scores by the predictive averaged over q (SMC) and by its bound; the medians
#: of those a unit computed (the discrimination on the slices only)
AVERAGED = ("logp_forwards_smc", "logp_forwards_bound", "logp_backwards_smc",
            "discrimination_smc")


def _entries(results, method, u0):
    """``{(n, k): [per-restart dict]}`` of one method (and prior strength)."""
    table = {}
    for key, r in results.items():
        if key[0] != "english":
            continue
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
                    "n_iter": float(np.median([np.mean(e["n_iter"]) for e in entries])),
                    **{name: _median(entries, name) for name in AVERAGED
                       if all(name in e for e in entries)}})

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
        if key[0] == "english" and (key[1], key[2]) == (n0, k0):
            entry = r["vb"].get(repr(u00))
            for i in (entry or {}).get("wrong", []):
                wrong[i] = wrong.get(i, 0) + 1
    often_wrong = [test[i] for i, _ in sorted(wrong.items(), key=lambda t: -t[1])[:8]]
    check = [r for key, r in results.items() if key[0] == "english_check"]
    return {"medians": medians, "slices": slices, "canonical": [n0, k0, u00],
            "train_sentences": train[:10], "n_test": len(test),
            "test_symbols": int(sum(len(s) for s in test)),
            "vb_often_wrong": often_wrong, "check": check[0] if check else None}


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
