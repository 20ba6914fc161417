"""Missing entries (NaN, missing at random): marginalised by our models against the
imputation a user of the peers would do, on a real multivariate series.

Data: statsmodels' ``macrodata`` (US quarterly macro series, 1959-2009): quarterly
growth rates (100 x log difference) of real GDP, consumption, investment, government
spending, disposable income and the CPI, and the change of the unemployment rate;
202 rows x 7 columns, each column standardised.  10 %, 30 % and 50 % of the entries
are removed at random (fixed seeds; rows left with no entry get one back, so every
row keeps at least one observation).

* ``missing-hmm``: ``VBHiddenMarkov(3, emission="gaussian")`` with diagonal and full
  covariances fitted on the data with NaN; hmmlearn's ``GaussianHMM`` (same K and
  covariance type) after (a) column-mean and (b) forward-fill imputation (backward fill
  for leading gaps); pomegranate's ``DenseHMM`` (diagonal, EM from its k-means
  start, at most 200 iterations) on a ``torch.masked.MaskedTensor``: ``nan_fit`` is the
  share of masks where its EM ended with NaN parameters (left out of its means), and
  ``failed_starts`` the seeds skipped because its start left a state empty.  Held-out
  score: the mean over removed entries of ln p(x_td | observed entries), computed here
  from each model's fitted parameters (posterior means for ours, the ML point for
  hmmlearn and pomegranate) and state posteriors: sum_k q(s_t = k) N(x_td |
  conditional mean and variance of dimension d given the observed entries of row t
  under state k) (for diagonal models simply N(x_td | mu_kd, var_kd)).  Our posteriors
  are computed with the NaNs in place; hmmlearn's on its imputed data (what a user
  would do), pomegranate's on its masked tensor.  State agreement: adjusted Rand index
  between each method's Viterbi path (pomegranate: each frame's most probable state)
  on the corrupted data and the reference, our fit of the same covariance type on the
  complete data (its Viterbi path).
* ``missing-lds``: ``VBLinearDynamicalSystem()`` (ARD chooses the state dimension) on
  the data with NaN against statsmodels' ``DynamicFactorMQ`` (2 factors, VAR(1) factor
  dynamics, white-noise idiosyncratic terms, EM with its Kalman smoother over the
  missing entries; ``DynamicFactor``'s MLE fails on this data with NaN: its start,
  computed from the data, raises "SVD did not converge").  Held-out score: mean over
  removed entries of the log density of the true value under the smoothed predictive of y_td
  given all observed entries, N(C_d E[x_t] + intercept_d, C_d Cov[x_t] C_d' + noise_d)
  (ours: our VB smoother and posterior-mean C, noise; theirs:
  ``smoothed_forecasts`` and ``smoothed_forecasts_error_cov``), and the mean squared
  error of the smoothed mean.
* ``missing-iohmm``: simulated input-driven chain (``make_input_driven_hmm_sequences``,
  the example ``hmm_input_driven.py``'s model: two states, three symbols, one input
  level keeps the state and the other switches it).  ``VBHiddenMarkov(2,
  transition_inputs="categorical")`` given ``U`` against the plain ``VBHiddenMarkov(2)``:
  lower bound on the training data and held-out log-likelihood per frame.
* ``missing-iohmm-continuous``: simulated chain with a continuous input
  (``make_input_driven_hmm_sequences(transition_coef=...)``: two states, three symbols,
  one standard-normal input u_t; state 0 stays with probability sigma(2.5 - 2.5 u_t),
  state 1 moves to state 0 with probability sigma(-2.5 - 2.5 u_t)), and a null copy
  whose input has no effect (the same biases, input coefficients 0).  On both:
  ``VBHiddenMarkov(2, transition_inputs="continuous")`` given ``U``, the plain
  ``VBHiddenMarkov(2)``, and ``VBHiddenMarkov(2, transition_inputs="categorical")`` on
  ``U`` binned at the training quantiles (2 and 4 levels).  Metrics: the lower bound on
  the training data (ln p(X | U), nats; ``lower_bound`` with the effect,
  ``lower_bound_null`` without) and the held-out log-likelihood per frame at the
  posterior means (``heldout``, ``heldout_null``); the first row also reports that of
  the true parameters (``heldout_true``) and the largest error of the recovered
  coefficients (``coef_max_abs_error``).  Linderman's ``ssm`` (its input-driven HMM)
  would be the peer: the registry's ``ssm`` 0.0.1 builds only with Cython present and
  then fails to import (it needs ``autograd.scipy.misc``, gone from autograd since 1.4,
  and autograd 1.3 does not import on Python 3.11), so its row is reported as skipped.

Quick mode: one mask per fraction, one start, at most 30 iterations (LDS: 40); full
mode: five masks per fraction and three starts for the HMMs (the metrics are means over
the masks; every mask's values are in ``trace``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .harness import workload

FRACTIONS = (0.1, 0.3, 0.5)
K_HMM = 3


def macro_growth():
    """(202, 7) standardised quarterly growth rates of statsmodels' macrodata."""
    import statsmodels.api as sm

    d = sm.datasets.macrodata.load_pandas().data
    cols = ["realgdp", "realcons", "realinv", "realgovt", "realdpi", "cpi"]
    growth = 100 * np.diff(np.log(d[cols].to_numpy(float)), axis=0)
    unemp = np.diff(d["unemp"].to_numpy(float))[:, None]
    Y = np.hstack([growth, unemp])
    return (Y - Y.mean(0)) / Y.std(0)


