"""Categorical emissions with a Dirichlet prior on every state's emission row.

X is one column (or a 1-D array) of integer symbols in ``[0, M)``; NaN marks a missing
symbol, held as :data:`MISSING_SYMBOL` in the family's array form.  Statistics are the
expected symbol counts of every state, ``emis`` (K, M); the posterior is
``Dir(u_k + emis_k)`` per state (Beal 2003, eqs. 3.58-3.59).  The emission table has one row
per symbol after a first row of zeros, the log-likelihood 0 of a missing symbol in every
state (its emission marginalised out), so forward-backward indexes it by the symbols plus
one; a missing symbol adds nothing to the counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.special import polygamma

from ..._core.distributions import (
    dirichlet_expected_log,
    dirichlet_kl,
    dirichlet_log_pdf,
    dirichlet_sample,
    log_multivariate_beta,
)
from ..._core.validation import check_symbols
from ._base import EmissionFamily, EmissionPoint
from ._checks import check_dirichlet_prior, init_posterior_array

__all__ = ["CategoricalEmissions", "CategoricalPrior", "CategoricalPosterior",
           "CategoricalStats", "CategoricalPoint", "MISSING_SYMBOL"]

#: a missing symbol (NaN in X) in the family's int64 array form
MISSING_SYMBOL = -1


@dataclass(eq=False)
class CategoricalPrior:
    """Dirichlet prior of every state's emission row, ``B_k ~ Dir(emissionprob_k)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import CategoricalPrior
    >>> prior = CategoricalPrior(emissionprob=np.full((2, 3), 0.5))
    >>> prior.emissionprob.sum(axis=1)                 # strength of every row
    array([1.5, 1.5])
    """

    emissionprob: np.ndarray  # u, (K, M): per-entry concentrations


@dataclass(eq=False)
class CategoricalPosterior:
    """q(B_k) = Dir(emissionprob_k) of every state's emission row.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import CategoricalEmissions, CategoricalPrior
    >>> family = CategoricalEmissions()
    >>> prior = CategoricalPrior(emissionprob=np.full((2, 3), 0.5))
    >>> resp = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> family.vbm(prior, family.stats(resp, np.array([0, 1, 2]), prior)).emissionprob
    array([[1.5, 1.5, 0.5],
           [0.5, 0.5, 1.5]])
    """

    emissionprob: np.ndarray  # w = u + expected symbol counts, (K, M)


@dataclass(eq=False)
class CategoricalStats:
    """Expected sufficient statistics of state responsibilities r_tk.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import CategoricalEmissions, CategoricalPrior
    >>> prior = CategoricalPrior(emissionprob=np.full((2, 3), 0.5))
    >>> resp = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    >>> CategoricalEmissions().stats(resp, np.array([0, 0, 2]), prior).emis
    array([[1.5, 0. , 0. ],
           [0.5, 0. , 1. ]])
    """

    emis: np.ndarray  # (K, M): sum_t r_tk [x_t = m], the expected symbol counts


@dataclass(eq=False)
class CategoricalPoint(EmissionPoint):
    """A point estimate of every state's emission row (``method="ml"`` or ``"map"``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import CategoricalEmissions, CategoricalPrior
    >>> family = CategoricalEmissions()
    >>> prior = CategoricalPrior(emissionprob=np.ones((2, 2)))
    >>> stats = family.stats(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0, 1]), prior)
    >>> family.point_from_stats(prior, stats, kind="ml").emissionprob.round(3)
    array([[1., 0.],
           [0., 1.]])
    """

    emissionprob: np.ndarray  # (K, M): emission rows, each summing to 1


def _precheck_symbols(X):
    """Errors for categorical X worded as scikit-learn words them for feature arrays."""
    if sparse.issparse(X):
        raise TypeError(
            "VBHiddenMarkov does not accept sparse input: X must be a dense 1-D array "
            "(or one column) of integer symbols."
        )
    arr = np.asarray(X)
    if arr.dtype.kind == "c":
        raise ValueError("Complex data not supported: X must hold integer symbols.")
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is "
            "required: X must be one column of integer symbols."
        )
    if arr.dtype.kind in "iuf" and arr.size:
        if arr.dtype.kind == "f" and np.any(np.isinf(arr)):
            raise ValueError("X contains infinity; symbols must be integers (NaN marks a "
                             "missing symbol).")
        if arr.dtype.kind == "f" and np.all(np.isnan(arr)):
            return
        low = np.nanmin(arr) if arr.dtype.kind == "f" else arr.min()
        if low < 0:
            raise ValueError(
                f"Negative values in data passed to X: symbol {low} is negative; "
                "symbols must be integers >= 0."
            )


def _missing_mask(X):
    """Where X (as given) holds NaN, one entry per frame; None when nothing is missing."""
    arr = np.asarray(X)
    if arr.dtype.kind != "f":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            return None  # not numbers: check_symbols reports it
    missing = np.isnan(arr)
    if not missing.any():
        return None
    return missing.reshape(-1) if missing.ndim == 2 and missing.shape[1] == 1 else missing


class DirichletRows:
    """Independent Dirichlet rows ``B_k ~ Dir(alpha_k)`` over the block ``emissionprob``
    (densities on the first M-1 coordinates of each row)."""

    def __init__(self, alpha):
        self.alpha = np.asarray(alpha, dtype=float)

    def log_pdf(self, params):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sum(dirichlet_log_pdf(params["emissionprob"], self.alpha), axis=-1)

    def sample(self, rng, size):
        return {"emissionprob": dirichlet_sample(self.alpha, rng, size=int(size))}

    def mean(self):
        return {"emissionprob": (self.alpha / self.alpha.sum(axis=-1, keepdims=True))[None]}

    def broadened(self, dof=None, broaden=None):
        """Concentrations times ``broaden`` (means kept); ``dof`` does not apply."""
        if broaden is None:
            return self
        if not 0 < broaden <= 1:
            raise ValueError(f"broaden must be in (0, 1], got {broaden}.")
        return DirichletRows(broaden * self.alpha)

    def unconstrained_sd(self):
        t = polygamma(1, self.alpha)
        return np.sqrt(t[..., :-1] + t[..., -1:]).ravel()


class CategoricalEmissions(EmissionFamily):
    """Discrete symbols, ``x_t | s_t = k ~ Cat(B_k)`` with ``B_k ~ Dir(u_k)``.

    Hyperparameters: ``emissionprob`` (K, M) Dirichlet concentrations.  The emission
    model of the thesis's HMM: Beal (2003), §3.3 (model) and §3.4.1 (VBM update,
    eqs. 3.58-3.59).

    Examples
    --------
    The VBM step adds the expected symbol counts of each state to its prior row:

    >>> import numpy as np
    >>> from sklearn_vb.emissions import CategoricalEmissions, CategoricalPrior
    >>> family = CategoricalEmissions()
    >>> prior = CategoricalPrior(emissionprob=np.full((2, 3), 1 / 3))
    >>> X = np.array([0, 0, 2])                          # symbols
    >>> resp = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])   # q(s_t = k)
    >>> post = family.vbm(prior, family.stats(resp, X, prior))
    >>> np.round(post.emissionprob - prior.emissionprob, 2)
    array([[1.5, 0. , 0. ],
           [0.5, 0. , 1. ]])
    >>> family.n_parameters(post)                        # K (M - 1)
    4
    """

    emission = "categorical"
    hyper_names = ("emissionprob",)
    prior_type = CategoricalPrior
    posterior_type = CategoricalPosterior
    point_type = CategoricalPoint
    dirichlet_blocks = ("emissionprob",)
    # a start near the symmetric point (prunes superfluous states) and one that breaks the
    # symmetry decisively (finds the many-state solutions); the bound decides between them
    default_inits = ("random_marginals", "random_params", "context")
    random_params_init = True

    # ------------------------------------------------------------------ data
    def check_X(self, X, estimator, reset):
        _precheck_symbols(X)
        n_symbols = None if reset else estimator.n_symbols_
        if reset and estimator.n_symbols is not None:
            n_symbols = estimator.n_symbols
        missing = _missing_mask(X)
        if missing is not None and missing.ndim == 1:
            # validate the observed symbols; the missing ones become MISSING_SYMBOL
            filled = np.where(np.isnan(np.asarray(X, dtype=np.float64)), 0.0,
                              np.asarray(X, dtype=np.float64))
            symbols = check_symbols(filled, "X", n_symbols=n_symbols)
            symbols[missing] = MISSING_SYMBOL
        else:
            symbols = check_symbols(X, "X", n_symbols=n_symbols)
        if reset:
            estimator.n_features_in_ = 1
        return symbols

    def data_moments(self, X):
        # the largest symbol; MISSING_SYMBOL (below every symbol) when all are missing
        return int(X.max())

    def merge_moments(self, parts):
        return max(parts)

    def fit_attributes_from_moments(self, moments, estimator):
        n = estimator.n_symbols
        if n:
            return {"n_symbols_": int(n)}
        if moments == MISSING_SYMBOL:
            raise ValueError("X: every symbol is missing (NaN); give n_symbols to fit the "
                             "alphabet size.")
        return {"n_symbols_": moments + 1}

    def table_index(self, X):
        # row 0 of the table is the missing symbol's, row m + 1 symbol m's
        return X + 1

    def update_tags(self, tags):
        # X is one sequence of non-negative integer symbols: a 1-D array or a single column
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        tags.input_tags.one_d_array = True
        return tags

    # ------------------------------------------------------------------ priors
    def resolve_prior(self, estimator, summary):
        K, M = estimator.n_components, estimator.n_symbols_
        return CategoricalPrior(emissionprob=check_dirichlet_prior(
            estimator.emissionprob_prior, "emissionprob_prior", (K, M), 1.0 / M))

    def check_init_posterior(self, init, prior, n_components):
        shape = prior.emissionprob.shape
        return CategoricalPosterior(
            emissionprob=init_posterior_array(init, "emissionprob", shape, positive=True))

    # ------------------------------------------------------------------ initialisation
    def initial_responsibilities(self, how, X, n_components, random_state):
        if how == "kmeans":
            raise ValueError("init_params='kmeans' needs Gaussian emissions; use 'random'.")
        # random soft responsibilities for every frame, counted as one VBE step would
        return random_state.dirichlet(np.ones(n_components), size=X.shape[0])

    def frame_features(self, X, prior):
        # one-hot symbols; a missing symbol (row 0 of the table) has no features
        features = np.zeros((X.shape[0], prior.emissionprob.shape[1] + 1))
        features[np.arange(X.shape[0]), self.table_index(X)] = 1.0
        return features[:, 1:]

    def random_posterior(self, prior, draw):
        return CategoricalPosterior(emissionprob=prior.emissionprob + draw(prior.emissionprob.shape))

    # ------------------------------------------------------------------ VBEM
    def stats(self, resp, X, prior, params=None):
        M = prior.emissionprob.shape[1]
        counts = np.zeros((M + 1, resp.shape[1]))
        np.add.at(counts, self.table_index(X), resp)
        return self.stats_from_table_counts(counts, X, prior)

    def stats_from_table_counts(self, counts, X, prior, params=None):
        # row 0 holds the counts of the missing symbols, which carry no statistics
        return CategoricalStats(emis=np.ascontiguousarray(counts[1:].T))

    def vbm(self, prior, stats):
        return CategoricalPosterior(emissionprob=prior.emissionprob + stats.emis)

    def expected_log_params(self, post):
        """E[ln B] (K, M) under the Dirichlet rows."""
        return dirichlet_expected_log(post.emissionprob)

    def plugin_params(self, post):
        """ln of the posterior-mean emission probabilities (K, M)."""
        return np.log(self._mean(post))

    def log_table(self, params, X):
        # a missing symbol has likelihood 1 in every state (row 0)
        return np.ascontiguousarray(np.vstack([np.zeros((1, params.shape[0])), params.T]))

    def frame_log_table(self, params, X):
        return np.ascontiguousarray(self.log_table(params, X)[self.table_index(X)])

    def expected_log_likelihood(self, stats, params, prior):
        return float(np.sum(stats.emis * params))

    def kl(self, post, prior):
        return float(np.sum(dirichlet_kl(post.emissionprob, prior.emissionprob)))

    def occupancy(self, stats):
        return stats.emis.sum(axis=1)

    @staticmethod
    def _mean(post):
        w = post.emissionprob
        return w / w.sum(axis=1, keepdims=True)

    def point_estimates(self, post):
        return {"emissionprob_": self._mean(post)}

    def n_parameters(self, post):
        K, M = post.emissionprob.shape
        return K * (M - 1)

    def sample(self, post, states, rng):
        emissionprob = self._mean(post)
        cdf = np.cumsum(emissionprob, axis=1)[states]
        r = rng.random_sample(states.shape[0])[:, None]
        X = np.minimum((r >= cdf).sum(axis=1), emissionprob.shape[1] - 1).reshape(-1, 1)
        return X.astype(np.int64)

    # ------------------------------------------------------------------ scoring
    def param_blocks(self, prior, n_components):
        return [("emissionprob", prior.emissionprob.shape, "simplex")]

    def param_density(self, hyper, n_components):
        return DirichletRows(hyper.emissionprob)

    def log_likelihood_tables(self, params, X):
        with np.errstate(divide="ignore"):
            log_B = np.log(np.asarray(params["emissionprob"], dtype=float))
        missing = X == MISSING_SYMBOL
        table = np.swapaxes(log_B[:, :, np.where(missing, 0, X)], 1, 2)
        return np.ascontiguousarray(np.where(missing[None, :, None], 0.0, table))

    def log_emission_along(self, params, states, X):
        missing = X == MISSING_SYMBOL
        with np.errstate(divide="ignore"):
            out = np.log(np.asarray(params["emissionprob"], dtype=float)[
                :, states, np.where(missing, 0, X)])
        return np.where(missing[None], 0.0, out)

    def complete_log_likelihood(self, params, stats, prior):
        emis = stats.emis
        with np.errstate(divide="ignore"):
            log_B = np.log(np.asarray(params["emissionprob"], dtype=float))
        return np.sum(np.where(emis > 0, emis * log_B, 0.0), axis=(1, 2))

    def log_marginal_likelihood(self, prior, stats):
        alpha = prior.emissionprob
        return np.sum(log_multivariate_beta(alpha + stats.emis) - log_multivariate_beta(alpha))

    def point_from_stats(self, prior, stats, kind="map", basis="softmax"):
        if kind == "ml":
            w = stats.emis + 1e-300
        elif basis == "natural":
            w = np.maximum(prior.emissionprob + stats.emis - 1.0, 1e-300)
        else:
            w = prior.emissionprob + stats.emis
        return CategoricalPoint(emissionprob=w / w.sum(axis=-1, keepdims=True))

    def point_log_prior_terms(self, params, basis):
        if basis != "softmax":
            return []
        # the posterior mean of a Dirichlet is the mode of its density times prod theta
        return [float(np.sum(np.log(params["emissionprob"])))]

    def initial_labels(self, X, n_components, rng):
        return rng.integers(0, n_components, size=X.shape[0])

    def simulate(self, params, states, rng):
        B = np.asarray(params["emissionprob"], dtype=float)[0]
        cdf = np.cumsum(B, axis=1)[states]
        u = rng.random(states.shape[0])[:, None]
        return np.minimum((u >= cdf).sum(axis=1), B.shape[1] - 1).astype(np.int64)

    def kernel_curvature(self, post, n_components):
        # every emission row sees about n / K frames
        return {"emissionprob": 1.0 / n_components}
