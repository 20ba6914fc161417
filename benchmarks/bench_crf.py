"""Linear-chain CRF fits against CRFsuite (sklearn-crfsuite / python-crfsuite).

``crf-fit-vs-crfsuite``: FAQ-shaped synthetic documents
(:func:`sklearn_vb.datasets.make_faq_like_sequences`; 24 binary line features,
question/answer labels), 300 training documents of 100 lines and 100 test documents.
Each library fits with L-BFGS until its own convergence test, time per call (one fit);
metrics: accuracy on the test documents (Viterbi labels) and the number of iterations.

The models are matched as far as CRFsuite allows.  CRFsuite's first-order CRF has a
state feature for every (attribute, label) pair and one transition weight per label
pair, and no input-dependent transitions; ``sklearn_vb``'s default ``LinearChainCRF``
(first row) is the same model class: all 24 state features plus a constant input
(``bias=True``), and the constant as the only transition input
(``transition_features="none"``), with prior variance ``sigma2 = 1``.  CRFsuite's L-BFGS
minimises ``-log-likelihood + c2 ||w||^2`` (its ``c2`` multiplies the squared norm, the
gradient gets ``2 c2 w``), the MAP objective of independent ``N(0, 1 / (2 c2))`` priors,
so ``c2 = 1 / (2 sigma2)`` gives each weight the same prior.  CRFsuite weights both labels
of a binary problem, though, and only their difference matters, which the penalty then
shrinks like a ``N(0, 2 / (2 c2))`` prior; the row with ``c2 = 1 / sigma2`` matches the
prior on that difference.  The last row adds input-dependent transition features
(``transition_features="all"``, the paper's features plus the constant ones), for accuracy.

``crf-tagging-vs-crfsuite``: a word-tagging task with window features.  Sentences of 15
words from an HMM (6 tags, a vocabulary of 1000 words, each tag emitting mostly its own
words; seeded), 1000 training and 300 test sentences; the inputs are one-hot indicators of
the word, the previous word and the next word (3000 columns, three non-zeros a row),
passed to ``sklearn_vb`` as a CSR matrix and to CRFsuite as the attributes ``w``,
``w-1``, ``w+1`` plus ``bias``.  Rows: the default ``LinearChainCRF``; CRFsuite with the
matched prior (``c2 = 1 / (2 sigma2)``); ``LinearChainCRF(transition_features="all",
bias=False)``, the model of Parise and Welling (2006) (input-dependent transition weights
for every label pair instead of constant ones: about ``L - 1`` times the weights).  The
two libraries stop by different tests (ours: largest gradient entry per position below
``tol``; CRFsuite: relative objective change over ten iterations below 1e-5), so the
iteration counts and accuracies are reported next to the times.
"""

import numpy as np

from .harness import workload

SIGMA2 = 1.0


def _data(quick):
    from sklearn_vb.datasets import make_faq_like_sequences

    n_train, n_test = (30, 10) if quick else (300, 100)
    X, y, lengths = make_faq_like_sequences(n_train + n_test, 100, random_state=0)
    cut = n_train * 100
    return (X[:cut], y[:cut], lengths[:n_train]), (X[cut:], y[cut:], lengths[n_train:])


def _as_crfsuite(X, y, lengths):
    """Sequences of attribute dicts (absent = 0) and string labels."""
    names = [f"g{a}" for a in range(X.shape[1])]
    xs, ys, start = [], [], 0
    for n in lengths:
        rows = X[start:start + n]
        xs.append([{names[a]: 1.0 for a in np.flatnonzero(r)} | {"bias": 1.0} for r in rows])
        ys.append([str(int(v)) for v in y[start:start + n]])
        start += n
    return xs, ys


def _fit_ours(params, train, test):
    """A timed fit of our LinearChainCRF with ``params`` on ``train``, reporting its
    iterations, accuracy on ``test`` and parameter count."""
    from sklearn_vb import LinearChainCRF

    (Xtr, ytr, ltr), (Xte, yte, lte) = train, test

    def fit():
        crf = LinearChainCRF(prior_variance=SIGMA2, **params).fit(Xtr, ytr, lengths=ltr)
        return {"n_iter": crf.n_iter_, "test_accuracy": crf.score(Xte, yte, lengths=lte),
                "n_parameters": crf.n_parameters_}
    return fit


