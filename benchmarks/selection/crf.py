"""CRF panel: which input columns the state and transition features use.

Problems (held-out label accuracy of Viterbi labels)
    ``faq``: FAQ-shaped documents (:func:`~sklearn_vb.datasets.make_faq_like_sequences`):
    columns 0-7 carry the label (state features), 8-15 the next label (transition
    features), 16-23 are noise.  The distance counts noise columns used anywhere, label
    columns 0-7 missing from the state features and columns 8-15 missing from the
    transition features; recovered when it is 0.
    ``persistence``: sticky labels (3 labels, stay with probability 0.85); columns
    2l, 2l+1 fire with probability 0.6 on label l and 0.2 otherwise, columns 6-11 are
    noise (0.3).  Transitions depend on no input (the persistence is the constant
    transition weights of ``bias=True``); the distance counts noise columns used,
    label columns missing from the state features, and every transition column.
    ``word-starts``: a small real tagging task: letters of English text (the licence
    texts in ``/usr/share/common-licenses``; generated text where missing) with spaces
    and punctuation removed, one-hot coded (26 columns), each tagged 1 when it starts a
    word; sequences of 60 letters.  Held-out only.
Methods
    ``sklearn_vb``: ``CRFFeatureSearch(LinearChainCRF(bias=True))`` with its defaults
    (a nested list of feature sets, score "bethe_laplace"); ``sklearn_vb greedy``: the
    same with ``search="greedy"`` from the estimator's features (all columns).
    ``LogisticRegression``: per position, all columns (no sequence model).
    ``sklearn-crfsuite``: first-order CRF on all columns, L-BFGS, ``c2 = 0.5`` (the
    N(0, 1) prior of ours); both use every column, so their distance is that of "all".
"""

from __future__ import annotations

import numpy as np

from .common import Outcome, Problem, check_size

_SIZES = {
    "guard": {"seeds": (0, 1), "faq": (20, 50), "persistence": (20, 50), "words": 0},
    "quick": {"seeds": (0,), "faq": (20, 50), "persistence": (20, 50), "words": 40},
    "full": {"seeds": (0, 1, 2), "faq": (100, 100), "persistence": (100, 100), "words": 200},
}
N_TEST_DOCS = 100


def _faq(cfg):
    from sklearn_vb.datasets import make_faq_like_sequences

    n_docs, n_lines = cfg["faq"]

    def make(seed):
        X, y, lengths = make_faq_like_sequences(n_docs + N_TEST_DOCS, n_lines, random_state=seed)
        cut = n_docs * n_lines
        return {"X": X[:cut], "y": y[:cut], "lengths": lengths[:n_docs], "X_test": X[cut:],
                "y_test": y[cut:], "lengths_test": lengths[n_docs:],
                "state": set(range(8)), "transition": set(range(8, 16)), "noise": set(range(16, 24))}

    return Problem("faq", "features", cfg["seeds"], make, heldout_kind="accuracy")


def make_persistence(n_docs, n_lines, seed, n_labels=3, stay=0.85):
    rng = np.random.default_rng(seed)
    y = np.empty(n_docs * n_lines, dtype=int)
    for d in range(n_docs):
        label = rng.integers(n_labels)
        for t in range(n_lines):
            if t and rng.random() > stay:
                label = (label + 1 + rng.integers(n_labels - 1)) % n_labels
            y[d * n_lines + t] = label
    p_on = np.full((y.size, 2 * n_labels), 0.2)
    for lab in range(n_labels):
        p_on[y == lab, 2 * lab:2 * lab + 2] = 0.6
    informative = rng.random(p_on.shape) < p_on
    noise = rng.random((y.size, 6)) < 0.3
    return np.hstack([informative, noise]).astype(float), y, np.full(n_docs, n_lines)


def _persistence(cfg):
    n_docs, n_lines = cfg["persistence"]

    def make(seed):
        X, y, lengths = make_persistence(n_docs + N_TEST_DOCS, n_lines, seed)
        cut = n_docs * n_lines
        return {"X": X[:cut], "y": y[:cut], "lengths": lengths[:n_docs], "X_test": X[cut:],
                "y_test": y[cut:], "lengths_test": lengths[n_docs:],
                "state": set(range(6)), "transition": set(), "noise": set(range(6, 12)),
                "no_transitions": True}

    return Problem("persistence", "features", cfg["seeds"], make, heldout_kind="accuracy")


