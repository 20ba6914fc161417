"""Linear-chain CRF fits against CRFsuite (sklearn-crfsuite / python-crfsuite).

``crf-fit-vs-crfsuite``: FAQ-shaped synthetic documents
(:func:`sklearn_vb.datasets.make_faq_like_sequences`; 24 binary line features,
question/answer labels), 300 training documents of 100 lines and 100 test documents.
Each library fits with L-BFGS until its own convergence test, time per call (one fit);
metrics: accuracy on the test documents (Viterbi labels) and the number of iterations.

The models are matched as far as CRFsuite allows.  CRFsuite's first-order CRF has a
state feature for every (attribute, label) pair and one transition weight per label
pair, and no input-dependent transitions; ``sklearn_vb`` (first row) is fitted with the
same model class: all 24 state features plus a constant input (``bias=True``) and the
constant as the only transition input (``transition_features="none"``), with prior
variance ``sigma2 = 1``.  CRFsuite's L-BFGS minimises ``-log-likelihood + c2 ||w||^2``
(its ``c2`` multiplies the squared norm, the gradient gets ``2 c2 w``), the MAP objective
of independent ``N(0, 1 / (2 c2))`` priors, so ``c2 = 1 / (2 sigma2)`` gives each weight the
same prior.  CRFsuite weights both labels of a binary problem, though, and only their
difference matters, which the penalty then shrinks like a ``N(0, 2 / (2 c2))`` prior; the row
with ``c2 = 1 / sigma2`` matches the prior on that difference.  The last row is our full
model of the paper (input-dependent transition features as well), for accuracy.
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


@workload("crf-fit-vs-crfsuite", per="call", repeats=3, stem="crf")
def crf_fit_vs_crfsuite(quick):
    from sklearn_vb import LinearChainCRF

    (Xtr, ytr, ltr), (Xte, yte, lte) = _data(quick)

    def ours(**params):
        def fit():
            crf = LinearChainCRF(prior_variance=SIGMA2, **params).fit(Xtr, ytr, lengths=ltr)
            return {"n_iter": crf.n_iter_, "test_accuracy": crf.score(Xte, yte, lengths=lte),
                    "n_parameters": crf.n_parameters_}
        return fit

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
        "sklearn_vb (state + bias, bias transitions)": ours(bias=True, transition_features="none"),
        "sklearn-crfsuite c2=1/(2 sigma2)": crfsuite(1.0 / (2.0 * SIGMA2)),
        "sklearn-crfsuite c2=1/sigma2": crfsuite(1.0 / SIGMA2),
        "sklearn_vb full model (input-dependent transitions)": ours(bias=True),
    }