@workload("crf-fit-vs-crfsuite", per="call", repeats=3, stem="crf")
def crf_fit_vs_crfsuite(quick):
    (Xtr, ytr, ltr), (Xte, yte, lte) = _data(quick)

    def ours(**params):
        return _fit_ours(params, (Xtr, ytr, ltr), (Xte, yte, lte))

    def crfsuite(c2):
        xs, ys = _as_crfsuite(Xtr, ytr, ltr)
        xt, yt = _as_crfsuite(Xte, yte, lte)

        def fit():
            import sklearn_crfsuite

            crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=c2)
            crf.fit(xs, ys)
            pred = np.concatenate([np.array(p, dtype=int) for p in crf.predict(xt)])
            truth = np.concatenate([np.array(t, dtype=int) for t in yt])
            return {"n_iter": len(crf.training_log_.iterations),
                    "test_accuracy": float(np.mean(pred == truth))}
        return fit

    return {
        "sklearn_vb default (state + bias, constant transitions)": ours(),
        "sklearn-crfsuite c2=1/(2 sigma2)": crfsuite(1.0 / (2.0 * SIGMA2)),
        "sklearn-crfsuite c2=1/sigma2": crfsuite(1.0 / SIGMA2),
        "sklearn_vb + input-dependent transitions": ours(transition_features="all"),
    }


def _tagging_sentences(n_sentences, rng, n_tags=6, n_words=1000, length=15):
    """Tags from a Markov chain, words from tag-specific sparse distributions."""
    A = rng.dirichlet(np.full(n_tags, 0.5), n_tags)
    E = rng.dirichlet(np.full(n_words, 0.05), n_tags)
    tags = np.empty(n_sentences * length, dtype=np.int64)
    words = np.empty_like(tags)
    cumA, cumE = np.cumsum(A, axis=1), np.cumsum(E, axis=1)
    u, v = rng.random(tags.size), rng.random(tags.size)
    for i in range(tags.size):  # data generation only, once
        prev = tags[i - 1] if i % length else rng.integers(n_tags)
        tags[i] = min(np.searchsorted(cumA[prev], u[i]), n_tags - 1)
        words[i] = min(np.searchsorted(cumE[tags[i]], v[i]), n_words - 1)
    return words, tags, np.full(n_sentences, length), n_words


def _window_features(words, lengths, n_words):
    """CSR one-hot indicators of the word, the previous and the next word."""
    import scipy.sparse as sp

    n = words.size
    ends = np.cumsum(lengths)
    has_prev = np.ones(n, dtype=bool)
    has_prev[ends - lengths] = False
    has_next = np.ones(n, dtype=bool)
    has_next[ends - 1] = False
    rows = [np.arange(n), np.flatnonzero(has_prev), np.flatnonzero(has_next)]
    cols = [words, n_words + words[rows[1] - 1], 2 * n_words + words[rows[2] + 1]]
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, 3 * n_words))


def _tagging_as_crfsuite(words, tags, lengths):
    xs, ys, start = [], [], 0
    for n in lengths:
        w = words[start:start + n]
        xs.append([{"bias": 1.0, f"w={w[i]}": 1.0}
                   | ({f"w-1={w[i - 1]}": 1.0} if i else {})
                   | ({f"w+1={w[i + 1]}": 1.0} if i < n - 1 else {}) for i in range(n)])
        ys.append([str(int(t)) for t in tags[start:start + n]])
        start += n
    return xs, ys


@workload("crf-tagging-vs-crfsuite", per="call", repeats=3, stem="crf")
def crf_tagging_vs_crfsuite(quick):
    n_train, n_test = (100, 100) if quick else (1000, 300)
    words, tags, lengths, V = _tagging_sentences(n_train + n_test, np.random.default_rng(0))
    X = _window_features(words, lengths, V)
    cut = int(lengths[:n_train].sum())
    Xtr, ytr, ltr = X[:cut], tags[:cut], lengths[:n_train]
    Xte, yte, lte = X[cut:], tags[cut:], lengths[n_train:]

    def ours(**params):
        return _fit_ours(params, (Xtr, ytr, ltr), (Xte, yte, lte))

    def crfsuite():
        xs, ys = _tagging_as_crfsuite(words[:cut], ytr, ltr)
        xt, _ = _tagging_as_crfsuite(words[cut:], yte, lte)

        def fit():
            import sklearn_crfsuite

            crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0 / (2.0 * SIGMA2))
            crf.fit(xs, ys)
            pred = np.concatenate([np.array(p, dtype=int) for p in crf.predict(xt)])
            return {"n_iter": len(crf.training_log_.iterations),
                    "test_accuracy": float(np.mean(pred == yte)),
                    "n_parameters": len(crf.state_features_) + len(crf.transition_features_)}
        return fit

    return {
        "sklearn_vb default (sparse X)": ours(),
        "sklearn-crfsuite c2=1/(2 sigma2)": crfsuite(),
        "sklearn_vb paper model (input-dependent transitions, no bias)":
            ours(transition_features="all", bias=False),
    }
