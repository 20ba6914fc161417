"""Variational Bayesian hidden Markov models (Beal 2003, Chapter 3).

:class:`VBHiddenMarkov` fits an HMM by variational Bayesian EM.  The posterior over
parameters factorises into Dirichlet distributions for the initial distribution and for
every row of the transition matrix, whose updates and bound terms are the functions of
:mod:`sklearn_vb.hmm._vbem` (the starts those of ``_init``), and into the posterior of
the emission parameters, which an emission family of :mod:`sklearn_vb.emissions`
handles (Dirichlet rows for categorical emissions, Normal-Wishart or per-dimension
Normal-Gamma for Gaussian ones, ...).  The posterior over the hidden path is computed by
a scaled forward-backward pass run with the sub-normalised parameters exp E[ln theta]
(``sklearn_vb.hmm.forward_backward``).  ``partial_fit`` and
``learning_method="online"`` replace the VBM step by natural-gradient steps from
minibatches of sequences (stochastic variational inference, ``_online`` and
``_online_fit``).

The lower bound is recorded after each VBE step, for the stored pair (q(s), q(theta)):

    F = sum_i ln Z_i - KL[q(pi) || p(pi)] - sum_j KL[q(A_j) || p(A_j)] - sum_j KL[q(emission_j) || p]

with every constant included (also the -D/2 ln 2 pi per frame of Gaussian emissions).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._core.distributions import dirichlet_expected_log
from .._core.docstrings import (ONLINE_LEARNING_RESTARTS, PARTIAL_FIT_NOT_SCORED, fill_doc,
                                online_learning_epochs, online_learning_result,
                                online_step_params, partial_fit_minibatches,
                                partial_fit_stream)
from ._clamp import check_states
from ._constraints import PARAMETER_CONSTRAINTS
from ._data import MinibatchPasses, _FitData
from ._fitted import hyper_arrays, set_fitted_posterior
from ._distributed import dask_fit_data, is_dask_array, is_dask_input, in_memory
from ._working_set import check_batch_fit_memory
from ._fit_combinations import check_fit_combinations
from ._init import start_point
from ._inputs import n_transition_parameters, transition_inputs_of, transition_prior
from ._online_fit import partial_fit, run_online
from ._online_start import restart_starts, start_posterior
from ._point_fit import e_step, m_step, objective as point_objective, set_fitted_point
from ._predict import plugin_forward, sample_sequence, state_marginals, viterbi_path
from ._state import DirichletHMM
from ._vbem import (expected_log_params, kl_terms,
                    lower_bound_after_vbm, optimize_dirichlet_scale, pack_posterior,
                    unpack_posterior, vbe, vbe_statistics, vbm)
from .._core.validation import (
    check_sequences,
    check_sequences_routed,
    check_unused_y,
    fitted_from_sequence_ids,
    sequence_bounds,
)
from .._core.base import Step, VBEMEstimator
from .emissions import emission_family
from .emissions._checks import check_dirichlet_prior

__all__ = ["VBHiddenMarkov"]

#: ``X`` and ``y`` of the methods that fit
_SEQUENCES_X_Y = """\
X : array-like of shape (n_samples, n_features)
    Concatenated sequences (integer symbols in one column for categorical
    emissions).  NaN marks a missing value, marginalised out (missing at
    random; every emission family).
y : None, or one entry per row (ignored)
    Anything else is refused: hmmlearn's ``fit(X, lengths)`` would put the
    lengths here.
"""

#: the constructor parameters of input-driven transitions
_TRANSITION_INPUTS_PARAMS = """\
transition_inputs : {"categorical", "continuous"} or None, default=None
    Input-driven transitions (an input-output HMM), given the inputs ``U`` of the
    rows of ``X`` (passed to ``fit`` and to every method that reads sequences; the
    input of a sequence's first row is not used: its state follows the initial
    distribution).  None: a plain HMM.  ``"categorical"``: ``U`` holds one input
    level u_t in ``[0, n_input_levels)`` per row and the transition into frame t is
    drawn from the matrix of its level, p(s_t = j | s_{t-1} = i, u_t = l) =
    A[l, i, j]; each of the L * K rows has its own Dirichlet prior
    (``transmat_prior``), so VB stays exactly conjugate; ``transmat_posterior_``,
    ``transmat_prior_`` and ``transmat_`` then have shape (L, K, K).
    ``"continuous"``: ``U`` is a real (n_samples, P) array and the transitions out
    of state k are a stick-breaking multinomial-logistic function of x_t = [u_t, 1]:
    p(s_t = j | s_{t-1} = k, u_t) = sigma(psi_kj) prod_{i<j} (1 - sigma(psi_ki)),
    psi_ki = w_ki . x_t, the last state taking what the K - 1 sticks leave, with
    Gaussian priors on the coefficients w_ki (``transition_coef_prior``).  VB bounds
    the logistic by Jaakkola and Jordan's bound (equivalently, Polya-gamma
    augmentation), so q(w_ki) is Gaussian and ``lower_bound_`` stays a lower bound on
    ln p(X | U).  Both kinds need ``method="vb"`` and ``learning_method="batch"``.
    See the user guide (Hidden Markov models, "Input-driven transitions").
n_input_levels : int or None, default=None
    Number of input levels L for ``transition_inputs="categorical"`` (default: the
    largest level in the training ``U`` plus one).  Give it when a level may be
    absent from the training data: its matrices then keep their prior.
transition_coef_prior : float or array-like of shape (P,), default=1.0
    ``transition_inputs="continuous"`` only: the prior variance of the input
    coefficients of every w_ki (one for all, or one per input column); their prior
    mean is 0.  The prior is on the scale of ``U`` as given: with standardised inputs
    the default says "effects of about one logit per standard deviation".  The bias
    of every stick has the Gaussian prior with the mean and variance of that stick's
    logit under the Dirichlet row of ``transmat_prior`` (a scalar or (K, K); default
    1/K per entry, which gives N(0, pi^2) for K = 2), so that without an input effect
    the model differs from the plain HMM only in the shape of the row prior.