def remove_at_random(Y, fraction, seed):
    """Y with ``fraction`` of its entries set to NaN, every row keeping one entry."""
    rng = np.random.default_rng(seed)
    missing = rng.random(Y.shape) < fraction
    full_rows = missing.all(axis=1)
    missing[full_rows, rng.integers(Y.shape[1], size=full_rows.sum())] = False
    X = Y.copy()
    X[missing] = np.nan
    return X, missing


def _impute_mean(X):
    return np.where(np.isnan(X), np.nanmean(X, axis=0), X)


def _impute_ffill(X):
    import pandas as pd

    return pd.DataFrame(X).ffill().bfill().to_numpy()


def heldout_gaussian_mixture(Y, missing, post, means, covars):
    """Mean over the missing entries of ln sum_k post[t, k] N(Y_td | the conditional of
    dimension d given row t's observed entries under state k); ``covars`` (K, D, D)."""
    from scipy.special import logsumexp

    logs = []
    K = means.shape[0]
    for t in np.flatnonzero(missing.any(axis=1)):
        o, m = ~missing[t], missing[t]
        lp = np.empty((K, m.sum()))
        for k in range(K):
            S = covars[k]
            gain = np.linalg.solve(S[np.ix_(o, o)], S[np.ix_(o, m)]).T if o.any() else \
                np.zeros((m.sum(), 0))
            mu = means[k, m] + gain @ (Y[t, o] - means[k, o])
            var = np.diag(S[np.ix_(m, m)]) - np.einsum("ij,ji->i", gain, S[np.ix_(o, m)])
            lp[k] = -0.5 * (np.log(2 * np.pi * var) + (Y[t, m] - mu) ** 2 / var)
        logs.append(logsumexp(lp + np.log(np.maximum(post[t], 1e-300))[:, None], axis=0))
    return float(np.mean(np.concatenate(logs)))


def _full_covars(covars, cov_type):
    covars = np.asarray(covars)
    if cov_type == "diag" or covars.ndim == 2:
        return np.stack([np.diag(c) for c in covars])
    return covars


def _masks(quick):
    return [(f, s) for f in FRACTIONS for s in range(1 if quick else 5)]


def _aggregate(per_mask):
    """Means over the masks of each fraction, ``{f"{metric}@{fraction}": mean}``, of the
    masks where the metric is a number."""
    out = {}
    for (fraction, _), values in per_mask.items():
        for key, v in values.items():
            out.setdefault(f"{key}@{fraction:g}", []).append(v)
    return {k: float(np.nanmean(v)) if np.isfinite(v).any() else np.nan
            for k, v in out.items()}


def _run_masks(Y, quick, fit_one):
    start = time.perf_counter()
    per_mask = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fraction, seed in _masks(quick):
            X, missing = remove_at_random(Y, fraction, seed=[seed, int(100 * fraction)])
            per_mask[(fraction, seed)] = fit_one(X, missing)
    metrics = _aggregate(per_mask)
    metrics["n_masks_per_fraction"] = 1 if quick else 5
    metrics["elapsed_s"] = time.perf_counter() - start
    metrics["trace"] = {f"{f:g}/{s}": v for (f, s), v in per_mask.items()}
    return metrics


