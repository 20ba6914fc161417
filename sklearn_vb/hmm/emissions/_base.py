"""The interface every HMM emission family implements.

An emission family is the part of a hidden Markov model that says how a frame ``x_t`` is
drawn given its state ``s_t = k``: the conditional density, the conjugate prior of its
parameters, and everything variational Bayesian EM and the scoring layer need from that
pair.  :class:`~sklearn_vb.hmm.VBHiddenMarkov` keeps the initial-state and transition
part (Dirichlet rows) and asks its family for the rest; the scoring adapter of the
estimator asks the same family object, so each piece of emission mathematics exists
once.

Families are stateless: every method is a function of the arrays it is given.
Hyperparameters travel as the family's dataclasses (``EmissionFamily.prior_type``,
``EmissionFamily.posterior_type``, e.g. ``GaussianPrior`` and ``GaussianPosterior``),
whose fields are :attr:`EmissionFamily.hyper_names`; the estimator stores field ``name``
of the prior as the fitted attribute ``<name>_prior_`` and of the posterior as
``<name>_posterior_``.  Expected statistics are the family's own dataclass too (e.g.
``GaussianStats``); the estimator keeps them next to its ``start`` and ``trans`` counts.
A point estimate of the emission parameters (the M step of ``method="ml"``/``"map"``)
is the family's ``EmissionFamily.point_type``, an :class:`EmissionPoint`.

Two groups of methods:

* VBEM (the estimator): validation of X, prior resolution, statistics from state
  responsibilities, the conjugate VBM update, the expected log-likelihood table
  E_q[ln p(x_t | s_t = k)] that feeds forward-backward, the plug-in table, KL, parameter
  count, point estimates and the sampler of frames given states.
* scoring (the adapter): parameter blocks of the emission parameters, prior and
  posterior densities and samplers over them, log-likelihood tables for a batch of
  parameter draws, the complete-data log evidence of statistics and the MAP / ML point
  from statistics.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import fields

import numpy as np

from ..._core.kernels.kmeans import kmeans
from .._blas_threads import forward_backward_blas
from ..forward_backward import forward_backward
from ._missing import impute_column_means

__all__ = ["EmissionFamily", "EmissionPoint", "forward_on_tables", "nearest_centre", "one_hot"]


def nearest_centre(X, centres):
    """Index of the nearest of ``centres`` (K, D) to every frame of ``X`` (n, D)."""
    d2 = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
    return np.argmin(d2, axis=1)


def one_hot(labels, K):
    """Hard responsibilities (n, K) of the labels."""
    resp = np.zeros((labels.shape[0], K))
    resp[np.arange(labels.shape[0]), labels] = 1.0
    return resp


class EmissionPoint:
    """Base of the families' point estimates of the emission parameters (their
    ``EmissionFamily.point_type`` dataclasses).

    The fields are the family's parameter blocks (:meth:`EmissionFamily.param_blocks`),
    same names and order, without the batch axis; a field is None where the family
    has no such block (e.g. the off-diagonal Cholesky entries of one-dimensional
    Gaussian states).  :meth:`blocks` and :meth:`from_blocks` convert to and from the
    scoring layer's parameter batches; nothing else does.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb.emissions import PoissonPoint
    >>> point = PoissonPoint(rates=np.array([[0.5], [4.0]]))
    >>> point.blocks()["rates"].shape                  # a batch of one parameter set
    (1, 2, 1)
    >>> PoissonPoint.from_blocks(point.blocks()).rates.ravel()
    array([0.5, 4. ])
    """

    def blocks(self):
        """The point as a parameter batch of one set: block name -> (1, ...) array."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = np.asarray(value)[None]
        return out

    @classmethod
    def from_blocks(cls, blocks, index=0):
        """Parameter set ``index`` of the parameter batch ``blocks`` (views, no copies)."""
        return cls(**{f.name: blocks[f.name][index] for f in fields(cls) if f.name in blocks})


def _split(names, vector, like, transform):
    """``{name: transform(slice of vector)}`` for the fields ``names`` of ``like``,
    each shaped like its field."""
    out, at = {}, 0
    for name in names:
        shape = np.shape(getattr(like, name))
        size = int(np.prod(shape))
        out[name] = transform(vector[at:at + size]).reshape(shape)
        at += size
    return out


def _positive_posterior(posterior_type, values):
    """The posterior (a ``posterior_type``) of the hyperparameters ``values``, or None
    unless every entry is finite and positive."""
    if not all(np.all(np.isfinite(v)) and np.all(v > 0) for v in values.values()):
        return None
    return posterior_type(**values)