"""

#: the fitted attributes of input-driven transitions
_TRANSITION_INPUTS_ATTRIBUTES = """\
n_input_levels_, n_input_features_ : int
    With categorical transition inputs the number of levels L; with continuous ones
    the number of input columns P.
transition_coef_, transition_coef_covariance_ : ndarray
    ``transition_inputs="continuous"`` only: the means (K, K - 1, P + 1) and
    covariances (K, K - 1, P + 1, P + 1) of q(w_ki), the bias last.
    ``transmat_posterior_`` and ``transmat_prior_`` then hold q(W) and p(W)
    (``mean``, ``precision``), and ``transmat_`` is not set: the transition matrices
    differ from frame to frame, and
    :func:`sklearn_vb.hmm.stick_breaking_transitions` gives them at any ``U`` from
    ``transition_coef_`` (the plug-in of ``score``, ``predict`` and ``sample``).
"""

#: ``U`` of ``fit``
_FIT_TRANSITION_INPUTS = """\
U : array-like of shape (n_samples,) or (n_samples, P), optional
    Transition inputs (required with ``transition_inputs`` and refused without):
    the input level of every row (``"categorical"``: integers in
    ``[0, n_input_levels)``) or its P real inputs (``"continuous"``).  The
    transition into row t depends on ``U[t]`` (the input of a sequence's first row
    is not used), and the bound is a bound on ln p(X | U).
"""

#: ``X`` and ``y`` of ``fit``, which also reads dask collections
_FIT_X_Y = """\
X : array-like of shape (n_samples, n_features), dask array or dask bag
    Concatenated sequences (integer symbols in one column for categorical
    emissions).  NaN marks a missing value, marginalised out (missing at
    random; every emission family).  A dask array (whose row chunks hold whole
    sequences, with ``lengths``), a dask bag whose items are sequences, or a
    list of dask delayed objects (each one sequence or a list of them; both
    without ``lengths``) is fitted by batch VBEM with the VBE step run where its
    chunks live (user guide: Hidden Markov models, "On a dask cluster").
y : None, or one entry per row (ignored)
    Anything else is refused: hmmlearn's ``fit(X, lengths)`` would put the
    lengths here.