@workload("missing-hmm", per="call", repeats=1, warmup=False, stem="missing")
def missing_hmm(quick):
    from sklearn.metrics import adjusted_rand_score

    Y = macro_growth()
    n_init = 1 if quick else 3
    max_iter = 30 if quick else 1000

    def ours(cov_type):
        from sklearn_vb import VBHiddenMarkov

        model = lambda: VBHiddenMarkov(K_HMM, emission="gaussian",  # noqa: E731
                                       covariance_type=cov_type, n_init=n_init,
                                       max_iter=max_iter, random_state=0)
        reference = model().fit(Y).predict(Y)

        def fit_one(X, missing):
            m = model().fit(X)
            return {"heldout": heldout_gaussian_mixture(
                        Y, missing, m.predict_proba(X), m.means_,
                        _full_covars(m.covars_, cov_type)),
                    "ari": adjusted_rand_score(reference, m.predict(X))}
        return lambda: _run_masks(Y, quick, fit_one)

    def hmmlearn(cov_type, impute):
        def run():
            from hmmlearn.hmm import GaussianHMM
            from sklearn_vb import VBHiddenMarkov

            reference = VBHiddenMarkov(K_HMM, emission="gaussian", covariance_type=cov_type,
                                       n_init=n_init, random_state=0).fit(Y).predict(Y)

            def fit_one(X, missing):
                Z = impute(X)
                best = None
                for seed in range(n_init):  # as many starts as ours
                    m = GaussianHMM(K_HMM, covariance_type=cov_type, n_iter=max_iter,
                                    tol=1e-4, random_state=seed).fit(Z)
                    score = m.score(Z)
                    if best is None or score > best[0]:
                        best = (score, m)
                m = best[1]
                covars = m.covars_ if cov_type == "full" else _full_covars(
                    np.diagonal(m.covars_, axis1=1, axis2=2), "diag")
                return {"heldout": heldout_gaussian_mixture(Y, missing, m.predict_proba(Z),
                                                            m.means_, covars),
                        "ari": adjusted_rand_score(reference, m.predict(Z))}
            return _run_masks(Y, quick, fit_one)
        return run

    def pomegranate():
        import torch
        from pomegranate.distributions import Normal
        from pomegranate.hmm import DenseHMM
        from sklearn_vb import VBHiddenMarkov

        reference = VBHiddenMarkov(K_HMM, emission="gaussian", covariance_type="diag",
                                   n_init=n_init, random_state=0).fit(Y).predict(Y)

        def fit_one(X, missing):
            data = torch.tensor(np.nan_to_num(X)[None], dtype=torch.float32)
            mask = torch.tensor(~missing[None])
            Xm = torch.masked.MaskedTensor(data, mask=mask)
            for seed in range(10):
                # its k-means start on a masked tensor can leave a state without a
                # frame (IndexError in the state's first fit): the next seed then
                try:
                    m = DenseHMM([Normal(covariance_type="diag") for _ in range(K_HMM)],
                                 max_iter=min(max_iter, 200), tol=1e-4,
                                 random_state=seed).fit(Xm)
                    break
                except IndexError:
                    continue
            post = m.predict_proba(Xm)[0].numpy()
            means = np.stack([d.means.numpy() for d in m.distributions])
            var = np.stack([d.covs.numpy() for d in m.distributions])
            if not (np.isfinite(means).all() and np.isfinite(var).all()):
                # EM on the masked tensor diverged to NaN parameters: counted, and left
                # out of the means over the masks
                return {"heldout": np.nan, "ari": np.nan, "failed_starts": seed,
                        "nan_fit": 1.0}
            return {"heldout": heldout_gaussian_mixture(Y, missing, post, means,
                                                        _full_covars(var, "diag")),
                    "ari": adjusted_rand_score(reference, post.argmax(1)),
                    "failed_starts": seed, "nan_fit": 0.0}
        return _run_masks(Y, quick, fit_one)

    return {
        "sklearn_vb diag (NaN marginalised)": ours("diag"),
        "sklearn_vb full (NaN marginalised)": ours("full"),
        "hmmlearn diag, mean-imputed": hmmlearn("diag", _impute_mean),
        "hmmlearn diag, forward-filled": hmmlearn("diag", _impute_ffill),
        "hmmlearn full, mean-imputed": hmmlearn("full", _impute_mean),
        "hmmlearn full, forward-filled": hmmlearn("full", _impute_ffill),
        "pomegranate diag (masked tensor)": pomegranate,
    }