class EmissionFamily(ABC):
    """One emission model of a hidden Markov model with its conjugate prior.

    The split follows the thesis's HMM: the transition part is Beal (2003), §3.4, and
    the emission part is any conjugate-exponential family (§2.4), the categorical one of
    §3.3 included.  Subclass it and register the class to add a family
    (``doc/extending.rst``).

    Attributes
    ----------
    emission : str
        The value of ``VBHiddenMarkov(emission=...)`` that selects the family.
    hyper_names : tuple of str
        Names of the prior / posterior hyperparameter arrays: the fields of
        ``prior_type`` and ``posterior_type``.
    prior_type, posterior_type : type
        Dataclasses of the prior and of the posterior hyperparameters.
    point_type : type
        Dataclass (an :class:`EmissionPoint`) of a point estimate of the emission
        parameters, as :meth:`point_from_stats` returns it; its fields are the names of
        :meth:`param_blocks`.
    dirichlet_blocks : tuple of str
        Hyperparameters that are Dirichlet concentrations, whose overall scale
        ``optimize_prior_strengths=True`` may tune (empty for non-Dirichlet families).
    default_inits : tuple of str
        What ``init_params="auto"`` means for the family: the kinds of start of one
        restart (with several, every restart runs one start of each kind and the fit
        keeps the highest final bound).
    random_params_init : bool
        Whether the random-parameter starts (``init_params="random_params"`` and
        ``"random_marginals"``) are available: they draw probability vectors, so they
        need a family whose parameters are Dirichlet rows (:meth:`random_posterior`).

    Examples
    --------
    >>> from sklearn_vb.emissions import EmissionFamily, emission_family
    >>> family = emission_family("gaussian", "diag")
    >>> isinstance(family, EmissionFamily), family.emission, family.hyper_names
    (True, 'gaussian', ('means', 'beta', 'dof', 'scale'))
    >>> emission_family("categorical").dirichlet_blocks
    ('emissionprob',)
    """

    emission: str = ""
    hyper_names: tuple = ()
    prior_type: type = None
    posterior_type: type = None
    point_type: type = None
    dirichlet_blocks: tuple = ()
    default_inits: tuple = ("kmeans",)
    random_params_init: bool = False
    #: whether X may hold NaN, a missing value marginalised under the model
    supports_missing: bool = True

    # ------------------------------------------------------------------ data
    @abstractmethod
    def check_X(self, X, estimator, reset):
        """Validate ``X`` for this family and return it in the family's array form.

        ``reset=True`` during ``fit`` (the estimator's ``n_features_in_`` and the like
        are then set), False for data given to a fitted estimator.
        """

    def fit_attributes(self, X, estimator):
        """Fitted attributes that depend on the training data only (e.g. ``n_symbols_``)."""
        return self.fit_attributes_from_moments(self.data_moments(X), estimator)

    def fit_attributes_and_summary(self, X, estimator):
        """:meth:`fit_attributes` and :meth:`summarise` of the training data ``X``
        together: one :meth:`data_moments` pass serves both unless a family overrides
        either of them."""
        base = EmissionFamily
        if (type(self).fit_attributes is base.fit_attributes
                and type(self).summarise is base.summarise):
            moments = self.data_moments(X)
            return (self.fit_attributes_from_moments(moments, estimator),
                    self.summary_from_moments(moments))
        return self.fit_attributes(X, estimator), self.summarise(X)

    def table_index(self, X):
        """Row of the emission table used by every frame (default: one row per frame)."""
        return np.arange(X.shape[0], dtype=np.int64)

    def summarise(self, X):
        """Data summaries that data-dependent default priors need (fit data only): the
        family's summary dataclass, or None when its prior does not depend on the data."""
        return self.summary_from_moments(self.data_moments(X))

    # The training data's attributes and summary from data given in chunks (a dask
    # array): every chunk's moments are computed where it lives, merged, and turned
    # into what fit_attributes and summarise return for the whole data.

    def data_moments(self, X):
        """What :meth:`fit_attributes` and :meth:`summarise` need from the frames ``X``
        (one chunk of the training data), in a form :meth:`merge_moments` can combine;
        None when they need nothing."""
        return None

    def merge_moments(self, parts):
        """The moments of the concatenation of the chunks whose moments are ``parts``
        (in order)."""
        return None

    def fit_attributes_from_moments(self, moments, estimator):
        """:meth:`fit_attributes` of data with these moments."""
        return {}

    def summary_from_moments(self, moments):
        """:meth:`summarise` of data with these moments."""
        return None

    def column_means_from_moments(self, moments):
        """The mean of the observed entries of every column of data with these moments
        (D,), which stand for the missing entries in the starts of a fit
        (``impute_column_means``); None when the
        family's starts do not impute."""
        return None

    def update_tags(self, tags):
        """Adjust scikit-learn's input tags for this family's kind of X."""
        return tags

    # ------------------------------------------------------------------ priors
    @abstractmethod
    def resolve_prior(self, estimator, summary):
        """Prior hyperparameters (a ``prior_type``) from the estimator's constructor
        arguments and the data ``summary`` (see :meth:`summarise`); raises
        ``ValueError`` naming a bad argument."""

    @abstractmethod
    def check_init_posterior(self, init, prior, n_components):
        """Posterior hyperparameters (a ``posterior_type``) from ``init_posterior``
        (a user dict), validated."""

    def hyper_from_attributes(self, owner, kind, convert=None):
        """The prior (``kind="prior"``) or posterior (``"posterior"``) hyperparameters
        stored on ``owner`` as the attributes ``<name>_<kind>_``, each passed through
        ``convert`` when given."""
        cls = {"prior": self.prior_type, "posterior": self.posterior_type}[kind]
        values = {name: getattr(owner, f"{name}_{kind}_") for name in self.hyper_names}
        if convert is not None:
            values = {name: convert(value) for name, value in values.items()}
        return cls(**values)

    def hyper_attributes(self, hyper, kind):
        """The attributes ``<name>_<kind>_`` that store the hyperparameters ``hyper``
        (inverse of :meth:`hyper_from_attributes`), attribute name -> array."""
        return {f"{name}_{kind}_": getattr(hyper, name) for name in self.hyper_names}

    # ------------------------------------------------------------------ initialisation
    def initial_responsibilities(self, how, X, n_components, random_state):
        """State responsibilities (n_frames, K) from which the first VBM step starts.

        The default suits vector-valued frames: a hard labelling by k-means
        (``how="kmeans"``) or by the nearest of K randomly chosen frames
        (``how="random"``).  Missing entries count as their column's mean here (a
        start only: the fit itself marginalises them).
        """
        X = impute_column_means(X)
        K = n_components
        n = X.shape[0]
        if n < K:
            raise ValueError(
                f"init_params={how!r} needs at least n_components={K} samples; "
                f"got n_samples={n}."
            )
        if how == "kmeans":
            labels = kmeans(X, K, random_state.randint(2**31 - 1))[0]
        else:
            labels = nearest_centre(X, X[random_state.choice(n, K, replace=False)])
        return one_hot(labels, K)

    def frame_features(self, X, prior):
        """Features (n_frames, d) of every frame on which the ``"context"`` start runs
        k-means (``sklearn_vb.hmm._context``; ``prior`` the emission prior, which
        knows the family's dimensions): by default the frames themselves, as the
        ``"kmeans"`` start clusters them, with missing entries at their column's mean."""
        return impute_column_means(X).astype(float)

    def random_posterior(self, prior, draw):
        """Posterior ``prior + draw(shape)`` for the random-parameter starts (only when
        ``random_params_init``; ``draw`` returns random probability vectors)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ VBEM
    @abstractmethod
    def stats(self, resp, X, prior, params=None):
        """Expected sufficient statistics of frame responsibilities ``resp`` (n_frames, K),
        as the family's statistics dataclass.

        ``params``: the emission quantities of the E step that gave ``resp`` (the
        :meth:`expected_log_params` or :meth:`plugin_params` of a posterior in VB, a
        parameter batch of one set of :meth:`param_blocks` in point EM), or None (a
        start's labelling).  Only families with ``latent_missing`` use them: the
        expected statistics of the missing entries are taken under their posterior
        given the observed ones."""

    def stats_from_table_counts(self, counts, X, prior, params=None):
        """Statistics from the forward-backward kernel's per-table-row state counts
        (rows as :meth:`table_index`; with one row per frame these are the frame
        responsibilities); ``params`` as in :meth:`stats`."""
        return self.stats(counts, X, prior, params)

    #: whether the statistics of frames with missing entries depend on the emission
    #: parameters of the E step (the missing entries are latent variables with a
    #: posterior of their own, as for full-covariance Gaussians); families that
    #: marginalise a missing entry out of the frame density leave it False
    latent_missing: bool = False

    @abstractmethod
    def vbm(self, prior, stats):
        """The conjugate update: posterior hyperparameters (a ``posterior_type``)
        given the statistics."""

    def pack(self, post):
        """The posterior hyperparameters as a 1-D vector in coordinates where SQUAREM
        extrapolates (see :mod:`sklearn_vb.base`): every point is, or can be checked to
        be, a valid posterior.  Default: the logarithms of all (positive) entries."""
        return np.concatenate([np.log(np.asarray(getattr(post, name), dtype=float)).ravel()
                               for name in self.hyper_names])

    def unpack(self, vector, like):
        """Inverse of :meth:`pack`, shaped like the posterior ``like``; None when the
        vector is not a valid posterior."""
        return _positive_posterior(self.posterior_type,
                                   _split(self.hyper_names, vector, like, np.exp))

    # ------------------------------------------------------------------ online VB
    def add_stats(self, a, b):
        """The statistics of the data of ``a`` and ``b`` together (chunks of the data
        of a distributed fit).  Default: every field summed, right for statistics that
        are sums over frames."""
        return type(a)(**{f.name: getattr(a, f.name) + getattr(b, f.name) for f in fields(a)})

    def scale_stats(self, stats, factor):
        """The statistics of ``factor`` copies of the data of ``stats`` (the
        minibatch's statistics scaled to the whole stream in online VB).  Default:
        every field times ``factor``, right for statistics that are sums over frames
        of terms weighted by the responsibilities (a field that is None stays None)."""
        return type(stats)(**{f.name: (None if getattr(stats, f.name) is None
                                       else factor * getattr(stats, f.name))
                              for f in fields(stats)})

    def natural(self, post, prior):
        """The posterior hyperparameters as a 1-D vector of coordinates that are an
        affine function of the natural parameters of q, so that a convex combination
        of two posteriors in them is their convex combination in natural parameters
        (the natural-gradient step of online VB, ``sklearn_vb.hmm._online``).  They
        may depend on ``prior`` (an origin that keeps rounding small).  Default: the
        hyperparameters themselves, right for families whose :meth:`vbm` adds
        statistics to them (Dirichlet counts; Gamma shapes and rates)."""
        return np.concatenate([np.asarray(getattr(post, name), dtype=float).ravel()
                               for name in self.hyper_names])

    def from_natural(self, vector, prior, like):
        """Inverse of :meth:`natural`, shaped like the posterior ``like``; None when the
        vector is not a valid posterior."""
        return _positive_posterior(self.posterior_type,
                                   _split(self.hyper_names, vector, like, np.array))

    @abstractmethod
    def expected_log_params(self, post):
        """What :meth:`log_table` needs to evaluate E_q[ln p(x | s = k)] under ``post``."""

    @abstractmethod
    def plugin_params(self, post):
        """What :meth:`log_table` needs to evaluate ln p(x | s = k) at the posterior mean."""

    @abstractmethod
    def log_table(self, params, X):
        """Log emission weights (R, K), one row per table row (see :meth:`table_index`)."""

    def frame_log_table(self, params, X):
        """Log emission weights (n_frames, K), one row per frame."""
        return self.log_table(params, X)

    @abstractmethod
    def expected_log_likelihood(self, stats, params, prior):
        """sum_t sum_k q(s_t = k) E[ln p(x_t | s_t = k)] from the statistics of q(s) and
        the :meth:`expected_log_params` of a q(theta)."""

    @abstractmethod
    def kl(self, post, prior):
        """KL(q || p) of the emission parameters of all states, in nats."""

    @abstractmethod
    def occupancy(self, stats):
        """Expected number of frames of every state, (K,)."""

    @abstractmethod
    def point_estimates(self, post):
        """Posterior-mean attributes of the fitted estimator, e.g. ``{"means_": ...}``."""

    @abstractmethod
    def n_parameters(self, post):
        """Number of free emission parameters of all states together."""

    @abstractmethod
    def sample(self, post, states, rng):
        """Frames drawn from the posterior-mean emissions of ``states`` (a RandomState)."""

    # ------------------------------------------------------------------ scoring
    # Parameters theta of the emissions are a dict of named blocks, each with a leading
    # batch axis of C parameter sets (the scoring layer's convention).

    @abstractmethod
    def param_blocks(self, prior, n_components):
        """The emission parameter blocks as ``(name, shape, constraint)`` triples
        (constraint "real", "positive" or "simplex", as the scoring layer's ParamBlock)."""

    @abstractmethod
    def param_density(self, hyper, n_components):
        """The prior (``hyper`` = prior hyperparameters) or a posterior (posterior
        hyperparameters) over the emission blocks: an object with ``log_pdf(params)``
        (C,), ``sample(rng, size)`` (blocks), ``mean()`` (blocks, batch of 1: the
        posterior-mean plug-in), ``broadened(dof=None, broaden=None)`` (a heavier-tailed
        or wider version, for importance-sampling proposals) and ``unconstrained_sd()``
        (approximate standard deviations of the unconstrained coordinates)."""

    @abstractmethod
    def log_likelihood_tables(self, params, X):
        """ln p(x_t | s_t = k, theta_c), shape (C, n_frames, K)."""

    def log_likelihood_batch(self, log_pi, log_A, params, X, starts, ends):
        """ln p(sequence | theta_c) (C, n_sequences) and ln p(x_t | x_<t, theta_c)
        (C, n_frames) by the forward algorithm, one parameter set at a time on the
        tables of :meth:`log_likelihood_tables` (families with a compiled batch kernel
        override this)."""
        return forward_on_tables(log_pi, log_A, self.log_likelihood_tables(params, X), starts,
                                 ends)

    @abstractmethod
    def log_emission_along(self, params, states, X):
        """ln p(x_t | s_t = states[t], theta_c) along a state path, (C, n_frames)."""

    @abstractmethod
    def complete_log_likelihood(self, params, stats, prior):
        """sum_t sum_k q(s_t = k) ln p(x_t | s_t = k, theta_c) from statistics, (C,)."""

    @abstractmethod
    def log_marginal_likelihood(self, prior, stats):
        """ln of the integral of the prior times exp(complete log-likelihood) over the
        emission parameters, at (fractional) statistics: the emission part of the
        complete-data evidence."""

    @abstractmethod
    def point_from_stats(self, prior, stats, kind="map", basis="softmax"):
        """The emission M step, a ``point_type``: ``kind="ml"`` the maximum
        likelihood point, ``"map"`` with ``basis="softmax"`` the posterior mean of the
        conjugate posterior (the estimator's plug-in), ``basis="natural"`` its mode."""

    def point_attributes(self, point):
        """The fitted attributes of the emission point ``point`` (a ``point_type``),
        those :meth:`point_estimates` gives a VB fit; by default ``<block>_`` for every
        block, a float copy (families whose blocks are other coordinates override it)."""
        return {f"{f.name}_": np.array(getattr(point, f.name), dtype=float)
                for f in fields(point) if getattr(point, f.name) is not None}

    @abstractmethod
    def point_log_prior_terms(self, params, basis):
        """Terms added, in order, to ln p(theta) in the blocks' coordinates to give the
        log prior that the point of :meth:`point_from_stats` maximises in ``basis``."""

    def initial_labels(self, X, n_components, rng):
        """A hard labelling (n_frames,) to start an EM restart from: every frame to the
        nearest of K random frames (``rng`` a numpy Generator); missing entries count
        as their column's mean."""
        X = impute_column_means(X)
        T = X.shape[0]
        centres = X[rng.choice(T, n_components, replace=T < n_components)]
        d2 = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
        return np.argmin(d2, axis=1)

    @abstractmethod
    def simulate(self, params, states, rng):
        """Frames drawn given ``states`` from the single parameter set ``params``."""

    @abstractmethod
    def kernel_curvature(self, post, n_components):
        """Per-frame curvature of the log-likelihood in the unconstrained coordinates of
        every emission block near the posterior ``post`` (number or flat array per
        block), for tuning random-walk steps."""


def forward_on_tables(log_pi, log_A, tables, starts, ends):
    """ln p(sequence | theta_c) (C, n_sequences) and ln p(x_t | x_<t, theta_c) (C,
    n_frames) by the forward algorithm on the per-frame log emission tables ``tables``
    (C, n_frames, K), one parameter set at a time (``log_pi`` (C, K), ``log_A`` (C, K,
    K))."""
    C, T, _ = tables.shape
    index = np.arange(T, dtype=np.int64)
    seq = np.empty((C, starts.shape[0]))
    frame = np.empty((C, T))
    with forward_backward_blas(tables[0], index, starts, ends):
        for c in range(C):
            out = forward_backward(np.ascontiguousarray(log_pi[c]),
                                   np.ascontiguousarray(log_A[c]),
                                   np.ascontiguousarray(tables[c]), index, starts, ends, False)
            seq[c], frame[c] = out[0], out[1]
    return seq, frame