"""


# ---------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------


@fill_doc(online_learning_epochs=online_learning_epochs("sequences"),
          online_learning_result=online_learning_result("sequences", "frame",
                                                        "forward-backward pass"),
          online_learning_restarts=ONLINE_LEARNING_RESTARTS,
          online_step_params=online_step_params("sequences"),
          partial_fit_minibatches=partial_fit_minibatches("sequences",
                                                          ", and sequences are never split"),
          partial_fit_stream=partial_fit_stream("sequences"),
          partial_fit_not_scored=PARTIAL_FIT_NOT_SCORED, sequences_X_y=_SEQUENCES_X_Y,
          transition_inputs_params=_TRANSITION_INPUTS_PARAMS,
          transition_inputs_attributes=_TRANSITION_INPUTS_ATTRIBUTES,
          fit_transition_inputs=_FIT_TRANSITION_INPUTS,
          fit_X_y=_FIT_X_Y)
class VBHiddenMarkov(DensityMixin, VBEMEstimator):
    """Variational Bayesian hidden Markov model with categorical, Gaussian or Poisson emissions.

    Parameters
    ----------
    n_components : int, default=2
        Number of hidden states K.  States that the data do not support are switched
        off by VB (their posterior equals the prior); see ``n_effective_components_``.
    emission : {"categorical", "gaussian", "poisson"}, default="categorical"
        Emission model (a family of :mod:`sklearn_vb.emissions`).  Categorical data
        ``X`` is one column (or 1-D) of integer symbols in ``[0, n_symbols)``; Gaussian
        data is a real (n_samples, n_features) array; Poisson data is an
        (n_samples, n_features) array of non-negative integer counts, independent
        Poisson features given the state.  NaN in ``X`` marks a missing value, which
        every method marginalises out under the model, assuming it is missing at random
        (every emission family; with full covariances the missing entries of a
        partially observed frame are latent variables of the mean field).
    covariance_type : {"full", "diag"}, default="full"
        Gaussian emissions only: Normal-Wishart (full) or per-dimension Normal-Gamma
        (diagonal) prior and posterior on the state means and precisions.
    n_symbols : int or None, default=None
        Alphabet size M for categorical emissions (default: largest symbol + 1).
    startprob_prior, transmat_prior : float, array-like or None
        Dirichlet prior of the initial distribution and of every transition row, as
        *per-entry* concentrations (a scalar is broadcast to every entry; arrays of shape
        (K,) or, for ``transmat_prior``, (K, K), or (L, K, K) with transition inputs,
        where a (K, K) array is used for every level).  Default None: 1/K per entry, total
        concentration 1 per row (Beal's and hmmlearn's convention).  The thesis's
        strength f corresponds to the scalar f/K.
    emissionprob_prior : float, array-like or None
        Dirichlet prior of every categorical emission row, per entry (shape (M,) or
        (K, M)).  Default 1/M per entry.
    means_prior : float, array-like of shape (n_features,) or None
        Gaussian prior mean m0 of every state (default: the data mean, data-dependent).
    beta_prior : float, default=1.0
        Gaussian prior precision scaling beta0: mu | Lambda ~ N(m0, (beta0 Lambda)^-1).
    dof_prior : float or None
        Wishart degrees of freedom nu0 (full; default n_features + 1) or, for diagonal
        covariances, twice the Gamma shape a0 = nu0/2 of each precision (default 2).
    scale_prior : float, array-like or None
        Inverse Wishart scale W0^-1 (full, (D, D)) or twice the Gamma rates, 2 b0
        ((D,), diag); a scalar means that multiple of the identity.  Default
        ``dof_prior * Cov(X)`` (or ``dof_prior * Var(X)``), so that the prior mean
        precision equals the data precision (data-dependent).
    rate_prior : pair (shape, rate) or None
        Poisson emissions only: Gamma(shape a0, rate b0) prior of every state's rates
        (prior mean a0 / b0); each a scalar or an array broadcast to (n_features,) or
        (K, n_features).  Default None: a0 = 1 and b0 = 1 / mean(X) per feature (an
        exponential prior whose mean is the data mean, data-dependent; a feature mean
        below 1e-3 counts as 1e-3).
    {transition_inputs_params}
    optimize_prior_strengths : bool, default=False
        If True, before every VBM step the overall scale of each Dirichlet prior block
        (initial, transition, categorical emission) is set to maximise the bound
        (type-II maximum likelihood of the strengths); the bound then bounds
        p(X | optimised priors).
    method : {"vb", "map", "ml"}, default="vb"
        ``"vb"`` runs VBEM.  ``"ml"`` and ``"map"`` run EM for a point estimate (Beal
        2003, section 3.3; the baselines of the thesis's experiments) with the same
        initialisations, restarts and convergence rule: the start is the mean of the
        initial q(theta) of ``init_params``, then E steps (ordinary forward-backward at
        the point) and M steps alternate.  ``"ml"`` maximises ln p(X | theta); ``"map"``
        maximises ln p(X | theta) + ln p(theta) in the softmax basis (rows
        ``(u + N) / sum(u + N)``, valid for every prior below 1; the emission point is the
        posterior mean of the conjugate update), the basis of the thesis's MAP runs.  The
        point is in ``startprob_``, ``transmat_`` and the emission attributes
        (``emissionprob_``, ``means_``/``covars_``, ``rates_``); ``score``,
        ``predict`` and the other predictions use it.  ``lower_bound_`` and
        ``lower_bounds_`` then hold the EM objective (also in ``objective_`` and
        ``objectives_``), which is not a bound on ln p(X): for ``"ml"`` the
        log-likelihood at the point (``log_likelihood_``), for ``"map"`` that plus the
        log prior term.  EM never decreases it, and the loop checks this as it checks the
        VB bound.  Point fits have no q(theta), so ``score_bound`` and the scores of
        :mod:`sklearn_vb.scoring` that need one are not available.
    init_params : {"auto", "random_marginals", "random_params", "context", "random", "kmeans", "posterior"}, default="auto"
        Initial q(theta):

        * "random_params" (categorical; the thesis's scheme without its ML pre-run)
          draws every probability vector as normalised Uniform(0, 1) entries theta0 and
          sets w = u + 10 theta0;
        * "random_marginals" (categorical) computes the state marginals q(s_t) of one
          VBE pass under such random parameters, shrinks them towards uniform,
          r_t = 0.7 / K + 0.3 q(s_t), and takes one VBM step from r;
        * "random" is one VBM step from random soft state responsibilities of every
          frame (categorical) or from a hard assignment of the frames to the nearest of
          K random frames (Gaussian, Poisson);
        * "kmeans" (Gaussian, Poisson) starts from a k-means labelling;
        * "context" is one VBM step from a k-means labelling of every frame together
          with the frames before and after it in its sequence (one-hot symbols for
          categorical emissions, the frames themselves otherwise;
          ``sklearn_vb.hmm._context``): states that emit alike but follow
          different states start apart;
        * "posterior" uses ``init_posterior``;
        * "auto" (default): for categorical emissions every restart runs three starts,
          "random_marginals", "random_params" and "context", each to convergence, and
          the fit keeps the run with the highest bound; for Gaussian and Poisson
          emissions it is "kmeans".

        The first recorded bound is that of the initial q(theta).

        Why these starts by default: per-frame random responsibilities ("random")
        aggregate to almost equal counts for every state (the differences shrink as
        1/sqrt(n_samples)), so q(theta) starts next to the symmetric saddle point where
        all states are copies of one another; VBEM leaves it only slowly or stops there.
        The shrunk marginals start near that point, where VB switches off the states
        the data do not need, but displaced in a direction the data define; on data
        that need many states it often ends with too few.  Random parameters break the
        symmetry decisively and find many-state solutions, but commit every state to a
        random role, and with more states than the data support VB then keeps
        superfluous ones.  Neither kind dominates, and where a start keeps a state the
        data do not support its bound is lower, so the bound chooses between them.
        Both rarely separate states that emit the same symbols and differ only in
        what precedes and follows them (cycles such as (abc)* and (acb)*), which the
        context start does from its first step; on sticky data with noisy emissions
        it is the weakest of the three, and the bound passes it over.  The context
        start runs last, so the first two draw the same random numbers as they would
        alone.  The cost is about that of the three runs; ``n_init`` counts restarts,
        and with ``keep_restarts=True`` ``restarts_`` holds every run of each.  The measurements
        behind this are in the user guide (Hidden Markov models, "Starting points").
    init_posterior : dict or None
        Initial posterior parameters for ``init_params="posterior"``: keys
        ``startprob`` (K,), ``transmat`` (K, K) and ``emissionprob`` (K, M) (Dirichlet
        counts), for Gaussian emissions ``means`` (K, D), ``beta`` (K,), ``dof`` (K,)
        and ``scale`` ((K, D, D) or (K, D)), for Poisson emissions ``rate_shape`` and
        ``rate_rate`` (K, D).
    max_iter, tol, n_init, random_state, warm_start, verbose, verbose_interval, bound_check, keep_restarts
        See :class:`sklearn_vb.base.VBEMEstimator`.  ``max_iter`` defaults to 1000, the
        thesis's setting: VB-HMM runs typically need 100-300 iterations to reach
        ``tol`` (with ``learning_method="online"`` it counts epochs and ``tol`` is per
        frame).  ``tol`` defaults to 1e-4 nats: with 1e-3, fits of many states on
        long texts can stop on a plateau a few nats below the optimum that a long run
        from the same start reaches.  ``tol`` is in nats on the total
        bound (not per frame: a long data set needs as many iterations to reach it as a
        short one needs for the same relative precision).  Convergence is declared when
        the bound changed by less than ``tol`` *and* its increments are not growing: a
        run that is leaving a saddle point (e.g. symmetric states) shows tiny but
        accelerating increments and is continued.  At least three iterations run.
        ``warm_start`` continues on the same data.
    acceleration : {"squarem"} or None, default="squarem"
        Extrapolate the VBEM fixed point (SQUAREM, Varadhan & Roland 2008; see
        :mod:`sklearn_vb.base`) in log Dirichlet counts and, for Gaussian emissions,
        natural Normal-Wishart (Normal-Gamma) parameters; an extrapolation is kept only
        when it does not lower the bound, so the bound still never decreases.  It
        starts once the last eight bound increments have shrunk one after another
        (before that, states are still breaking symmetry or being switched off, and
        extrapolating mostly leads elsewhere).  None runs plain VBEM.  Not used by
        online learning.
    learning_method : {"batch", "online"}, default="batch"
        How ``fit`` updates q(theta) (``method="vb"`` only), as in scikit-learn's
        ``LatentDirichletAllocation``.
        {online_learning_epochs}
        An epoch records in ``lower_bounds_`` a stochastic estimate of the bound: the
        sum over its minibatches of ln Z of each (under the q(theta) that its step
        started from) minus the KL terms of q(theta) at the end of the epoch.
        {online_learning_result}
        ``acceleration`` and ``bound_check`` do not apply (the estimate may decrease).
        {online_learning_restarts}
        With ``init_params="auto"`` every restart starts as the first
        :meth:`partial_fit` does, on ``batch_size`` sequences drawn at random (scaled
        to the sequences of ``X``): the shrinking steps would not lead q(theta) off a
        start where states are still copies of one another.  For one long sequence
        (or a few) set ``subchain_length``: the minibatches are then subchains, and the
        starts of ``"auto"`` run online in turn, the kept one chosen as between restarts.
    {online_step_params}
    batch_size : int, default=128
        Number of sequences in a minibatch (``learning_method="online"`` and
        :meth:`partial_fit`; sequences are not split), or of subchains with
        ``subchain_length``.
    total_samples : float, default=1e6
        Number of sequences of the whole stream that :meth:`partial_fit` learns from:
        a minibatch's expected statistics are multiplied by
        ``total_samples / n_minibatch_sequences`` before the step.  ``fit`` uses the
        number of sequences of ``X`` instead.  Not used with ``subchain_length`` (the
        subchains are scaled to the frames of ``X``).
    subchain_length : int or None, default=None
        Online learning only (:meth:`partial_fit` and ``learning_method="online"``):
        None makes minibatches of whole sequences; an int L makes every minibatch
        ``batch_size`` subchains of L frames drawn from the sequences of ``X`` by
        ``random_state`` (stochastic VB for HMMs, Foti, Xu, Laird & Fox 2014), the way
        to learn online from one long sequence.  Each subchain's local step is a
        forward-backward pass over the subchain extended by ``buffer_length`` frames on
        both sides (clipped to its sequence); the buffers only condition the posterior
        of the subchain's frames and their statistics are discarded.  Every frame owns
        its emission statistic and the transition into it (the first frame of a
        sequence the start statistic instead, so q(pi) learns only from subchains that
        begin a sequence), and the subchain positions are drawn so that every frame is
        equally likely to be in a subchain: a sequence of T > L frames has the
        T + L - 1 stretches of L frames that overlap it, clipped to it; a sequence of
        at most L frames is always taken whole.  With P such positions over all
        sequences the statistics of a step are multiplied by ``P / (batch_size * L)``,
        which makes them exactly unbiased for those of all of ``X`` (for T >> L this is
        T / (frames sampled) and (T - 1) / (transitions sampled)).  A window that
        begins inside its sequence starts from the stationary distribution of the
        posterior-mean transition matrix.  An epoch of ``fit`` (and one call of
        :meth:`partial_fit`) is ``ceil(P / (batch_size * L))`` steps, as many frames
        as ``X`` holds in expectation; its bound estimate is the mean over its steps of
        the scaled sum over subchain frames of ln p(x_t | earlier frames of the window)
        minus the KL terms.  A value at least as long as every sequence gives
        whole-sequence steps.  ``fit`` with ``learning_method="batch"`` raises a
        ValueError when it is set.
    buffer_length : "auto" or int >= 0, default="auto"
        Frames added on each side of a subchain (``subchain_length``).  The frame
        before a subchain is always in its window (the subchain owns the transition
        into its first frame).  ``"auto"`` (Foti et al.'s growing buffer) doubles the
        buffer, from 8 frames or the buffer the previous step settled on, until the
        state marginals q(s_t) at the first and last frame of every subchain of the
        step change by less than 1e-4 (or the windows are whole sequences), and uses
        the pass with the larger buffer; ``buffer_length_`` holds the smaller one, the
        next step's first try.

    Attributes
    ----------
    startprob_posterior_, transmat_posterior_, emissionprob_posterior_ : ndarray
        Dirichlet posterior counts w = u + N.
    means_posterior_, beta_posterior_, dof_posterior_, scale_posterior_ : ndarray
        Gaussian emission posterior (scale = W^-1, or twice the Gamma rates for diag).
        ``beta_posterior_`` and ``dof_posterior_`` are (K,), or (K, D) for diagonal
        covariances fitted on data with missing entries (each dimension's own count).
    rate_shape_posterior_, rate_rate_posterior_ : ndarray (K, D)
        Poisson emission posterior: Gamma shapes and rates of the state rates.
    startprob_prior_, transmat_prior_, emissionprob_prior_, means_prior_, beta_prior_,
    dof_prior_, scale_prior_, rate_shape_prior_, rate_rate_prior_ : ndarray or float
        The priors actually used (after any optimisation).
    startprob_, transmat_, emissionprob_ : ndarray
        Posterior means.
    means_, covars_ : ndarray
        Posterior mean of the state means and inverse of the posterior-mean precision.
    rates_ : ndarray (K, D)
        Posterior-mean Poisson rates.
    lower_bound_, lower_bounds_, n_iter_, converged_ : see the base class.
        Online learning changes what the history holds: see ``learning_method`` and
        :meth:`partial_fit`.
    lower_bound_terms_ : dict
        ``log_normaliser`` (sum of ln Z over sequences), ``kl_startprob``,
        ``kl_transmat``, ``kl_emission``; ``lower_bound_`` = log_normaliser - the KLs.
    occupancy_ : ndarray (K,)
        Expected number of frames spent in each state.
    n_effective_components_ : int
        Number of states with an expected occupancy of at least one frame (the others
        are switched off: their posterior is (nearly) the prior).
    n_features_in_ : int
    n_symbols_ : int (categorical only)
    {transition_inputs_attributes}
    n_batch_iter_ : int
        Online learning only: one more than the number of natural-gradient steps taken,
        the t of the next step size (scikit-learn's convention).
    buffer_length_ : int
        Online learning with ``subchain_length`` only: the buffer of the last step (for
        ``buffer_length="auto"``, the one the growing rule settled on).

    Notes
    -----
    ``score``, ``score_samples``, ``predict``, ``decode`` and ``bic``/``aic`` use the
    posterior-mean parameters (plug-in, as the thesis's English-text experiment and
    BayesianGaussianMixture); ``predict_proba`` returns the variational state marginals
    q(s_t) (one VBE pass on the new data with q(theta) fixed); ``decode`` offers
    ``parameters="expected_log"``, Viterbi under exp E[ln theta], which is the most
    probable path under q(s).

    Examples
    --------
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.datasets import make_hmm_sequences
    >>> X, states, lengths = make_hmm_sequences(
    ...     [0.5, 0.5], [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]],
    ...     [100] * 5, random_state=0)
    >>> hmm = VBHiddenMarkov(n_components=2, random_state=0).fit(X, lengths=lengths)
    >>> hmm.n_effective_components_
    2
    >>> hmm.transmat_.round(1)
    array([[0.9, 0.1],
           [0.1, 0.9]])
    >>> hmm.predict(X, lengths=lengths).shape
    (500,)
    """

    _parameter_constraints: dict = {**VBEMEstimator._parameter_constraints,
                                    **PARAMETER_CONSTRAINTS}

    def __init__(
        self,
        n_components=2,
        *,
        emission="categorical",
        covariance_type="full",
        n_symbols=None,
        startprob_prior=None,
        transmat_prior=None,
        emissionprob_prior=None,
        means_prior=None,
        beta_prior=1.0,
        dof_prior=None,
        scale_prior=None,
        rate_prior=None,
        optimize_prior_strengths=False,
        transition_inputs=None,
        n_input_levels=None,
        transition_coef_prior=1.0,
        max_iter=1000,
        tol=1e-4,
        n_init=1,
        init_params="auto",
        init_posterior=None,
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        bound_check="raise",
        acceleration="squarem",
        method="vb",
        keep_restarts=False,
        learning_method="batch",
        learning_decay=0.7,
        learning_offset=10.0,
        batch_size=128,
        total_samples=1e6,
        subchain_length=None,
        buffer_length="auto",
    ):
        super().__init__(
            max_iter=max_iter,
            tol=tol,
            n_init=n_init,
            init_params=init_params,
            random_state=random_state,
            warm_start=warm_start,
            verbose=verbose,
            verbose_interval=verbose_interval,
            bound_check=bound_check,
        )
        self.keep_restarts = keep_restarts
        self.n_components = n_components
        self.emission = emission
        self.covariance_type = covariance_type
        self.n_symbols = n_symbols
        self.startprob_prior = startprob_prior
        self.transmat_prior = transmat_prior
        self.emissionprob_prior = emissionprob_prior
        self.means_prior = means_prior
        self.beta_prior = beta_prior
        self.dof_prior = dof_prior
        self.scale_prior = scale_prior
        self.rate_prior = rate_prior
        self.optimize_prior_strengths = optimize_prior_strengths
        self.transition_inputs = transition_inputs
        self.n_input_levels = n_input_levels
        self.transition_coef_prior = transition_coef_prior
        self.init_posterior = init_posterior
        self.acceleration = acceleration
        self.method = method
        self.learning_method = learning_method
        self.learning_decay = learning_decay
        self.learning_offset = learning_offset
        self.batch_size = batch_size
        self.total_samples = total_samples
        self.subchain_length = subchain_length
        self.buffer_length = buffer_length

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        try:
            family = self._family
        except ValueError:  # an invalid emission is reported by fit
            return tags
        # NaN in X is a missing value, marginalised by the families that support it
        tags.input_tags.allow_nan = family.supports_missing
        return family.update_tags(tags)

    # ------------------------------------------------------------------ data
    @property
    def _family(self):
        """The emission family of ``emission`` / ``covariance_type`` (stateless)."""
        return emission_family(self.emission, self.covariance_type)

    def _sequence_data(self, X, lengths, sequence_ids, reset, states=None, U=None):
        family = self._family
        Xv = family.check_X(in_memory(X), self, reset)
        lens = check_sequences(Xv.shape[0], lengths, sequence_ids)
        starts, ends = sequence_bounds(lens)
        inputs, n_levels = transition_inputs_of(self, U, Xv.shape[0], reset)
        return _FitData(
            X=Xv, index=family.table_index(Xv), lengths=lens, starts=starts, ends=ends,
            known_states=check_states(states, Xv.shape[0], self.n_components),
            inputs=inputs, n_levels=n_levels,
        )

    def _check_fit_data(self, X, lengths=None, sequence_ids=None, states=None, U=None):
        check_fit_combinations(self, X, states)
        if is_dask_input(X):
            return dask_fit_data(self, X, lengths, sequence_ids, states, U)
        data = self._sequence_data(X, lengths, sequence_ids, reset=True, states=states, U=U)
        family = self._family
        attributes, data.summary = family.fit_attributes_and_summary(data.X, self)
        for name, value in attributes.items():
            setattr(self, name, value)
        return data

    # ------------------------------------------------------------------ priors
    def _resolve_priors(self, data):
        K = self.n_components
        self.startprob_prior_ = check_dirichlet_prior(self.startprob_prior, "startprob_prior", (K,), 1.0 / K)
        self.transmat_prior_ = transition_prior(self, data)
        family = self._family
        prior = family.resolve_prior(self, data.summary)
        for name, value in family.hyper_attributes(prior, "prior").items():
            setattr(self, name, value)

    def _emission(self, kind):
        """The emission prior (``kind="prior"``) or posterior hyperparameters, as the
        family's dataclass (read from the fitted attributes)."""
        return self._family.hyper_from_attributes(self, kind)

    def _hyper(self, kind):
        """The prior (``kind="prior"``) or the posterior q(theta) as a DirichletHMM."""
        return DirichletHMM(getattr(self, f"startprob_{kind}_"),
                            getattr(self, f"transmat_{kind}_"), self._emission(kind))

    def _set_posterior(self, posterior):
        self.startprob_posterior_ = posterior.startprob
        self.transmat_posterior_ = posterior.transmat
        for name, value in self._family.hyper_attributes(posterior.emission, "posterior").items():
            setattr(self, name, value)

    # ------------------------------------------------------------------ init
    def _restart_starts(self):
        """The starts of one restart (:func:`~sklearn_vb.hmm._online_start.restart_starts`)."""
        return restart_starts(self)

    def _initialize(self, data, random_state, start=None):
        """The initial q(theta) of the start kind ``start`` (default: the first of
        :meth:`_restart_starts`); for point EM, its mean replaces it."""
        self._theta_ = None
        self._resolve_priors(data)
        family = self._family
        how = self._restart_starts()[0] if start is None else start
        self._set_posterior(start_posterior(self, how, data, random_state))
        self._fresh = True
        self._stats_ = None
        self._run_bounds = []
        # a new start begins the step-size schedule of online learning anew
        self.__dict__.pop("n_batch_iter_", None)
        self.__dict__.pop("buffer_length_", None)
        self._online_rng = random_state
        if self.method != "vb":
            point = start_point(family, self.n_components, self._hyper("posterior"))
            for name in ("startprob", "transmat") + tuple(family.hyper_names):
                self.__dict__.pop(f"{name}_posterior_", None)
            self._theta_ = point

    # ------------------------------------------------------------------ loop steps
    def _iteration_steps(self):
        if self.method != "vb":
            return (Step("m", lambda data, it: m_step(self)),
                    Step("e", lambda data, it: e_step(self, data)))
        if self.optimize_prior_strengths:
            return (Step("prior", self._step_prior), Step("vbm", self._step_vbm),
                    Step("vbe", self._step_vbe))
        return (Step("vbm", self._step_vbm), Step("vbe", self._step_vbe))

    def _step_prior(self, data, iteration):
        if getattr(self, "_fresh", False):
            return
        names = ("startprob", "transmat") + tuple(self._family.dirichlet_blocks)
        for name in names:
            prior = getattr(self, f"{name}_prior_")
            post = getattr(self, f"{name}_posterior_")
            if prior.shape[-1] < 2:
                continue  # a one-entry Dirichlet is a point mass: nothing to optimise
            lam = optimize_dirichlet_scale(np.atleast_2d(prior), dirichlet_expected_log(np.atleast_2d(post)))
            setattr(self, f"{name}_prior_", prior * lam)
        self._at_vbe = False

    def _step_vbm(self, data, iteration):
        if getattr(self, "_fresh", False):
            return  # the initial q(theta) is evaluated first
        self._set_posterior(vbm(self._family, self._hyper("prior"), self._stats_))
        self._at_vbe = False

    def _step_vbe(self, data, iteration):
        self._fresh = False
        self._at_vbe = True
        self._vbe_bound = self._evaluate_vbe(data)
        if not hasattr(self, "_run_bounds"):
            self._run_bounds = []
        self._run_bounds.append(self._vbe_bound)

    def _evaluate_vbe(self, data):
        """One VBE pass over ``data`` under the stored q(theta): stores the statistics of
        q(s), sum ln Z and the expectations that produced them, and returns the bound
        ln Z - KL of the pair."""
        family, prior, posterior = self._family, self._hyper("prior"), self._hyper("posterior")
        # in memory one pass; on a dask array one task per chunk, summed
        self._vbe_log_norm_, self._stats_ = data.chunk_sum(family, vbe_statistics, posterior,
                                                           prior.emission)
        self._vbe_expected_log_ = expected_log_params(family, posterior)  # q(theta) that produced q(s)
        kl = kl_terms(family, posterior, prior)
        self._vbe_kl = (hyper_arrays(self), kl)
        return self._vbe_log_norm_ - sum(kl)

    # ------------------------------------------------------------------ online VB
    def _run_vbem(self, data):
        if self.learning_method != "online":
            return super()._run_vbem(data)
        return run_online(self, data)

    # ------------------------------------------------------------------ point EM steps
    #: the point estimate of ``method="ml"``/``"map"`` (a PointParameters, set by
    #: ``_initialize`` and the M step); None for a VB fit or before fitting
    _theta_ = None

    @property
    def _point_fitted(self):
        """Whether the stored state is a point estimate (``method="ml"``/``"map"``)."""
        return self._theta_ is not None

    # ------------------------------------------------------------------ acceleration
    #: extrapolate only after this many shrinking increments (see ``_settled`` in base)
    _settle_window = 8

    def _accelerated(self):
        return self.method == "vb" and super()._accelerated()

    def _pack_hyperparameters(self):
        """q(theta) in the coordinates of :func:`~sklearn_vb.hmm._vbem.pack_posterior`."""
        return pack_posterior(self._family, self._hyper("posterior"))

    def _unpack_hyperparameters(self, vector, data):
        posterior = unpack_posterior(self._family, vector, self.n_components,
                                     self._hyper("posterior"))
        if posterior is None:
            return False
        self._set_posterior(posterior)
        self._at_vbe = False
        return True

    def _can_stop(self, iteration):
        """Stop only once the bound's increments have stopped growing.

        Near a saddle point (e.g. states that are copies of one another) the increments
        are tiny but grow geometrically as the run leaves it; near a maximum they shrink.
        The base loop has already checked that the last increment is below ``tol``.
        """
        b = self._run_bounds
        if len(b) < 3:
            return False
        return b[-1] - b[-2] <= b[-2] - b[-3]

    def _lower_bound(self, data):
        """F = H[q(s)] + E ln p(s, X | theta) - KL, with H[q(s)] = ln Z - E_vbe ln p(s, X | theta).

        Right after the VBE step this is ln Z - KL; after a VBM or prior step it is the
        bound of the stored q(s) with the new q(theta): the entropy of q(s) is kept from
        the VBE step and only the expected complete log-likelihood and the KL change.
        """
        if getattr(self, "_at_vbe", False):
            return self._vbe_bound
        if self._point_fitted:
            return point_objective(self)
        return lower_bound_after_vbm(self._family, self._hyper("posterior"), self._hyper("prior"),
                                     self._stats_, self._vbe_log_norm_, self._vbe_expected_log_)

    def _finalize(self, data):
        if self._point_fitted:
            set_fitted_point(self)
            return
        if self.learning_method == "online":
            # the history holds estimates; the bound of the final q(theta) is exact,
            # from a pass that holds one minibatch's tables at a time
            self.lower_bound_ = float(self._evaluate_vbe(MinibatchPasses(data,
                                                                         self.batch_size)))
        set_fitted_posterior(self, self._vbe_log_norm_)

    # ------------------------------------------------------------------ public API
    def fit(self, X, y=None, lengths=None, sequence_ids=None, states=None, U=None):
        """Fit by VBEM, or by online VB with ``learning_method="online"``.

        Parameters
        ----------
        {fit_X_y}
        lengths : array-like of int, optional
            Lengths of the consecutive sequences in ``X`` (hmmlearn convention).
        sequence_ids : array-like of shape (n_samples,), optional
            One id per row; rows of a sequence are contiguous and in time order.  This
            form survives sklearn's cross-validation splitters (e.g. ``GroupKFold``).
        states : array-like of int of shape (n_samples,), optional
            Known states (partial labels): the state of every row where it is known,
            -1 elsewhere.  q(s) is clamped to them (every path through another state
            there has probability zero), so the bound is a bound on
            ln p(X, known states) and the known frames count fully towards their
            states' parameters.  Not with ``subchain_length`` or dask data.
        {fit_transition_inputs}
        """
        check_unused_y(y, X, "fit")
        self._online_rng = None
        if self.subchain_length is not None and self.learning_method != "online":
            raise ValueError("subchain_length applies to online learning (partial_fit or "
                             "learning_method='online'); got subchain_length="
                             f"{self.subchain_length!r} with learning_method="
                             f"{self.learning_method!r}.")
        if self.learning_method == "batch" and not is_dask_array(X):
            self._validate_params()
            # before validation, whose copy of X may be the first large allocation
            check_batch_fit_memory(self, X)
        fit_params = dict(lengths=lengths, sequence_ids=sequence_ids, states=states)
        if U is not None:
            fit_params["U"] = U
        super().fit(X, **fit_params)
        self._fitted_from_sequence_ids = fitted_from_sequence_ids(sequence_ids)
        self._streamed = False
        return self

    def partial_fit(self, X, y=None, lengths=None, sequence_ids=None, states=None):
        """Online variational Bayes: natural-gradient steps on q(theta) from the
        sequences of ``X``.

        {partial_fit_minibatches}
        The step is an exact VBE step on the minibatch (forward-backward under the
        current exp E[ln theta]), then, for every factor of q(theta) (the initial and
        transition Dirichlets and the emission posterior), in its natural parameters
        lambda,

            lambda <- (1 - rho) lambda + rho (prior + total_samples / n_b * statistics),

        with n_b the minibatch's number of sequences, its expected sufficient
        statistics, and ``rho = (learning_offset + n_batch_iter_)^(-learning_decay)``;
        then ``n_batch_iter_`` grows by one.  ``X`` is read, never written: a slice of a
        ``np.memmap`` is copied one minibatch at a time, so a stream of chunks never has
        to fit in memory at once::

            for X_chunk, lengths_chunk in chunks:
                model.partial_fit(X_chunk, lengths=lengths_chunk)

        The first call (on an unfitted model) starts q(theta) from the first minibatch's
        sequences: with ``init_params="auto"``, each start of ``"auto"`` run by VBEM on
        that minibatch scaled to ``total_samples`` sequences, the best by its bound (the
        steps, shrinking, would not lead q(theta) off a symmetric start); any other
        ``init_params`` is one start, stepped from as it is.  No restarts either way;
        the data-dependent default priors (Gaussian and Poisson emissions) and, for
        categorical emissions, ``n_symbols_`` (unless ``n_symbols`` is given)
        come from that first ``X``.  Later calls must have the same number of features
        (and symbols below ``n_symbols_``; give ``n_symbols`` for a stream whose first
        chunk may not show every symbol).  A fitted model (by ``fit``, batch or
        online) continues from its q(theta).

        ``n_components`` is fixed: states are never added or removed.  A state that the
        stream does not support keeps a posterior near its prior, as in batch VBEM
        (``n_effective_components_`` counts the others).

        {partial_fit_stream}
        The estimate is ``total_samples / n_b`` times the minibatch's sum of ln Z under
        the q(theta) its step started from, minus the KL terms of q(theta) after the
        step (``lower_bound_terms_`` holds the two parts); ``occupancy_`` is the last
        minibatch's expected state occupancy times ``total_samples / n_b``.
        {partial_fit_not_scored}

        Parameters
        ----------
        {sequences_X_y}
        lengths : array-like of int, optional
            Lengths of the consecutive sequences in ``X``; pass it by keyword (the
            second positional argument is ``y``).
        sequence_ids : array-like of shape (n_samples,), optional
            One id per row, as in :meth:`fit`.
        states : array-like of int of shape (n_samples,), optional
            Known states, -1 where unknown, as in :meth:`fit`.

        Returns
        -------
        self
        """
        return partial_fit(self, X, y, lengths, sequence_ids, states)

    def _new_data(self, X, lengths, sequence_ids, states=None, U=None):
        data = self.check_data(X, lengths=lengths, sequence_ids=sequence_ids, U=U)
        data.known_states = check_states(states, data.n_frames, self.n_components)
        return data

    def score_samples(self, X, lengths=None, sequence_ids=None, per="frame", U=None):
        """Log-likelihood under the posterior-mean parameters.

        ``per="frame"`` (default) returns ln p(x_t | x_1..x_{t-1}) for every row (they
        sum to the log-likelihood of each sequence); ``per="sequence"`` returns the
        log-likelihood of each sequence.  ``U``: the transition inputs, as in :meth:`fit`
        (the likelihoods are then conditional on them).
        """
        if per not in ("frame", "sequence"):
            raise ValueError(f"per must be 'frame' or 'sequence'; got {per!r}.")
        data = self._new_data(X, lengths, sequence_ids, U=U)
        log_norm, frame_log_norm = plugin_forward(self, data)[:2]
        return frame_log_norm if per == "frame" else log_norm

    def score(self, X, y=None, lengths=None, sequence_ids=None, U=None):
        """Mean log-likelihood per row (frame) under the posterior-mean parameters
        (given the inputs ``U`` of a model with transition inputs).

        A model fitted with ``sequence_ids`` (several sequences) needs ``lengths`` or
        ``sequence_ids`` here too (see :func:`sklearn_vb.model_selection.SequenceKFold`
        for cross-validation with metadata routing)."""
        check_unused_y(y, X, "score")
        check_sequences_routed(self, lengths, sequence_ids)
        data = self._new_data(X, lengths, sequence_ids, U=U)
        return float(plugin_forward(self, data)[0].sum() / data.n_frames)

    def score_bound(self, X, lengths=None, sequence_ids=None, U=None):
        """Total sum_i ln Z_i of one VBE pass on X with q(theta) fixed.

        This is the lower bound on the log-likelihood of new data under the fitted
        q(theta) without the KL terms (the parameters are not re-estimated); with
        transition inputs, of X given the inputs ``U``.
        """
        data = self._new_data(X, lengths, sequence_ids, U=U)
        if self._point_fitted:
            raise ValueError(f"score_bound needs q(theta); this model was fitted with "
                             f"method={self.method!r}.")
        out = vbe(self._family, self._hyper("posterior"), data, want_posteriors=False)[0]
        return float(out[0].sum())

    def predict_proba(self, X, lengths=None, sequence_ids=None, states=None, U=None):
        """Variational state marginals q(s_t = k) of X with q(theta) fixed, (n_samples, K);
        with ``states`` (-1 where unknown, as in :meth:`fit`) given the known states, and
        with ``U`` (as in :meth:`fit`) given the transition inputs."""
        return state_marginals(self, self._new_data(X, lengths, sequence_ids, states, U=U))

    def decode(self, X, lengths=None, sequence_ids=None, parameters="mean", states=None,
               U=None):
        """Viterbi path.  Returns (log-weight of the best paths summed, states).

        ``parameters="mean"`` uses the posterior-mean parameters (the log-weight is then
        ln p(X, s* | theta_bar)); ``"expected_log"`` uses exp E[ln theta], whose best path
        is the mode of q(s).  With ``states`` (-1 where unknown, as in :meth:`fit`) the
        best path through the known states; ``U``: the transition inputs, as in :meth:`fit`.
        """
        if parameters not in ("mean", "expected_log"):
            raise ValueError(f"parameters must be 'mean' or 'expected_log'; got {parameters!r}.")
        return viterbi_path(self, self._new_data(X, lengths, sequence_ids, states, U=U),
                            parameters)

    def predict(self, X, lengths=None, sequence_ids=None, states=None, U=None):
        """Most probable state path under the posterior-mean parameters (Viterbi); with
        ``states`` (-1 where unknown, as in :meth:`fit`) it keeps the known states and
        fills in the rest; ``U``: the transition inputs, as in :meth:`fit`."""
        return self.decode(X, lengths, sequence_ids, parameters="mean", states=states,
                           U=U)[1]

    def sample(self, n_samples=1, random_state=None, U=None):
        """Draw one sequence of ``n_samples`` frames from the posterior-mean model; a
        model with transition inputs needs ``U``, the inputs of every frame to draw.

        Returns ``(X, states)``.
        """
        check_is_fitted(self, "lower_bound_")
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        inputs, _ = transition_inputs_of(self, U, n_samples, reset=False)
        rng = check_random_state(random_state if random_state is not None else self.random_state)
        return sample_sequence(self, n_samples, rng, inputs)

    def _n_parameters(self):
        K = self.n_components
        n = (K - 1) + n_transition_parameters(self)
        if self._point_fitted:
            # the family counts from hyperparameter shapes; the conjugate update has them
            post = self._family.vbm(self._emission("prior"), self._stats_.emission)
            return n + self._family.n_parameters(post)
        return n + self._family.n_parameters(self._emission("posterior"))

    def _check_new_data(self, X, lengths=None, sequence_ids=None, U=None, states=None):
        return self._sequence_data(X, lengths, sequence_ids, reset=False, states=states, U=U)

    def _log_likelihood(self, data):
        return float(plugin_forward(self, data)[0].sum())

    def _n_observations(self, data):
        return data.n_frames