def _lds_heldout(Y, missing, mean, var):
    """Mean log density and squared error of the removed entries under N(mean, var)."""
    d = Y[missing] - mean[missing]
    v = var[missing]
    return {"heldout": float(np.mean(-0.5 * (np.log(2 * np.pi * v) + d ** 2 / v))),
            "sq_error": float(np.mean(d ** 2))}


@workload("missing-lds", per="call", repeats=1, warmup=False, stem="missing")
def missing_lds(quick):
    Y = macro_growth()

    def ours():
        from sklearn_vb import VBLinearDynamicalSystem

        def fit_one(X, missing):
            m = VBLinearDynamicalSystem(max_iter=40 if quick else 500,
                                        random_state=0).fit(X)
            sp = m.state_posterior(X)
            C = m.C_mean_
            intercept = m.D_mean_[:, -1] if m.fit_intercept else 0.0
            mean = sp.smoothed_mean @ C.T + intercept
            var = np.einsum("dj,tjl,dl->td", C, sp.smoothed_cov, C) \
                + 1.0 / m.noise_precision_mean_
            return {**_lds_heldout(Y, missing, mean, var), "n_states": int(C.shape[1])}
        return _run_masks(Y, quick, fit_one)

    def statsmodels():
        from statsmodels.tsa.statespace.dynamic_factor_mq import DynamicFactorMQ

        def fit_one(X, missing):
            res = DynamicFactorMQ(X, factors=2, factor_orders=1, idiosyncratic_ar1=False,
                                  standardize=False).fit(disp=False,
                                                         maxiter=50 if quick else 500)
            sm = res.smoother_results
            mean = np.asarray(sm.smoothed_forecasts).T
            var = np.diagonal(np.asarray(sm.smoothed_forecasts_error_cov), axis1=0, axis2=1)
            return _lds_heldout(Y, missing, mean, var)
        return _run_masks(Y, quick, fit_one)

    return {"sklearn_vb LDS (NaN marginalised)": ours,
            "statsmodels DynamicFactorMQ(2 factors, VAR(1))": statsmodels}


@workload("missing-iohmm", per="call", repeats=1, warmup=False, stem="missing")
def missing_iohmm(quick):
    from sklearn_vb.datasets import make_input_driven_hmm_sequences

    transmats = np.array([[[0.95, 0.05], [0.05, 0.95]],   # level 0: stay
                          [[0.1, 0.9], [0.9, 0.1]]])      # level 1: switch
    emission = np.array([[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]])
    n_seq = 10 if quick else 100
    X, _, U, lengths = make_input_driven_hmm_sequences(
        transmats, emission, [100] * n_seq, level_probs=[0.7, 0.3], random_state=0)
    Xt, _, Ut, lt = make_input_driven_hmm_sequences(
        transmats, emission, [100] * n_seq, level_probs=[0.7, 0.3], random_state=1)

    def run(inputs):
        def fit():
            from sklearn_vb import VBHiddenMarkov

            kw = {"transition_inputs": "categorical"} if inputs else {}
            m = VBHiddenMarkov(2, random_state=0, **kw)
            m.fit(X, lengths=lengths, **({"U": U} if inputs else {}))
            heldout = m.score(Xt, lengths=lt, **({"U": Ut} if inputs else {}))
            return {"n_iter": int(m.n_iter_), "lower_bound": float(m.lower_bound_),
                    "heldout_loglik_per_frame": float(heldout), "n_frames": int(len(X))}
        return fit

    return {"sklearn_vb input-driven HMM (U given)": run(True),
            "sklearn_vb plain HMM": run(False)}


#: the continuous-input chain of ``missing-iohmm-continuous``: row k's stick is "go to
#: state 0"; the null copy keeps the biases and drops the input effect
IOHMM_COEF = np.array([[[-2.5, 2.5]], [[-2.5, -2.5]]])
IOHMM_COEF_NULL = np.array([[[0.0, 2.5]], [[0.0, -2.5]]])
IOHMM_EMISSION = np.array([[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]])