def _words(cfg, seq_len=60):
    def make(seed):
        from benchmarks.workload_data import TEXT_ALPHABET, english_text

        X, _, _, _ = english_text(n_chars=(cfg["words"] + N_TEST_DOCS) * seq_len * 2, seed=seed)
        symbols = np.asarray(TEXT_ALPHABET)[X[:, 0]]
        letters, starts, previous = [], [], " "
        for ch in symbols:
            if "a" <= ch <= "z":
                letters.append(ord(ch) - ord("a"))
                starts.append(int(not ("a" <= previous <= "z")))
            previous = ch
        n_seq = min(len(letters) // seq_len, cfg["words"] + N_TEST_DOCS)
        # sequences from different places of the text for training and testing
        order = np.random.default_rng(seed).permutation(n_seq)
        idx = np.concatenate([np.arange(s * seq_len, (s + 1) * seq_len) for s in order])
        onehot = np.eye(26)[np.asarray(letters)[idx]]
        y = np.asarray(starts)[idx]
        n_train = n_seq - N_TEST_DOCS
        cut = n_train * seq_len
        return {"X": onehot[:cut], "y": y[:cut], "lengths": np.full(n_train, seq_len),
                "X_test": onehot[cut:], "y_test": y[cut:], "lengths_test": np.full(N_TEST_DOCS, seq_len)}

    return Problem("word-starts", None, cfg["seeds"][:1], make, heldout_kind="accuracy")


def problems(size):
    cfg = _SIZES[check_size(size)]
    out = [_faq(cfg), _persistence(cfg)]
    if cfg["words"]:
        out.append(_words(cfg))
    return out


def _distance(data, state, transition):
    if "state" not in data:
        return None
    state, transition = set(state), set(transition)
    d = len((state | transition) & data["noise"]) + len(data["state"] - state)
    if data.get("no_transitions"):
        d += len(transition - data["noise"])
    else:
        d += len(data["transition"] - transition)
    return d


def _outcome(data, state, transition, accuracy):
    selected = {"state": sorted(map(int, state)), "transition": sorted(map(int, transition))}
    d = _distance(data, state, transition)
    if d is None:
        return Outcome(selected, heldout=accuracy)
    return Outcome(selected, recovered=d == 0, distance=float(d), heldout=accuracy)


def _search(problem, data, seed, **kwargs):
    from sklearn_vb import LinearChainCRF
    from sklearn_vb.model_selection import CRFFeatureSearch

    search = CRFFeatureSearch(LinearChainCRF(bias=True), random_state=seed, **kwargs)
    search.fit(data["X"], data["y"], lengths=data["lengths"])
    best = search.best_estimator_
    acc = best.score(data["X_test"], data["y_test"], lengths=data["lengths_test"])
    out = _outcome(data, best.state_features_, best.transition_features_, acc)
    return out


def ours(problem, data, seed):
    return _search(problem, data, seed)


def ours_greedy(problem, data, seed):
    return _search(problem, data, seed, search="greedy")


def _all_columns(data):
    return range(data["X"].shape[1])


def logistic(problem, data, seed):
    from sklearn.linear_model import LogisticRegression

    m = LogisticRegression(max_iter=1000).fit(data["X"], data["y"])
    acc = float(np.mean(m.predict(data["X_test"]) == data["y_test"]))
    return _outcome(data, _all_columns(data), [], acc)


def _as_crfsuite(X, y, lengths):
    xs, ys, start = [], [], 0
    for n in lengths:
        rows = X[start:start + n]
        xs.append([{f"g{a}": 1.0 for a in np.flatnonzero(r)} | {"bias": 1.0} for r in rows])
        ys.append([str(int(v)) for v in y[start:start + n]])
        start += n
    return xs, ys


def crfsuite(problem, data, seed):
    import sklearn_crfsuite

    xs, ys = _as_crfsuite(data["X"], data["y"], data["lengths"])
    xt, yt = _as_crfsuite(data["X_test"], data["y_test"], data["lengths_test"])
    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=0.5).fit(xs, ys)
    pred = np.concatenate([np.array(p, dtype=int) for p in crf.predict(xt)])
    acc = float(np.mean(pred == np.concatenate([np.array(t, dtype=int) for t in yt])))
    return _outcome(data, _all_columns(data), [], acc)


METHODS = {"sklearn_vb": ours, "sklearn_vb greedy": ours_greedy,
           "LogisticRegression": logistic, "sklearn-crfsuite": crfsuite}
