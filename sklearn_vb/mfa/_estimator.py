"""Variational Bayesian mixtures of factor analysers (Beal 2003, Chapter 4).

The model (thesis Section 4.2): Dirichlet mixing proportions ``π``, per component
``s`` a loading matrix ``Λ^s`` whose columns have ARD Gamma precisions ``ν^s_j``, a centre
``μ^s`` with a shared Gaussian prior ``N(μ*, diag(1/ν*))``, hidden factors
``x ~ N(0, I)`` and one diagonal sensor noise ``Ψ`` shared by every component.

Everything in this module works in *fitting units*: the data standardised per
feature when ``standardize=True`` (the default, as in the released code), the raw
data otherwise.  Public fitted attributes are reported in the original units and
``lower_bound_`` includes the Jacobian of the standardisation, so it is a bound on
``ln p(X)`` of the data as given.

Choices made here:

* every update is an exact coordinate maximisation of F, including the
  cross-covariance term between loadings and centre in the update of q(x|s)
  (eqs. 4.51-4.55, read as a joint expectation over q(Λ̃)) and the full joint solve
  for each row of ``[Λ^s, μ^s]`` (eqs. 4.41-4.50); F is computed from its six named
  terms (eq. 4.29) for whatever state is stored, so ``bound_check="steps"`` locates
  any step that lowers it;
* initial loadings are the probabilistic-PCA directions of each initial cluster
  (plus a 1e-3 perturbation) rather than N(0, 1) draws: the search converges several
  times faster, because ARD no longer has to rotate variance out of random columns;
* hyperparameters re-estimated by default: Ψ and the ARD rate b*; (μ*, ν*), the
  ARD shape a* and the Dirichlet strength α* are optional (reasons in the
  ``optimize_hyperparameters`` entry below);
* births use the responsibility split (eqs. 4.73-4.76); a birth is accepted only if
  F after its epoch exceeds F before it, otherwise the saved state is restored
  exactly; the search stops after ``max_tries`` passes without an accepted birth
  (Section 4.3), then the final structure is polished (``polish_iter``);
* three departures from the search of Section 4.3 that make it cheaper: a birth
  epoch also ends when one iteration adds little relative to the birth's own
  progress (``birth_accept_rtol`` above the target F, ``birth_reject_rtol`` below
  it); a parent whose birth was rejected is not proposed again until a pass ends
  without an acceptance (``skip_rejected_parents``); and a component whose mass is
  below ``shrinking_death_threshold`` (5 points) and still falling dies at once
  rather than fading over tens of iterations.  Births first run partial updates
  of the two children alone (``birth_partial_iter``; ``birth_partial_reject``
  also rejects there).  None touches the bound: every recorded F is the exact bound of
  the stored state, non-decreasing within each VBEM run, and a rejected birth
  restores the saved state exactly.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from scipy.special import logsumexp
from sklearn.base import (ClassNamePrefixFeaturesOutMixin, ClusterMixin, DensityMixin,
                          TransformerMixin)
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from threadpoolctl import threadpool_limits

from .._core.base import Step, VBEMEstimator
from .._core.docstrings import (ONLINE_LEARNING_RESTARTS, PARTIAL_FIT_NOT_SCORED, fill_doc,
                                online_learning_epochs, online_learning_result,
                                online_step_params, partial_fit_minibatches,
                                partial_fit_stream)
from .._core.online import check_online_method
from .._core.validation import validate_float_data
from ._birth_death import RunControl, propose_birth, run_fixed_structure
from ._ml_birth_search import run_search
from ._constraints import PARAMETER_CONSTRAINTS
from ._fitted import log_densities, plugin_sample, set_fitted
from ._online_fit import partial_fit, run_online
from ._hyper import selected_hyperparameters
from ._point import check_point_options, em_start, fa_free_parameters
from ._missing import MissingPattern, check_missing_supported, missing_patterns
from ._state import MFAPointState
from ._steps import iteration_steps, point_e_step, run_control
from ._vbem import (expected_factors, first_updates, initial_state, local_updates, log_weights,
                    lower_bound, n_loading_columns, pack_state, unpack_state)

__all__ = ["VBMixtureFactorAnalysers", "max_identifiable_factors", "fa_free_parameters"]



def max_identifiable_factors(p):
    """Smallest ``k`` whose factor analyser has at least as many degrees of freedom as
    a full covariance, ``ceil(p + (1 - sqrt(1 + 8p)) / 2)`` (Beal 2003, eq. 4.10): more
    factors than this cannot be identified from the covariance they model.

    Examples
    --------
    >>> from sklearn_vb.mfa import max_identifiable_factors
    >>> max_identifiable_factors(10), max_identifiable_factors(64)
    (6, 54)
    """
    return int(np.ceil(p + (1.0 - np.sqrt(1.0 + 8.0 * p)) / 2.0))


def _quantisation_variance(X):
    """``δ_j² / 12`` per feature, ``δ_j`` the smallest positive gap between distinct
    values of feature ``j``; a constant feature takes the median ``δ`` of the others
    (0 when every feature is constant)."""
    gaps = np.diff(np.sort(X, axis=0), axis=0)
    gaps = np.where(gaps > 0, gaps, np.inf)
    delta = gaps.min(axis=0) if gaps.shape[0] else np.full(X.shape[1], np.inf)
    finite = np.isfinite(delta)
    fill = float(np.median(delta[finite])) if np.any(finite) else 0.0
    delta = np.where(finite, delta, fill)
    return delta**2 / 12.0


@dataclass
class _FitData:
    """The data in fitting units plus the standardisation used."""

    Z: np.ndarray
    shift: np.ndarray
    scale: np.ndarray
    var: np.ndarray  # per-feature variance of Z (1 where constant), sets psi_min
    psi_floor: np.ndarray  # floor on each noise variance (fitting units)
    # with entries missing: which are observed (``Z`` holds 0.0 at the others), and
    # the rows of X kept (a row observing nothing has likelihood 1 and is left out)
    missing: Optional[MissingPattern] = None
    rows: Optional[np.ndarray] = None
    n_given: Optional[int] = None  # the number of rows of X
    n_samples: int = field(init=False)
    n_features: int = field(init=False)
    log_jacobian: float = field(init=False)

    def __post_init__(self):
        self.n_samples, self.n_features = self.Z.shape
        if self.missing is None:
            self.log_jacobian = -self.Z.shape[0] * float(np.sum(np.log(self.scale)))
        else:  # only the observed entries are transformed
            self.log_jacobian = -float(self.missing.mask.sum(axis=0) @ np.log(self.scale))


def _fit_data(X, standardize, psi_min):
    """The data in fitting units (standardised per feature with ``standardize``) and
    the floor on the noise variances (``psi_min``).  NaN entries are missing: the
    statistics of a feature are those of its observed values, and rows observing
    nothing are left out of the fit."""
    nan = np.isnan(X)
    rows = None
    if nan.any():
        empty = np.flatnonzero(nan.all(axis=0))
        if empty.size:
            raise ValueError(f"X: feature(s) {empty.tolist()} have no observed value (all "
                             "NaN); drop them.")
        rows = np.flatnonzero(~nan.all(axis=1))
        X = X[rows]
        mean, std = np.nanmean(X, axis=0), np.nanstd(X, axis=0)
    else:
        mean, std = X.mean(axis=0), X.std(axis=0)
    if standardize:
        scale = np.where(std > 0, std, 1.0)
        shift = mean
    else:
        scale = np.ones(X.shape[1])
        shift = np.zeros(X.shape[1])
    if rows is None:
        Z, missing = (X - shift) / scale, None
        var = Z.var(axis=0)
    else:
        Z, missing = missing_patterns((X - shift) / scale)
        var = np.nanvar(np.where(missing.mask > 0, Z, np.nan), axis=0)
    var = np.where(var > 0, var, 1.0)
    if isinstance(psi_min, str):  # "auto" (NaN sorts last and leaves no gap)
        floor = np.maximum(1e-5 * var, _quantisation_variance(X) / scale**2)
    else:
        floor = psi_min * var
    return _FitData(Z, shift, scale, var, floor, missing=missing, rows=rows,
                    n_given=None if rows is None else nan.shape[0])


def _locals_match(st, data):
    """Whether the stored q(x|s) has the form of ``data``'s rows: one covariance per
    component, or per component and missing pattern of ``data``."""
    if st.sigma is None:
        return True
    if data.missing is None:
        return st.sigma.ndim == 3
    return st.sigma.ndim == 4 and st.sigma.shape[1] == data.missing.observed.shape[0]


def _fixed_components(estimator):
    """Whether :meth:`~VBMixtureFactorAnalysers.partial_fit` is available
    (``search=False``)."""
    if estimator.search:
        raise AttributeError("partial_fit needs search=False: online learning keeps the "
                             "number of components fixed (no births or deaths).")
    return True


@fill_doc(online_learning_epochs=online_learning_epochs("rows"),
          online_learning_result=online_learning_result("rows", "row", "local pass", "q(θ)"),
          online_learning_restarts=ONLINE_LEARNING_RESTARTS,
          online_step_params=online_step_params("rows", "q(θ)"),
          partial_fit_minibatches=partial_fit_minibatches("rows"),
          partial_fit_stream=partial_fit_stream("rows", "q(θ)"),
          partial_fit_not_scored=PARTIAL_FIT_NOT_SCORED)
class VBMixtureFactorAnalysers(ClusterMixin, DensityMixin, ClassNamePrefixFeaturesOutMixin,
                               TransformerMixin, VBEMEstimator):
    """Variational Bayesian mixture of factor analysers with ARD and birth/death search.

    Each component is a factor analyser ``y = Λ^s x + μ^s + ε`` with ``x ~ N(0, I)``
    and ``ε ~ N(0, Ψ)``; ``Ψ`` is diagonal and shared.  VBEM fits a factorised
    posterior ``q(π) q(ν) q(Λ̃) q(s, x)``.  Automatic relevance determination (a Gamma
    precision per loading column) switches off the factors the data do not support,
    and with ``search=True`` components are born by splitting (accepted only when the
    bound ``F`` improves) and die when their responsibility mass falls below
    ``death_threshold`` points (thesis Section 4.3).

    Parameters
    ----------
    n_components : int, default=1
        Number of components to start from (``search=True``) or to fit
        (``search=False``).
    n_factors : int or None, default=None
        Maximum number of factors per component ``k_max``; ``None`` means ``p - 1``.
        ARD decides how many are used.
    search : bool, default=True
        Run the birth/death search over the number of components.  With ``False`` the
        number of components is fixed (no deaths, no births).  Missing entries (NaN)
        in X, assumed missing at random, are marginalised exactly by batch VB with or
        without the search and by the point fits (a row observing nothing is left out
        of the fit; online VB refuses them) (user guide, "Missing values").
    max_components : int or None, default=None
        Upper limit on the number of components in the search.
    alpha : float, default=1.0
        Dirichlet strength ``α*``; the prior on ``π`` is ``Dir(α*/S, ..., α*/S)``.
    a, b : float, default=1.0
        Shape and rate of the Gamma prior on the ARD precisions.
    optimize_hyperparameters : bool or collection of str, default=True
        Which hyperparameters are re-estimated by maximising ``F`` every iteration,
        in this order: ``"noise"`` (``Ψ``), ``"mean_prior"`` (``μ*, ν*``, only when
        ``S ≥ 2``), ``"ard_rate"`` (``b*`` with ``a*`` fixed), ``"ard_prior"``
        (``a*`` and ``b*`` jointly) and ``"alpha_prior"`` (``α*``, only when
        ``S ≥ 2``).  ``True`` means ``{"noise", "ard_rate"}``; ``False`` none
        (``Ψ`` stays at the per-feature variance); a collection selects.  Each is an
        exact maximisation of ``F``, so the bound cannot decrease.  The others are
        offered but not in the default, because each biases the search:
        ``"mean_prior"`` cannot be re-estimated with one component (``ν*`` would
        diverge), so from two components on it buys a bonus of about
        ``½ ln N`` nats per dimension that one component never gets, and a single
        Gaussian is then split in two; re-estimating ``a*`` (``"ard_prior"``) drives
        it up, when all columns look alike, until the prior pins every column's
        precision, so a birth can no longer activate a factor; and re-estimating
        ``α*`` drives it up until the prior forces equal weights, so superfluous
        components never die.
    standardize : bool, default=True
        Fit in per-feature standardised units (the ARD prior ``a*=b*=1`` assumes
        unit scale).  Reported parameters, ``lower_bound_`` and scores are in the
        original units (the Jacobian is included).
    psi_min : float or "auto", default="auto"
        Floor on each noise variance.  A float is relative to the feature's variance.
        ``"auto"`` takes the larger of ``1e-5`` times the feature's variance and the
        feature's quantisation noise ``δ²/12``, where ``δ`` is the smallest gap
        between two distinct values of the feature in the training data (the
        variance of a rounding error; negligible for continuous data; a feature
        constant in the training data takes the median ``δ`` of the others).  On
        quantised data such as pixel intensities, a feature that is almost always
        zero is otherwise explained entirely by loadings, its noise variance falls
        to a tiny floor, and any held-out point with a non-zero value there gets a
        log-density of the order of ``-1e4``.
    death_threshold : float, default=1.0
        Search only: a component with responsibility mass ``Σ_i r_is`` below this
        dies.
    shrinking_death_threshold : float, default=5.0
        Search only: a component whose responsibility mass is below this and
        smaller than at the previous q(s) update also dies (a component that has
        lost its data otherwise fades over tens of iterations, each paid by a
        whole mixture).  A removal is a structure change like any death: the
        search history records a ``"death"`` event and F is monotone between
        structure changes.  0 disables the rule.
    max_tries : int or "auto", default="auto"
        Search only: stop after this many consecutive passes through all components
        without an accepted birth.  ``"auto"``: 1 with ``split="responsibility"``
        (the search stops at the first pass in which every proposal is rejected),
        3 with ``split="spatial"``, whose proposals are random draws of which a
        parent may need several.
    split_direction : {"principal-first", "random"}, default="principal-first"
        Search only: the direction ``d`` along which a parent's points are divided
        between its two children (by the sign of ``(y - μ)ᵀ d``; the children's
        centres start at ``μ ± d``).  ``"random"`` draws ``d ~ N(0, ΛΛᵀ + Ψ)`` for
        every proposal (eq. 4.73); ``"principal-first"`` uses the parent's strongest
        loading column the first time a component is proposed, and random draws
        after that.  Random directions split a component with many factors into two
        halves that look alike, and one child then takes back all the points and
        dies; the principal direction separates the points the component explains
        worst.
    split_hardness : float in [0.5, 1], default=1.0
        How the parent's responsibilities are divided between the two children
        (``split="responsibility"`` only).
    split : {"responsibility", "spatial"}, default="responsibility"
        Search only: the birth operator (Beal 2003, Section 4.3.2).
        ``"responsibility"`` divides the parent's points between the two children
        by the sign of ``(y - μ)ᵀ d`` (eqs. 4.73-4.76).  ``"spatial"`` (the operator
        of the synthetic experiments of Section 4.5) copies the parent into both
        children, moves their centres to ``μ ± d``, halves the parent's Dirichlet
        count between them and runs a VBE step (q(x|s), then q(s) of every point)
        so that the responsibilities follow the new positions; ``d`` is drawn
        from ``N(0, ΛΛᵀ + Ψ)`` of the parent (eq. 4.73) for every proposal
        (``split_direction`` applies to the responsibility split only).
        Acceptance is the same for both: the birth is kept only if F rises.
    agitation_tol : float, default=exp(-6)
        An epoch of the search also ends when no component's responsibilities
        change by more than this fraction (eq. 4.72).  0 disables the rule, so that
        epochs end on ``tol`` only: slower, but an epoch then cannot stop while F
        still creeps up, which can otherwise let a marginal birth through.
    epoch_rtol : float, default=1e-6
        Search only: an epoch before the final polish (the first, and each birth's)
        also ends once an iteration raises ``F`` by less than this fraction of
        ``|F|``; the structure decisions need F near its optimum, not at it, and the
        polish converges the final structure.  0 disables the rule.
    max_iter_epoch : int, default=200
        Search only: maximum VBEM iterations of one epoch.
    refit_final : int, default=1
        Search only: after the search and its polish, fit the final number of
        components and the number before the last accepted birth afresh
        (``init_params``, no births or deaths, as ``search=False`` would); when the
        better of these bounds is higher, the births continue from that state and the
        search is polished again, up to this many times; numbers of components not
        refitted yet are then refitted once more and kept if higher (each number at
        most once).  0 disables the refits.  The
        birth search is greedy: a split starts from a division of one component's
        points, and the structure it grows can end in a worse optimum at its own
        number of components than a start from the whole data finds.  Whatever the
        refits give, the result is the state with the highest bound the search passed
        through at the end of a stage (polished if it was not the last).
    birth_accept_rtol : float, default=0.01
        Search only: a birth epoch whose F is above the F before the split ends
        (the birth is accepted) once one iteration adds less than this fraction of
        the birth's gain so far.  Without it, slowly converging births run to
        ``max_iter_epoch`` for a few nats; the remaining convergence continues in
        the next epochs.  0 disables the rule.
    birth_reject_rtol : float, default=0.02
        Search only: a birth epoch still below the F before the split ends (the
        birth is rejected, the saved state restored) once, from the sixth iteration
        on, one iteration adds less than this fraction of the gain made since the
        split.  Such births otherwise creep for tens of iterations and are rejected
        anyway, or are accepted for a few nats after costing a hundred iterations
        and more.  0 disables the rule.
    skip_rejected_parents : bool, default=True
        Search only: a component whose birth was rejected is not proposed as a
        parent again until a complete pass through the candidates ends without an
        acceptance (then every component is a candidate again, so ``max_tries``
        keeps its meaning).  Without it the candidate list, recomputed after each
        accepted birth, mostly proposes the same poorly fitting parents again.  The
        children of an accepted birth are new components and are candidates.
    birth_partial_iter : int, default=100
        Search only: after a split, up to this many partial VBEM iterations update
        the two children alone (their q(x|s), q(Λ̃), q(ν), and q(s) with the
        responsibility they hold together fixed; q(π), and Ψ and b* when they are
        re-estimated, too), each an exact coordinate
        maximisation of F at about ``2/S`` of the cost of a full iteration (Beal 2003,
        Sections 4.3.2 and 4.6).  They stop as soon as F exceeds the bound before the
        split, when an iteration adds less than ``tol``, or when the gap is more than
        ten times the geometric extrapolation of the remaining gain.  The full birth
        epoch follows, and the birth is accepted or rejected on the exact bound as
        before; it starts with children that already fit their points.  0 skips the
        partial updates.
    birth_partial_reject : bool, default=False
        Search only: reject a birth whose partial updates (``birth_partial_iter``)
        end below the bound before the split, without a full epoch.  Most rejected
        births are decided at about ``2/S`` of the cost of a full iteration each,
        but a birth that needs the other components to move as well (many small
        clusters in few dimensions) is lost, and the search can stop early.
    polish_iter : int, default=1000
        Search only: after the search stops, the final structure is iterated (with
        deaths, without births, with ``rotations`` and ``compress_factors``) until
        it converges by the ``tol`` rule below, for at most this many iterations;
        ARD keeps pruning factors long after the responsibilities have settled.
    ard_threshold : float, default=1e-3
        A loading column ``j`` of component ``s`` is counted as an active factor when
        ``||E Λ^s_{·j}||² / Σ_q ψ_q > ard_threshold`` (fitting units): its expected
        contribution to the variance is at least that fraction of the total noise.
    prune_factors : bool, default=True
        Remove loading columns that ARD has switched off in every component, so
        that the cost of an iteration follows the factors in use rather than
        ``n_factors``.  Within each component the columns are first ordered by
        ``||E Λ^s_{·j}||²`` (an exact symmetry of the model: F is unchanged); the
        trailing columns whose ``||E Λ^s_{·j}||² / Σ_q ψ_q`` is below
        ``prune_threshold`` in every component are then removed, q(Λ̃), q(ν) and
        q(x|s) being replaced by their marginals over the remaining columns.  The
        model then has fewer factors, and the removal is kept only when the bound
        of the smaller model, computed afresh, is at least the bound before it, so
        the recorded F never decreases.
    prune_threshold : float, default=1e-6
        A column counts as switched off when ``||E Λ^s_{·j}||² / Σ_q ψ_q`` (fitting
        units) is below this.
    compress_factors : bool, default=True
        With ``prune_factors``, outside the birth/death search (the final polish, and
        fits with ``search=False``): a loading column switched off in one component
        only (below ``prune_threshold``) is decoupled from that component's other
        columns, its loading and factor means set to zero, and the change is kept
        only when the bound computed afresh is at least the bound before it.  VBEM
        keeps a decoupled column decoupled, and the loading update then factorises
        only the coupled columns of each component, so the cost of an iteration
        follows each component's own number of factors.  The search itself does not
        decouple: a child may need a column its parent had switched off.
    ard_rate_min : float, default=0.0
        Lower limit on the optimised ARD rate ``b*`` (fitting units); the update
        remains the exact constrained maximiser of ``F``.  Without a limit ``b*``
        becomes very small once columns are pruned (which is what lets ARD prune
        them decisively); a positive limit keeps the prior informative.
    ard_rate_update : {"fixed-point", "exact"}, default="fixed-point"
        How ``"ard_rate"`` re-estimates ``b*``.  ``"fixed-point"`` is the thesis
        update ``b* = a* / mean E[ν]`` with ``q(ν)`` held fixed; ``"exact"`` sets
        ``b*`` and every ``q(ν)`` jointly to their maximiser of F given ``q(Λ̃)`` (a
        one-dimensional root, ``sklearn_vb.mfa._hyper``).  Both are exact
        coordinate maximisations, so F never decreases.  ``"exact"`` is not the
        default: from the start, where most of the ``p - 1`` columns carry almost
        nothing, it drops ``b*`` at once, every column is shrunk hard, and ARD
        switches off factors the data need.
    rotations : bool, default=True
        After the updates of a VBEM iteration (see ``rotation_interval``), change the
        basis of each component's factors, ``x -> R^{-1} x`` and ``Λ^s -> Λ^s R``, by
        the ``R`` that maximises F with q(ν) re-optimised (Luttinen & Ilin 2010;
        ``sklearn_vb.mfa._rotate``), then shift them, ``x -> x - t`` and
        ``μ^s -> μ^s + Λ^s t``, by the ``t`` that maximises F (closed form): the model
        of the data is unchanged, but VBEM alone moves along these directions in
        hundreds or thousands of tiny steps.  Each move is kept only when the bound
        recomputed afterwards is not below the bound before it.  With ``search=True``
        the moves are made in every epoch of the search, so that births are judged
        on better converged states.  They are not made when X has missing entries.
    rotation_interval : int, default=4
        With ``rotations``, the moves are made in every ``rotation_interval``-th
        iteration (each costs a few small optimisations per component).
    acceleration : {"squarem"} or None, default="squarem"
        Extrapolate the VBEM fixed point every third iteration (SQUAREM, Varadhan &
        Roland 2008; see :mod:`sklearn_vb.base`) in the coordinates of q(θ): the mean
        and the Cholesky factor (log diagonal) of each row of ``[Λ^s, μ^s]``, the logs
        of the Gamma rates of q(ν) and of the Dirichlet counts, and the re-estimated
        hyperparameters (logs of Ψ and of the ARD rate).  An extrapolation is kept only
        when it does not lower the bound, so the bound still never decreases.  None
        runs plain VBEM.
    score_method : {"plugin", "bound"}, default="plugin"
        ``score_samples``: ``"plugin"`` is ``ln Σ_s E[π_s] N(y | E μ^s, E Λ^s E Λ^sᵀ + Ψ)``
        (posterior-mean parameters, as ``BayesianGaussianMixture``); ``"bound"`` is
        the variational lower bound on the predictive density
        ``ln ∫ q(θ) p(y | θ) dθ`` (thesis eq. 4.85).
    max_iter : int, default=2000
        Fixed number of components: maximum VBEM iterations per restart.  Search:
        maximum total VBEM iterations of the whole search.
    tol : float, default=1e-2
        Convergence threshold in nats (total over the data).  A run (with a fixed
        number of components, or the final polish of the search) is converged when
        the last change of ``F`` is below ``tol`` *and* so is the gain still to come
        predicted from the recent increments: with ``d`` the last increment and ``r``
        the largest ratio of consecutive increments over the last five iterations,
        ``d r / (1 - r)`` (infinite when the increments are not shrinking).  ARD
        switches factors off slowly (increments shrinking by well under 1 % per
        iteration), where a small last change alone stops the run many nats short
        of the optimum.
    method : {"vb", "map", "ml"}, default="vb"
        ``"vb"`` runs VBEM.  ``"ml"`` and ``"map"`` run EM for a point estimate of the
        mixing proportions, every ``[Λ^s, μ^s]`` and ``Ψ`` with the number of
        components and of factors (``n_factors``, all used) fixed (Ghahramani &
        Hinton 1996): E steps (responsibilities and the exact factor posteriors) and
        M steps (proportions, each row of ``[Λ^s, μ^s]`` jointly, then ``Ψ`` above
        the ``psi_min`` floor, which keeps the likelihood bounded), from the same
        initial state as VBEM, with the same restarts and convergence rule.
        ``"map"`` adds the package's priors at fixed hyperparameters, in fitting
        units: ``π ~ Dir(α/S)`` (its mode in the softmax basis, counts
        ``α/S + N_s``, as for :class:`~sklearn_vb.VBHiddenMarkov`), each loading
        column a Student-t, the ARD precision ``Gamma(a, b)`` integrated out (the M
        step minorises it by a Gaussian at the current loadings, which never lowers
        the objective), centres ``N(μ*, diag(1/ν*))`` at the data mean and inverse
        variance; no prior on ``Ψ``.  ``"map"`` needs ``search=False``; ``"ml"`` with
        ``search=True`` grows the mixture by the births of the search, accepted on
        BIC (Beal 2003, §4.6.2; the user guide, "Choosing the structure").
        ``optimize_hyperparameters`` may only select ``"noise"`` (``True``: ``Ψ``
        estimated, ``False``: the data variance); no pruning or acceleration.
        ``lower_bound_`` and ``lower_bounds_`` then hold the
        EM objective (also ``objective_`` and ``objectives_``), which is not a bound:
        ``ln p(X | θ)`` (also ``log_likelihood_``) for ``"ml"``, plus ``ln p(θ)`` and
        ``Σ_s ln π_s`` for ``"map"``, in the original units (the Jacobian of the
        standardisation is included); EM never decreases it.  ``weights_``,
        ``means_``, ``loadings_`` and ``noise_variance_`` hold the point, which
        ``predict``, ``score_samples``, ``transform`` and ``sample`` use;
        ``n_factors_per_component_`` counts every column (for ``bic``); the
        posterior attributes are not set, and scoring refuses point fits.
    learning_method : {"batch", "online"}, default="batch"
        How ``fit`` updates q(θ) (``method="vb"`` and ``search=False`` only; online
        learning with ``search=True`` raises a ValueError, as births and deaths need
        the whole data; with ``search=True`` the estimator has no :meth:`partial_fit`),
        as in scikit-learn's ``LatentDirichletAllocation``.
        {online_learning_epochs}
        The epochs begin at the start of ``init_params``; ``rotations``,
        ``prune_factors``, ``compress_factors`` and ``acceleration`` do not apply.  An
        epoch records in ``lower_bounds_`` a stochastic estimate of the bound: the sum
        over its minibatches of their row terms after their local steps, plus the
        terms of q(θ) at the end of the epoch and the Jacobian.
        {online_learning_result}
        {online_learning_restarts}
    {online_step_params}
    batch_size : int, default=128
        Number of rows in a minibatch (``learning_method="online"`` and
        :meth:`partial_fit`).
    total_samples : float, default=1e6
        Number of rows of the whole stream that :meth:`partial_fit` learns from: a
        minibatch's statistics are multiplied by ``total_samples / n_b`` (``n_b`` its
        rows) before the step.  ``fit`` uses the rows of ``X`` instead.
    n_init, init_params, random_state, warm_start, verbose, verbose_interval, bound_check,
    keep_restarts
        See :class:`sklearn_vb.base.VBEMEstimator`.  With ``search=True`` the restarts
        after the first split along random directions (``split_direction="random"``)
        and refit (``refit_final``) from their own random starts, so they explore
        different structures; the best bound is kept and ``restart_lower_bounds_``
        lists every restart's.  ``init_params`` is
        ``"kmeans"`` (responsibilities from k-means) or ``"random"`` (hard assignment
        to randomly chosen data points).

    Attributes
    ----------
    n_components_ : int
    weights_ : ndarray (S,)            E[π]
    dirichlet_concentration_ : ndarray (S,)  α̂
    means_ : ndarray (S, p)            E[μ^s] (original units)
    loadings_ : ndarray (S, p, K)      E[Λ^s] (original units)
    loading_means_, loading_covariances_ : ndarray (S, p, K+1), (S, p, K+1, K+1)
        Posterior of each row of ``[Λ^s, μ^s]`` in fitting units.
    feature_shift_, feature_scale_ : ndarray (p,)
        The standardisation: fitting units are ``(X - feature_shift_) / feature_scale_``
        (zeros and ones when ``standardize=False``).
    ard_shape_, ard_rate_, ard_precisions_ : float, ndarray (S, K), ndarray (S, K)
    noise_variance_ : ndarray (p,)     Ψ (original units)
    mean_prior_ : tuple (μ*, ν*) in original units
    alpha_prior_, ard_prior_ : float, tuple (a*, b*)
    n_factors_per_component_ : ndarray (S,) of int
        Active factors by the ``ard_threshold`` rule.
    lower_bound_ : float
        The complete bound F on ln p(X) in nats (total over the data).
    lower_bounds_ : ndarray
        F per iteration of the final structure (never decreasing).
    bound_terms_ : dict
        The named terms of F in fitting units (``pi`` scalar, the others per
        component) and ``jacobian``; ``lower_bound_`` is their total.
    search_history_ : dict of arrays
        One entry per VBEM iteration of the search: ``iteration``, ``bound``,
        ``n_components``, ``epoch`` and ``event`` (``"iter"``, ``"death"``,
        ``"birth"``, ``"accept"``, ``"reject"``, ``"prune"``, ``"polish"``, ``"refit"``
        (the first iteration of a ``refit_final`` fit)); plus ``moves``, a list of
        ``(epoch, parent_id, accepted, F_before, F_after)``.
    n_births_proposed_, n_births_accepted_, n_epochs_ : int
    restart_lower_bounds_ : ndarray (n_init,)
        The final bound of every restart of the last fit (the kept one is the largest).
    n_partial_iter_ : int
        Partial (children-only) iterations of the search (``birth_partial_iter``),
        not counted in ``n_iter_``.
    labels_ : ndarray (N,)  component of each training point.
    n_batch_iter_ : int
        Online learning only: one more than the number of natural-gradient steps
        taken, the t of the next step size (scikit-learn's convention).

    Examples
    --------
    Two clusters in five dimensions, each spread along one direction: the search keeps two
    components and ARD one factor in each.

    >>> import numpy as np
    >>> from sklearn_vb import VBMixtureFactorAnalysers
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(size=(200, 1)) @ rng.normal(size=(1, 5))
    ...                     + rng.normal(scale=0.1, size=(200, 5)) + centre
    ...                     for centre in (0, 10)])
    >>> mfa = VBMixtureFactorAnalysers(random_state=0).fit(X)
    >>> mfa.n_components_, mfa.n_factors_per_component_.tolist()
    (2, [1, 1])
    """

    _parameter_constraints: dict = {**VBEMEstimator._parameter_constraints,
                                    **PARAMETER_CONSTRAINTS}

    def __init__(
        self,
        n_components=1,
        *,
        n_factors=None,
        search=True,
        max_components=None,
        alpha=1.0,
        a=1.0,
        b=1.0,
        optimize_hyperparameters=True,
        standardize=True,
        psi_min="auto",
        death_threshold=1.0,
        max_tries="auto",
        split_direction="principal-first",
        split_hardness=1.0,
        split="responsibility",
        agitation_tol=float(np.exp(-6.0)),
        epoch_rtol=1e-6,
        max_iter_epoch=200,
        refit_final=1,
        birth_accept_rtol=0.01,
        birth_reject_rtol=0.02,
        skip_rejected_parents=True,
        birth_partial_iter=100,
        birth_partial_reject=False,
        shrinking_death_threshold=5.0,
        polish_iter=1000,
        ard_threshold=1e-3,
        prune_factors=True,
        prune_threshold=1e-6,
        compress_factors=True,
        ard_rate_min=0.0,
        ard_rate_update="fixed-point",
        rotations=True,
        rotation_interval=4,
        acceleration="squarem",
        score_method="plugin",
        max_iter=2000,
        tol=1e-2,
        n_init=1,
        init_params="kmeans",
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        bound_check="raise",
        keep_restarts=False,
        method="vb",
        learning_method="batch",
        learning_decay=0.7,
        learning_offset=10.0,
        batch_size=128,
        total_samples=1e6,
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
        self.method = method
        self.learning_method = learning_method
        self.learning_decay = learning_decay
        self.learning_offset = learning_offset
        self.batch_size = batch_size
        self.total_samples = total_samples
        self.n_components = n_components
        self.n_factors = n_factors
        self.search = search
        self.max_components = max_components
        self.alpha = alpha
        self.a = a
        self.b = b
        self.optimize_hyperparameters = optimize_hyperparameters
        self.standardize = standardize
        self.psi_min = psi_min
        self.death_threshold = death_threshold
        self.max_tries = max_tries
        self.split_direction = split_direction
        self.split_hardness = split_hardness
        self.split = split
        self.agitation_tol = agitation_tol
        self.epoch_rtol = epoch_rtol
        self.max_iter_epoch = max_iter_epoch
        self.refit_final = refit_final
        self.birth_accept_rtol = birth_accept_rtol
        self.birth_reject_rtol = birth_reject_rtol
        self.skip_rejected_parents = skip_rejected_parents
        self.birth_partial_iter = birth_partial_iter
        self.birth_partial_reject = birth_partial_reject
        self.shrinking_death_threshold = shrinking_death_threshold
        self.polish_iter = polish_iter
        self.ard_threshold = ard_threshold
        self.prune_factors = prune_factors
        self.prune_threshold = prune_threshold
        self.compress_factors = compress_factors
        self.ard_rate_min = ard_rate_min
        self.ard_rate_update = ard_rate_update
        self.rotations = rotations
        self.rotation_interval = rotation_interval
        self.acceleration = acceleration
        self.score_method = score_method

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # NaN marginalised by batch VB (with or without the search) and the point fits
        # (prediction: whatever fit takes)
        tags.input_tags.allow_nan = self.learning_method == "batch"
        return tags

    # ================================================================ setup
    def _check_fit_data(self, X, **fit_params):
        if fit_params:
            raise TypeError(f"fit got unexpected argument(s) {sorted(fit_params)}.")
        if self.learning_method == "online":
            self._check_online("learning_method='online'")
        # a fit (or the first partial_fit) begins a new history of bounds
        self._streamed = False
        X = validate_float_data(self, X, ensure_min_samples=1, reset=True, allow_nan=True)
        if np.isnan(X).any():
            check_missing_supported(self, "fit")
        check_point_options(self.method, self.search, self.optimize_hyperparameters)
        if (self.warm_start and hasattr(self, "lower_bound_")
                and self._point_fitted != (self.method != "vb")):
            raise ValueError("warm_start cannot continue a fit made with another method than "
                             f"method={self.method!r}; refit without warm_start.")
        data = _fit_data(X, self.standardize, self.psi_min)
        if self.n_components > data.n_samples:
            rows = " (rows with at least one observed value)" if data.rows is not None else ""
            raise ValueError(f"n_components={self.n_components} must be <= "
                             f"n_samples={data.n_samples}{rows}.")
        return data

    def _check_online(self, what):
        """Arguments that online learning (``what``: the argument or method asking for
        it) cannot combine with."""
        check_online_method(self.method, what)
        if self.search:
            raise ValueError(f"{what} needs search=False: online learning keeps the "
                             "number of components fixed (no births or deaths).")

    def _initialize(self, data, random_state):
        # a new start begins the step-size schedule of online learning anew
        self.__dict__.pop("n_batch_iter_", None)
        if self.learning_method == "online":
            self._online_rng = random_state  # the epochs' orders continue its draws
        else:
            self.__dict__.pop("_online_rng", None)
        self._stale_locals = False
        # the restarts of one fit (``n_init``) are numbered: a search restart after the
        # first splits along random directions, so that the restarts differ
        self._restart_index = self.__dict__.get("_restart_index", -1) + 1
        self._search_rng = random_state
        self._principal_split_tried = set()
        K = n_loading_columns(self.n_factors, data.n_features)
        self._vb_ = initial_state(
            data, self.n_components, K, self.init_params, self.alpha, self.a, self.b,
            random_state,
            noise_estimated="noise" in selected_hyperparameters(self.optimize_hyperparameters))
        first_updates(self._vb_, data)
        if self.method != "vb":
            self._vb_ = em_start(self._vb_, self.a, self.b, self.alpha)
            point_e_step(self, data)

    # ================================================================ point EM
    @property
    def _point_fitted(self):
        """Whether the stored state is a point estimate (``method="ml"/"map"``)."""
        return isinstance(getattr(self, "_vb_", None), MFAPointState)

    # ================================================================ updates
    # ---------------------------------------------------------------- steps
    def _iteration_steps(self):
        return iteration_steps(self)

    # ---------------------------------------------------------------- acceleration
    #: extrapolate only after this many shrinking increments (see ``_settled`` in base)
    _settle_window = 4

    def _pack_hyperparameters(self):
        """q(θ) and the re-estimated hyperparameters as one vector (see
        :func:`~sklearn_vb.mfa._vbem.pack_state`)."""
        return pack_state(self._vb_)

    def _unpack_hyperparameters(self, vector, data):
        return unpack_state(self._vb_, vector, data.psi_floor)

    def _evaluation_steps(self):
        # q(x|s) and q(s) for an extrapolated q(θ) (no deaths), whose bound is then recorded
        return (Step("evaluate", lambda data, it: local_updates(self._vb_, data)),)

    def _accelerated(self):
        return self.method == "vb" and super()._accelerated()

    def _snapshot(self):
        return copy.copy(self._vb_)

    def _restore(self, snapshot):
        self._vb_ = copy.copy(snapshot)

    # ---------------------------------------------------------------- bound
    def _lower_bound(self, data):
        if self._point_fitted:
            # the EM objective at the last E step's point (bound_check="steps": no M check)
            return self._vb_.objective
        return lower_bound(self._vb_, data)

    # ================================================================ structure
    def _birth(self, data, parent):
        """The birth the search proposes at component ``parent`` (see
        :func:`~sklearn_vb.mfa._birth_death.propose_birth`)."""
        propose_birth(self, data, parent)

    # ================================================================ loops
    def fit(self, X, y=None, **fit_params):
        """Fit by VBEM (the birth/death search with ``search=True``), keeping the best
        of ``n_init`` restarts.

        Returns
        -------
        self
        """
        self.__dict__.pop("_restart_index", None)
        self._restart_bounds = []
        try:
            super().fit(X, y, **fit_params)
            self.restart_lower_bounds_ = np.asarray(self._restart_bounds, dtype=float)
        finally:
            self.__dict__.pop("_restart_index", None)
            self.__dict__.pop("_restart_bounds", None)
        return self

    def _run_vbem(self, data):
        # The iterations are many small matrix products: a multi-threaded BLAS
        # spends more time synchronising its threads than computing, so the fit
        # runs single-threaded.
        with threadpool_limits(limits=1, user_api="blas"):
            bounds, converged = self._run_vbem_unthreaded(data)
        if bounds:
            self.__dict__.setdefault("_restart_bounds", []).append(float(bounds[-1]))
        return bounds, converged

    def _run_vbem_unthreaded(self, data):
        if not hasattr(self, "_search_rng"):  # warm start
            self._search_rng = check_random_state(self.random_state)
        if self._point_fitted:
            point_e_step(self, data)  # warm start: the statistics of the (new) data
        elif (self._vb_.resp.shape[0] != data.n_samples  # warm start on new data
              or not _locals_match(self._vb_, data)  # (with other missing entries)
              or getattr(self, "_stale_locals", False)):  # or after partial_fit
            local_updates(self._vb_, data)
        self._stale_locals = False
        if self.learning_method == "online":
            return run_online(self, data)
        control = self._control = RunControl()
        if not self.search:
            return run_fixed_structure(self, data, control)
        return run_search(self, data, control)

    # ================================================================ online VB
    @available_if(_fixed_components)
    def partial_fit(self, X, y=None):
        """Online variational Bayes: natural-gradient steps on q(θ) from the rows of
        ``X``, with the number of components fixed (``search=False``; with
        ``search=True`` the estimator has no ``partial_fit``, and the AttributeError
        says why).

        {partial_fit_minibatches}
        The step (``sklearn_vb.mfa._online``) is q(x|s) and q(s) of its rows under the
        current q(θ), then, with ``n_b`` its rows, ``scale = total_samples / n_b`` and
        ``rho = (learning_offset + n_batch_iter_)^(-learning_decay)``,

        * q(π): ``α̂ <- (1 - rho) α̂ + rho (α*/S + scale N_s)``;
        * every row of q(Λ̃), in its natural parameters (precision ``Γ⁻¹`` and
          ``Γ⁻¹ λ̄``): ``(1 - rho)`` times the current ones plus ``rho`` times those of
          the batch update from the statistics times ``scale``;
        * q(ν): the batch update from the new q(Λ̃) (it reads no data);
        * Ψ, when estimated (``optimize_hyperparameters``): ``(1 - rho) Ψ + rho Ψ̂``,
          ``Ψ̂`` the batch estimate from the scaled statistics; the other selected
          hyperparameters (``b*``, ...) by their batch updates from the current q(θ).

        Then ``n_batch_iter_`` grows by one.  ``rotations``, ``prune_factors``,
        ``compress_factors`` and ``acceleration`` do not apply (each works on the
        statistics of all the data).  ``X`` is read, never written, so a stream too
        large for memory is passed in chunks, e.g. of a ``np.memmap``.

        The first call (on an unfitted model) takes the standardisation
        (``standardize``), the noise floor (``psi_min``) and the start
        (``init_params``, one start) from that first ``X``, which needs at least
        ``n_components`` rows.  A fitted model (by ``fit``, batch or online, with
        ``search=False`` or not) continues from its q(θ) and its units.

        {partial_fit_stream}
        The estimate is ``scale`` times the minibatch's row terms after its local step,
        plus the terms of q(θ) after the step, plus the Jacobian of the standardisation
        for ``total_samples`` rows.  ``labels_``, ``bound_terms_`` and
        ``component_scores_`` are those of this call's rows under the final q(θ) (one
        more local pass over ``X``).
        {partial_fit_not_scored}

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self
        """
        return partial_fit(self, X)

    def _can_stop(self, iteration):
        """The ``tol`` test of the loop holds; in a run that must converge fully, also
        require the predicted remaining gain to be below ``tol``."""
        return run_control(self).can_stop(self.tol, self._accelerated())

    def _verbose_details(self):
        return f", {self._vb_.resp.shape[1]} components"

    # ================================================================ finalize
    def _finalize(self, data):
        set_fitted(self, data)

    def _iteration_limit_text(self):
        history = getattr(self, "search_history_", None)
        if history is not None and self.n_iter_ < self.max_iter:
            # the search stopped short of max_iter: its final polish ran out
            return f"polish_iter={self.polish_iter} iterations of the final polish"
        return super()._iteration_limit_text()

    # ================================================================ inference
    def predict_proba(self, X):
        """Component responsibilities q(s | x) of each row, shape (n_samples, S)."""
        Z = self._check_new_data(X)
        ell = log_weights(self._vb_, Z)
        return np.exp(ell - logsumexp(ell, axis=1, keepdims=True))

    def predict(self, X):
        """Most responsible component of each row."""
        Z = self._check_new_data(X)
        return np.argmax(log_weights(self._vb_, Z), axis=1)

    def fit_predict(self, X, y=None):
        """Fit and return the component labels of the training rows."""
        return self.fit(X).labels_

    @property
    def _n_features_out(self):
        """The number of factor columns of :meth:`transform` (names from ``get_feature_names_out``)."""
        return int(self.n_factors_max_)

    def transform(self, X, components="best"):
        """Posterior factor means E[x | y, s].

        ``components="best"`` (default) returns an array (n_samples, K) holding, for
        each row, the factor means in its most responsible component;
        ``components="all"`` returns (n_samples, S, K), every component's means.
        Factors are in the component's own latent coordinates (unit prior variance);
        inactive ARD columns give values near 0.
        """
        Z = self._check_new_data(X)
        xbar = expected_factors(self._vb_, Z)[1]
        if components == "all":
            return xbar
        if components != "best":
            raise ValueError(f"components must be 'best' or 'all'; got {components!r}.")
        best = np.argmax(log_weights(self._vb_, Z), axis=1)
        return xbar[np.arange(Z.shape[0]), best]

    def score_samples(self, X, method=None):
        """Log density of each row (original units).

        ``method`` overrides ``score_method``: ``"plugin"`` uses the posterior-mean
        parameters, ``"bound"`` the variational lower bound on the predictive
        density (thesis eq. 4.85).
        """
        method = self.score_method if method is None else method
        return log_densities(self, self._check_new_data(X), method)

    def score(self, X, y=None):
        """Mean log-likelihood per row (see :meth:`score_samples`)."""
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples=1):
        """Draw from the posterior-mean (plug-in) model; returns ``(X, labels)``."""
        self._check_is_fitted()
        if n_samples < 1:
            raise ValueError(f"n_samples must be >= 1; got {n_samples}.")
        return plugin_sample(check_random_state(self.random_state), n_samples, self.weights_,
                             self.means_, self.loadings_, self.noise_variance_)

    # ---------------------------------------------------------------- bic / aic
    def _check_new_data(self, X):
        """``X`` validated and in fitting units."""
        self._check_is_fitted()
        X = validate_float_data(self, X, reset=False, allow_nan=True)
        if np.isnan(X).any():
            check_missing_supported(self, "new data")
        return (X - self._shift_) / self._scale_

    def _log_likelihood(self, Z):
        return float(np.sum(log_densities(self, Z, "plugin")))

    def _n_observations(self, Z):
        return Z.shape[0]

    def _n_parameters(self):
        """Free parameters with the ARD-active factor counts (eq. 4.89)."""
        return fa_free_parameters(self.n_factors_per_component_, self.n_features_in_)

    def component_scores(self):
        """Per-component bound contributions ``F_s`` (eq. 4.77) of the fitted model."""
        self._check_is_fitted()
        if self._point_fitted:
            raise AttributeError(f"a fit with method={self.method!r} has no bound F_s.")
        return self.component_scores_.copy()