def _true_heldout_per_frame(coef, X, U, lengths):
    """Mean log-likelihood per frame of the held-out sequences at the true parameters
    (uniform start; forward algorithm, one sequence at a time)."""
    from sklearn_vb.hmm import stick_breaking_transitions

    A = stick_breaking_transitions(coef, U)
    B = IOHMM_EMISSION[:, X.ravel()].T  # (T, K)
    total, pos = 0.0, 0
    for n in lengths:
        alpha = 0.5 * B[pos]
        total += np.log(alpha.sum())
        alpha /= alpha.sum()
        for t in range(pos + 1, pos + n):
            alpha = (alpha @ A[t]) * B[t]
            total += np.log(alpha.sum())
            alpha /= alpha.sum()
        pos += n
    return total / len(X)


@workload("missing-iohmm-continuous", per="call", repeats=1, warmup=False, stem="missing")
def missing_iohmm_continuous(quick):
    from sklearn_vb.datasets import make_input_driven_hmm_sequences

    n_seq = 10 if quick else 100
    data = {}
    for name, coef in (("", IOHMM_COEF), ("_null", IOHMM_COEF_NULL)):
        train = make_input_driven_hmm_sequences(None, IOHMM_EMISSION, [100] * n_seq,
                                                transition_coef=coef, random_state=0)
        test = make_input_driven_hmm_sequences(None, IOHMM_EMISSION, [100] * n_seq,
                                               transition_coef=coef, random_state=1)
        data[name] = (coef, train, test)

    def binned(U, edges):
        return np.searchsorted(edges, U[:, 0])

    def run(kind, n_bins=None):
        def fit():
            from sklearn_vb import VBHiddenMarkov

            out = {}
            for name, (coef, (X, _, U, lengths), (Xt, _, Ut, lt)) in data.items():
                if kind == "categorical":
                    edges = np.quantile(U[:, 0], np.arange(1, n_bins) / n_bins)
                    U, Ut = binned(U, edges), binned(Ut, edges)
                kw = {} if kind is None else {"transition_inputs": kind}
                inputs = (lambda u: {}) if kind is None else (lambda u: {"U": u})
                m = VBHiddenMarkov(2, random_state=0, **kw)
                m.fit(X, lengths=lengths, **inputs(U))
                out[f"lower_bound{name}"] = float(m.lower_bound_)
                out[f"heldout{name}"] = float(m.score(Xt, lengths=lt, **inputs(Ut)))
                out[f"iterations{name}"] = int(m.n_iter_)
                if kind == "continuous":
                    out[f"heldout_true{name}"] = _true_heldout_per_frame(coef, Xt, Ut, lt)
                    w = m.transition_coef_
                    if m.emissionprob_[0, 0] < m.emissionprob_[1, 0]:
                        w = -w[::-1]  # the states are named the other way round
                    out[f"coef_max_abs_error{name}"] = float(np.max(np.abs(w - coef)))
            out["n_frames"] = int(100 * n_seq)
            return out
        return fit

    def ssm_peer():
        import ssm

        out = {}
        for name, (coef, (X, _, U, lengths), (Xt, _, Ut, lt)) in data.items():
            split = lambda a, n: np.split(a, np.cumsum(n)[:-1])  # noqa: E731
            m = ssm.HMM(2, 1, M=1, observations="categorical",
                        observation_kwargs=dict(C=3), transitions="inputdriven")
            m.fit(split(X, lengths), inputs=split(U, lengths), method="em",
                  num_em_iters=200)
            out[f"heldout{name}"] = float(
                m.log_likelihood(split(Xt, lt), inputs=split(Ut, lt)) / len(Xt))
        return out

    return {
        "sklearn_vb continuous-input HMM (U given)": run("continuous"),
        "sklearn_vb plain HMM": run(None),
        "sklearn_vb categorical-input HMM, U in 2 quantile bins": run("categorical", 2),
        "sklearn_vb categorical-input HMM, U in 4 quantile bins": run("categorical", 4),
        "ssm input-driven HMM (EM)": ssm_peer,
    }
