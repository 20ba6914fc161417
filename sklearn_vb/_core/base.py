"""The variational Bayesian EM loop shared by every estimator.

:class:`VBEMEstimator` is a template in the style of
``sklearn.mixture._base.BaseMixture``: it owns restarts (``n_init``), warm starts,
convergence, verbose output, keeping the best run, the check that the lower bound
never decreases, and ``bic``/``aic``.  A model supplies the small steps (every hook
without a default is abstract):

``_check_fit_data(X, **fit_params)``
    validate the input once per ``fit`` and return the data the steps need, as an
    instance of a small dataclass ``_FitData`` defined in the estimator's module (see
    *Fit data* below).
``_initialize(data, random_state)``
    set an initial variational state (attributes ending in ``_``).
``_iteration_steps()``
    the coordinate-ascent steps of one iteration in order, each a :class:`Step`: a
    name (for messages and the bound checks) and the callable ``run(data, iteration)``
    that performs it, e.g. ``(Step("vbm", self._vbm_step), Step("vbe", self._vbe_step))``.
    The last step must leave the estimator in a state whose bound is the one recorded
    (the bound after the VBE step, for the stored pair (q(z), q(theta))).  A step
    that changes the model's structure (deletes a component, say) returns True; the
    bound history then restarts there.
``_lower_bound(data)``
    the complete lower bound on ln p(X) in nats for the stored state.  With
    ``bound_check="steps"`` it is also called after every step, so a model that supports
    that mode must be able to evaluate the bound after any of its steps.
``_get_state()`` / ``_set_state(state)``
    copy out / restore the fitted variational state, used to keep the best restart
    (defaults: every public attribute ending in ``_``).
``_restart_starts()``
    optional: the kinds of start that make up one restart (default ``(None,)``, the one
    start of ``_initialize``).  With several, every restart runs one start of each
    kind to convergence, ``_initialize(data, random_state, start=kind)`` setting it
    up, and the run with the highest final bound over all of them is kept.
``_can_stop(iteration)`` / ``_finalize(data)`` / ``_verbose_details()``
    optional: forbid convergence before a schedule has run / set derived attributes
    once on the kept state / add to the per-iteration message.

The loop itself is three methods: :meth:`~VBEMEstimator._one_iteration` runs the steps
of one iteration and checks them (``bound_check="steps"``);
:meth:`~VBEMEstimator._iterate` repeats it until convergence, checks that the bound
never decreases and prints progress; :meth:`~VBEMEstimator._run_vbem` is one restart.
A model whose fit is a search over structures (the birth/death search of
:class:`~sklearn_vb.mfa.VBMixtureFactorAnalysers`) overrides ``_run_vbem`` and runs
each stage of the search through ``_iterate``, passing its own stopping rules.

Acceleration
------------
A model may opt in to SQUAREM extrapolation of the VBEM fixed point (Varadhan &
Roland 2008) by declaring a constructor parameter ``acceleration`` (``"squarem"`` or
None; constraint :data:`ACCELERATION_CONSTRAINT`) and two hooks:

``_pack_hyperparameters()``
    the variational hyperparameters of q(theta) whose bound was recorded last, as a
    1-D float array in coordinates where any point is, or can be checked to be, a
    valid q(theta) (log Dirichlet counts; natural parameters of Normal-Wishart
    blocks).
``_unpack_hyperparameters(vector, data)``
    set q(theta) from such a vector so that running the steps of
    :meth:`~VBEMEstimator._evaluation_steps` (default: the last step of an
    iteration, the VBE step) evaluates its bound, as after ``_initialize``; return
    False, changing nothing, when the vector is not a valid q(theta) (a scale
    matrix that is not positive definite, say).

Every third iteration then extrapolates from the last three plain iterates theta0,
theta1 = M(theta0), theta2 = M(theta1) of the VBEM map M: with r = theta1 - theta0,
v = theta2 - 2 theta1 + theta0 and the step length s = |r| / |v| (SqS3, clipped to
[1, step_max]), theta' = theta0 + 2 s r + s^2 v (s = 1 gives theta2).  theta' is
evaluated and kept only when its bound is not below the bound of theta2; the next
plain iteration from theta' is SQUAREM's stabilising step.  Otherwise the state of
theta2 is restored exactly, a plain iteration runs from it and step_max shrinks.  The
recorded bound therefore never decreases.  ``extrapolations_`` counts the accepted and
rejected extrapolations of the kept run (a rejected one costs one extra VBE pass).

``bic`` and ``aic`` are computed here from four more hooks, evaluated at the
posterior-mean parameters of a fitted model:

``_check_new_data(X, **fit_params)``
    validate new data against the fitted model (``reset=False``) and return what the
    next two hooks need (the fit-data class, a smaller one, or an array); public as
    :meth:`VBEMEstimator.check_data`.
``_log_likelihood(data)``
    the total log-likelihood ln p(X | E_q[theta]) in nats.
``_n_observations(data)``
    ``n`` of the BIC penalty: the number of rows; for sequence models the total number
    of observed time steps, not the number of sequences.
``_n_parameters()``
    the number of free parameters ``d`` of the fitted model.

Fit data
--------
Each estimator module defines ``@dataclass class _FitData`` holding what its steps
read: the validated arrays (fields named for what they hold, e.g. ``X``, ``starts``,
``ends``) and the quantities derived from them once per fit (sufficient statistics,
standardisation, compressed patterns), which are computed in ``_check_fit_data`` or
in ``__post_init__`` (``field(init=False)``).  The steps access it by attribute
(``data.X``) and never rebind its fields; preallocated work buffers may be written
in place.

Each VBE and VBM step maximises the bound over one factor with the others fixed, so
the bound recorded at the same point of every iteration can never decrease.  A decrease
larger than round-off is always a bug; :class:`BoundDecreaseError` names the step that
lowered it.
"""

from __future__ import annotations

import copy
import time
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real
from typing import Callable, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, make_constraint
from sklearn.utils.validation import check_is_fitted

from .fingerprint import data_fingerprint
from .warn import warn_at_caller

__all__ = ["VBEMEstimator", "BoundDecreaseError", "BoundDecreaseWarning", "SquaremSteps",
           "ACCELERATION_CONSTRAINT", "Restart", "Step", "predicted_remaining_gain"]

#: parameter constraint of ``acceleration`` for estimators that adopt extrapolation
ACCELERATION_CONSTRAINT = [StrOptions({"squarem"}), None]


class Step(NamedTuple):
    """One coordinate-ascent step of a VBEM iteration: what a model's
    ``_iteration_steps()`` returns, in order (see :class:`VBEMEstimator`).

    Examples
    --------
    >>> from sklearn_vb.base import Step
    >>> calls = []
    >>> step = Step("vbe", lambda data, iteration: calls.append(iteration))
    >>> step.run(None, 3)
    >>> step.name, calls
    ('vbe', [3])
    """

    name: str  # as messages and the bound checks name it
    # run(data, iteration), True when it changed the structure; None where a model's
    # compiled loop runs the step
    run: Callable | None


class Restart(NamedTuple):
    """One restart of a fit, as kept in ``restarts_`` with ``keep_restarts=True``.

    ``lower_bound`` is the final bound of the restart (for EM methods the value the
    estimator reports as ``lower_bound_``), ``state`` its fitted state (every attribute
    ``_get_state`` copies, after ``_finalize``; see
    :meth:`VBEMEstimator.restart_estimator`), ``lower_bounds`` its bound after every
    iteration and ``converged`` whether it met ``tol``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> X = np.array([[0], [0], [1], [1], [0], [2], [2], [1]] * 5)
    >>> hmm = VBHiddenMarkov(n_components=2, n_init=3, keep_restarts=True,
    ...                      random_state=0).fit(X)
    >>> len(hmm.restarts_), type(hmm.restarts_[0]).__name__   # three starts per restart
    (9, 'Restart')
    >>> bool(hmm.lower_bound_ == max(r.lower_bound for r in hmm.restarts_))
    True
    """

    lower_bound: float
    state: dict
    lower_bounds: np.ndarray
    converged: bool

    def __repr__(self):
        # the state holds every fitted array: a list of restarts prints one line each
        return (f"Restart(lower_bound={self.lower_bound:.6g}, converged={self.converged}, "
                f"n_iter={len(self.lower_bounds)}, state=<{len(self.state)} attributes>)")


class BoundDecreaseError(RuntimeError):
    """The variational lower bound decreased: a coordinate-ascent step is wrong.

    Every VBE and VBM step maximises the bound over one factor (Beal 2003, §2.3.1,
    Theorem 2.1), so a decrease beyond round-off is a bug; the message names the step.

    Examples
    --------
    >>> from sklearn_vb.base import BoundDecreaseError
    >>> issubclass(BoundDecreaseError, RuntimeError)
    True
    """


class BoundDecreaseWarning(RuntimeWarning):
    """Issued instead of :class:`BoundDecreaseError` when ``bound_check="warn"``.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_vb.base import BoundDecreaseWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", BoundDecreaseWarning)   # make it an error
    ...     issubclass(BoundDecreaseWarning, RuntimeWarning)
    True
    """


def bound_round_off(value):
    """Largest decrease of a bound of size ``value`` attributable to round-off.

    The bound is a sum of many terms of size up to ``|value|``; cancellation there
    leaves errors of a few ulps of the largest term, so a relative 1e-9 plus an
    absolute 1e-7 nats is generous without hiding real bugs (a wrong step typically
    costs far more than that).
    """
    return 1e-9 * abs(value) + 1e-7


def _extrapolation_summary(counts):
    """`` (a of a + r extrapolations kept)`` for the verbose restart line."""
    if not counts:
        return ""
    total = counts["accepted"] + counts["rejected"]
    return f" ({counts['accepted']} of {total} extrapolations kept)"


_PARAM_NAMES = {}


def _param_names(cls):
    """The constructor parameters of an estimator class (cached: ``get_params``
    inspects the signature on every call)."""
    if cls not in _PARAM_NAMES:
        _PARAM_NAMES[cls] = frozenset(cls._get_param_names())
    return _PARAM_NAMES[cls]


_MADE_CONSTRAINTS = {}


def _made_constraints(cls, constraints):
    """scikit-learn's constraint objects of the ``_parameter_constraints`` dict
    ``constraints`` of ``cls``, made once (``validate_parameter_constraints`` makes
    them anew on every call); parameters marked "no_validation" are left out."""
    entry = _MADE_CONSTRAINTS.get(cls)
    if entry is None or entry[0] is not constraints:
        made = {name: [make_constraint(c) for c in allowed]
                for name, allowed in constraints.items()
                if not (isinstance(allowed, str) and allowed == "no_validation")}
        entry = _MADE_CONSTRAINTS[cls] = (constraints, made)
    return entry[1]


def _copy_state_value(value):
    """A copy of an attribute for :meth:`VBEMEstimator._snapshot`: arrays copied,
    lists, tuples and dicts rebuilt around copies, anything else shared."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _copy_state_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_copy_state_value(v) for v in value)
    return value


def predicted_remaining_gain(trace, window=5, block=1):
    """Gain of the bound still to come, extrapolated from the last increments of
    ``trace`` (the bound after every iteration).

    The increments are summed over blocks of ``block`` iterations (useful when
    extrapolations every few iterations make single increments jump up and down).
    With ``d`` the last block increment and ``r`` the largest ratio of consecutive
    block increments among the last ``window``, the geometric tail is
    ``d r / (1 - r)``; infinite when fewer increments are known or they do not
    shrink (a sublinear creep), and 0 once the last block's increment is within
    round-off of the bound (a single small increment between two moves that jump does
    not end a run whose blocks still gain).

    Examples
    --------
    On a geometric sequence the prediction is the exact tail of the series:

    >>> import numpy as np
    >>> from sklearn_vb.base import predicted_remaining_gain
    >>> trace = list(np.cumsum(0.5 ** np.arange(12)))   # tends to 2
    >>> float(predicted_remaining_gain(trace)), float(2.0 - trace[-1])
    (0.00048828125, 0.00048828125)
    """
    if len(trace) < 2:
        return np.inf
    if trace[-1] - trace[-1 - min(block, len(trace) - 1)] <= bound_round_off(trace[-1]):
        return 0.0
    n = (window + 1) * block
    if len(trace) < n + 1:
        return np.inf
    ends = np.asarray(trace[-(n + 1)::block], dtype=float)
    d = np.diff(ends)
    if np.any(d[:-1] <= 0.0):
        return np.inf
    r = float(np.max(d[1:] / d[:-1]))
    if r >= 1.0:
        return np.inf
    return float(d[-1] * r / (1.0 - r))


def _settled(trace, window=4):
    """Whether the last ``window`` increments of the bound shrink monotonically: VBEM
    is then in its linearly converging phase, where extrapolation pays.  Earlier (states
    breaking symmetry, being switched off) the increments grow and shrink, and an
    extrapolation would mostly redirect the run to another optimum."""
    if len(trace) < window + 1:
        return False
    last = trace[-window - 1:]
    steps = [b - a for a, b in zip(last[:-1], last[1:])]
    return all(later <= earlier for earlier, later in zip(steps[:-1], steps[1:]))


class SquaremSteps:
    """The extrapolation points and step lengths of SQUAREM (Varadhan & Roland 2008).

    Holds the plain VBEM iterates since the last extrapolation and proposes
    ``theta0 + 2 s r + s^2 v`` from the last three, with the SqS3 step length
    ``s = |r| / |v|`` clipped to ``[1, step_max]``.  ``step_max`` starts at 1 and grows
    by ``growth`` whenever a proposal at the cap is accepted, and shrinks after a
    rejection, the global step-length control of Du & Varadhan (2020).

    Examples
    --------
    On the linear map ``x -> x / 2`` (fixed point 0) one extrapolation from three plain
    iterates lands on the fixed point:

    >>> import numpy as np
    >>> from sklearn_vb.base import SquaremSteps
    >>> steps = SquaremSteps(initial_step_max=8.0)
    >>> for x in (8.0, 4.0, 2.0):
    ...     steps.record(np.array([x]))
    >>> steps.ready
    True
    >>> steps.proposal()
    array([0.])
    """

    def __init__(self, growth=4.0, initial_step_max=1.0):
        self.growth = growth
        self.step_max = initial_step_max
        self.points = []
        self.step = 1.0
        self.at_cap = False
        self.accepted = 0
        self.rejected = 0

    def reset(self, point=None):
        """Forget the recorded iterates; keep ``point`` as the first one if given."""
        self.points = [] if point is None else [point]

    def record(self, point):
        """Add a plain iterate (the last three are kept; a change of shape restarts)."""
        if self.points and self.points[-1].shape != point.shape:
            self.points = []
        self.points = (self.points + [point])[-3:]

    @property
    def ready(self):
        """Whether three iterates are recorded, so that :meth:`proposal` can extrapolate."""
        return len(self.points) == 3

    def proposal(self, shrink=1.0):
        """The extrapolated point at the step length times ``shrink`` (towards 1)."""
        theta0, theta1, theta2 = self.points
        r = theta1 - theta0
        v = theta2 - 2.0 * theta1 + theta0
        norm_v = np.linalg.norm(v)
        s = np.linalg.norm(r) / norm_v if norm_v > 0 else 1.0
        self.at_cap = s >= self.step_max
        s = float(np.clip(s, 1.0, self.step_max))
        self.step = 1.0 + (s - 1.0) * shrink
        s = self.step
        return theta0 + 2.0 * s * r + s * s * v

    def accept(self, point):
        """The proposal was taken: count it, let the cap grow (:meth:`plain`) and
        restart the iterates from ``point``."""
        self.accepted += 1
        self.plain()
        self.points = [point]

    def plain(self):
        """Called after every accepted proposal and when the proposal was the last
        plain iterate itself: a step length held back by the cap raises the cap."""
        if self.at_cap:
            self.step_max *= self.growth

    def reject(self):
        """The proposal was refused: count it, lower the cap towards the last step
        length and keep only the last plain iterate."""
        self.rejected += 1
        self.step_max = max(1.0, self.step / self.growth)
        self.points = self.points[-1:]


class VBEMEstimator(BaseEstimator, metaclass=ABCMeta):
    """Base class for the variational Bayesian EM estimators.

    Parameters
    ----------
    max_iter : int
        Maximum number of VBEM iterations per restart.
    tol : float
        Convergence threshold on the absolute change of the lower bound, in nats
        (total over the data set).
    n_init : int
        Number of restarts; the run with the highest final bound is kept.  A model may
        make one restart of several runs from different kinds of start (see
        ``_restart_starts``).
    init_params : str
        How the variational state is initialised (model specific choices).
    random_state : int, RandomState instance or None
        Controls the initialisation (and any sampling).
    warm_start : bool
        If True, ``fit`` continues from the fitted state of the previous call
        (``n_init`` is then ignored), as in ``BayesianGaussianMixture``.
    verbose : int
        0 silent, 1 prints restart summaries, 2 also prints the bound every
        ``verbose_interval`` iterations.
    verbose_interval : int
        Iterations between messages when ``verbose >= 2``.
    bound_check : {"raise", "warn", "steps", "off"}
        What to do when the bound decreases by more than round-off.  ``"steps"``
        evaluates the bound after every coordinate step and raises naming the step
        (slower; for debugging).
    keep_restarts : bool
        If True, ``restarts_`` keeps every run's final state and bound (a list of
        :class:`Restart`, in the order run: one per restart, or one per start of a
        restart made of several), e.g. for the restart-mixture proposal of
        importance sampling (``score(est, X, "is", proposal="vb_mixture")``, Beal 2003,
        section 4.7).  Each restart is finalised once more for this.  Estimators declare
        the parameter in their own signature.

    Notes
    -----
    The VBEM algorithm of Beal (2003), §2.3.1 (Theorem 2.1: the VBE and VBM steps each
    maximise the lower bound of eq. 2.51 over one factor of ``q(z) q(theta)``).

    Examples
    --------
    Every estimator of the package is a ``VBEMEstimator``; its bound history never
    decreases:

    >>> import numpy as np
    >>> from sklearn_vb import VBHiddenMarkov
    >>> from sklearn_vb.base import VBEMEstimator
    >>> X = np.array([[0], [0], [1], [1], [0], [2], [2], [1]] * 5)
    >>> hmm = VBHiddenMarkov(n_components=2, random_state=0).fit(X)
    >>> isinstance(hmm, VBEMEstimator)
    True
    >>> bool(np.all(np.diff(hmm.lower_bounds_) >= -1e-9)), bool(hmm.lower_bound_ == hmm.lower_bounds_[-1])
    (True, True)
    """

    _parameter_constraints: dict = {
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "init_params": [str],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "verbose_interval": [Interval(Integral, 1, None, closed="left")],
        "bound_check": [StrOptions({"raise", "warn", "steps", "off"})],
        "keep_restarts": ["boolean"],
    }

    def __init__(
        self,
        *,
        max_iter=100,
        tol=1e-4,
        n_init=1,
        init_params="random",
        random_state=None,
        warm_start=False,
        verbose=0,
        verbose_interval=10,
        bound_check="raise",
    ):
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init_params = init_params
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.verbose_interval = verbose_interval
        self.bound_check = bound_check

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _check_fit_data(self, X, **fit_params):
        """Validate the training data; return the model's ``_FitData``."""

    @abstractmethod
    def _initialize(self, data, random_state):
        """Set an initial variational state."""

    @abstractmethod
    def _iteration_steps(self):
        """The coordinate steps of one iteration in order, as :class:`Step` tuples."""

    @abstractmethod
    def _lower_bound(self, data):
        """The complete lower bound on ln p(X) of the stored state, in nats."""

    @abstractmethod
    def _check_new_data(self, X, **fit_params):
        """Validate data for the fitted model; return what ``_log_likelihood`` and
        ``_n_observations`` need."""

    @abstractmethod
    def _log_likelihood(self, data):
        """Total ln p(X | posterior-mean parameters), in nats."""

    @abstractmethod
    def _n_observations(self, data):
        """``n`` of the BIC penalty (rows; time steps for sequence models)."""

    @abstractmethod
    def _n_parameters(self):
        """Number of free parameters of the fitted model."""

    def _get_state(self):
        """Fitted variational state: every public attribute ending in ``_``
        except the bookkeeping that the loop itself sets."""
        skip = {"lower_bound_", "lower_bounds_", "n_iter_", "converged_", "fit_time_",
                "extrapolations_"}
        return {
            k: copy.deepcopy(v)
            for k, v in vars(self).items()
            if k.endswith("_") and not k.startswith("__") and k not in skip
        }

    def _set_state(self, state):
        for k, v in state.items():
            setattr(self, k, v)

    def _restart_starts(self):
        """The kinds of start of one restart; ``None`` is the single start of
        :meth:`_initialize` (see the module docstring)."""
        return (None,)

    def _can_stop(self, iteration):
        """Whether convergence may be declared at ``iteration`` (1-based).

        Models with a hyperparameter schedule override this so that the loop does
        not stop before the scheduled updates have run.
        """
        return True

    def _record_stream(self, history):
        """Store the bound estimates of ``partial_fit`` steps (online VB): one per step,
        the last as ``lower_bound_``; a stream never reports convergence."""
        self.lower_bounds_ = np.asarray(history, dtype=float)
        self.lower_bound_ = float(history[-1])
        self.n_iter_ = len(history)
        self.converged_ = False
        self._streamed = True
        self._fit_data_fingerprint = None

    def _finalize(self, data):
        """Called once on the kept state after all restarts (derived attributes)."""

    def _validate_params(self):
        """scikit-learn's validation of the constructor parameters against
        ``_parameter_constraints``, with the constraint objects and the parameter
        names made once per class: making them is most of the cost of validation, a
        fixed cost of every fit of a structure search.  A value that no constraint
        accepts goes to scikit-learn's own validation, which raises its message."""
        names = _param_names(type(self))
        for name, allowed in _made_constraints(type(self), self._parameter_constraints).items():
            if name in names:
                value = getattr(self, name)
                if not any(c.is_satisfied_by(value) for c in allowed):
                    super()._validate_params()
                    return

    # ------------------------------------------------------------------ loop
    def fit(self, X, y=None, **fit_params):
        """Fit the model by VBEM, keeping the best of ``n_init`` restarts.

        Returns
        -------
        self
        """
        self._validate_params()
        data = self._check_fit_data(X, **fit_params)
        random_state = check_random_state(self.random_state)
        continuing = self.warm_start and hasattr(self, "lower_bound_")
        n_init = 1 if continuing else self.n_init
        previous = list(getattr(self, "lower_bounds_", [])) if continuing else []
        restarts = [] if getattr(self, "keep_restarts", False) else None

        best = None
        t_start = time.perf_counter()
        starts = (None,) if continuing else self._restart_starts()
        runs = [(init, start) for init in range(n_init) for start in starts]
        for init, start in runs:
            if not continuing:
                if start is None:
                    self._initialize(data, random_state)
                else:
                    self._initialize(data, random_state, start=start)
            bounds, converged = self._run_vbem(data)
            if self.verbose:
                print(
                    f"[{type(self).__name__}] restart {init + 1}/{n_init}"
                    f"{'' if start is None else f' ({start} start)'}: "
                    f"bound {bounds[-1]:.6f} after {len(bounds)} iterations"
                    f"{_extrapolation_summary(getattr(self, '_run_extrapolations', None))}"
                    f"{'' if converged else ' (not converged)'}"
                )
            if best is None or bounds[-1] > best[0]:
                # a single run is kept as it stands: nothing can replace it
                best = (bounds[-1], self._get_state() if len(runs) > 1 else None, bounds,
                        converged, getattr(self, "_run_extrapolations", None))
            if restarts is not None:
                restarts.append(self._restart_record(data, bounds, converged))

        lower_bound, state, bounds, converged, extrapolations = best
        if state is not None:
            self._set_state(state)
        if extrapolations is not None:
            self.extrapolations_ = extrapolations
        self.lower_bounds_ = np.asarray(previous + bounds, dtype=float)
        self.lower_bound_ = float(lower_bound)
        self.n_iter_ = len(bounds)
        self.converged_ = bool(converged)
        self.fit_time_ = time.perf_counter() - t_start
        self._finalize(data)
        # lower_bound_ is a bound on ln p(this data) only: the vb score checks it
        self._fit_data_fingerprint = data_fingerprint(X, fit_params)
        if restarts is not None:
            self.restarts_ = restarts
        if not converged:
            warn_at_caller(
                f"{type(self).__name__}: the best of {n_init} restart(s) did not converge "
                f"within {self._iteration_limit_text()} (tol={self.tol} nats). "
                "Increase it or tol, or check the data.",
                ConvergenceWarning,
            )
        return self

    def _iteration_limit_text(self):
        """The iteration limit a fit that did not converge ran into, for its warning."""
        return f"max_iter={self.max_iter} iterations"

    def _restart_record(self, data, bounds, converged):
        """The :class:`Restart` of the run just ended: its state after ``_finalize`` (the
        bound bookkeeping of the run set first, as ``fit`` sets it for the kept run)."""
        self.lower_bounds_ = np.asarray(bounds, dtype=float)
        self.lower_bound_ = float(bounds[-1])
        self.n_iter_ = len(bounds)
        self.converged_ = bool(converged)
        self._finalize(data)
        return Restart(float(self.lower_bound_), self._get_state(),
                       np.asarray(bounds, dtype=float), bool(converged))

    def restart_estimator(self, restart):
        """A shallow copy of this fitted estimator holding ``restart`` (an entry of
        ``restarts_``, or its index) instead of the kept fit, e.g. to build that
        restart's q(theta) for a restart-mixture proposal.

        Returns
        -------
        estimator
            Shares its arrays with ``restarts_``: treat it as read-only.
        """
        self._check_is_fitted()
        if not isinstance(restart, Restart):
            if not hasattr(self, "restarts_"):
                raise AttributeError(f"{type(self).__name__} kept no restarts; fit with "
                                     "keep_restarts=True.")
            restart = self.restarts_[restart]
        other = copy.copy(self)
        other.__dict__.pop("restarts_", None)
        other._set_state(restart.state)
        other.lower_bound_ = restart.lower_bound
        other.lower_bounds_ = restart.lower_bounds
        other.converged_ = restart.converged
        return other

    def _run_vbem(self, data):
        """One restart from the current state; returns ``(bounds, converged)``."""
        return self._iterate(data, range(1, self.max_iter + 1))

    def _iterate(self, data, iterations, stop=None):
        """The convergence loop: :meth:`_one_iteration` for each number in
        ``iterations`` until the bound changes by less than ``tol`` from one iteration
        to the next (and :meth:`_can_stop` allows it).

        Parameters
        ----------
        data : the model's ``_FitData``
        iterations : iterable of int
            The numbers of the iterations to run (1-based); the loop also ends when
            they run out.  A search numbers the iterations of its epochs consecutively.
        stop : callable ``(iteration, trace, restarted) -> bool or None``, optional
            The caller's own bookkeeping and stopping rules, called after every
            iteration (``restarted`` as returned by :meth:`_one_iteration`).  True
            ends the run as converged, False as not converged, None continues; the
            ``tol`` test comes first.

        Returns
        -------
        trace : list of float
            The bound after every iteration since the last structure change.
        converged : bool
        """
        label = "+".join(step.name for step in self._iteration_steps())
        trace = []
        converged = False
        squarem = SquaremSteps() if self._accelerated() else None
        self._run_extrapolations = None
        for iteration in iterations:
            previous = trace[-1] if trace else None
            if squarem is not None and squarem.ready and _settled(trace, self._settle_window):
                value, restarted = self._extrapolated_iteration(data, iteration, previous, squarem)
            else:
                value, restarted = self._one_iteration(data, iteration, previous)
                if squarem is not None:
                    if restarted:
                        squarem.reset()
                    squarem.record(self._pack_hyperparameters())
            if squarem is not None:
                self._run_extrapolations = {"accepted": squarem.accepted,
                                            "rejected": squarem.rejected}
            if restarted:
                trace = [value]
            else:
                # with per-step checks every step of this iteration has been checked
                if trace and self.bound_check != "steps":
                    self._check_decrease(trace[-1], value, iteration, label)
                trace.append(value)
            if self.verbose >= 2 and iteration % self.verbose_interval == 0:
                print(f"  iteration {iteration}: bound {value:.6f}{self._verbose_details()}")
            verdict = None if stop is None else stop(iteration, trace, restarted)
            if (
                len(trace) > 1
                and abs(trace[-1] - trace[-2]) < self.tol
                and self._can_stop(iteration)
            ):
                converged = True
                break
            if verdict is not None:
                converged = bool(verdict)
                break
        return trace, converged

    # ------------------------------------------------------------------ acceleration
    def _accelerated(self):
        """Whether this fit extrapolates (the model opted in and ``acceleration`` is set)."""
        return getattr(self, "acceleration", None) == "squarem"

    def _pack_hyperparameters(self):
        """q(theta) as a 1-D vector in extrapolation coordinates (see *Acceleration*)."""
        raise NotImplementedError(f"{type(self).__name__} does not support acceleration.")

    def _unpack_hyperparameters(self, vector, data):
        """Set q(theta) from ``vector``; False (state unchanged) if it is not valid."""
        raise NotImplementedError(f"{type(self).__name__} does not support acceleration.")

    def _evaluation_steps(self):
        """Steps that evaluate the bound of a q(theta) set by
        :meth:`_unpack_hyperparameters` (default: the last step of an iteration)."""
        return self._iteration_steps()[-1:]

    def _snapshot(self):
        """Every non-parameter attribute, so that :meth:`_restore` can undo an
        extrapolation exactly.  Arrays are copied and containers rebuilt; other objects
        (a parsed structure, say) are shared, so a model whose steps change such an
        object in place overrides this."""
        params = _param_names(type(self))
        return {k: _copy_state_value(v) for k, v in vars(self).items() if k not in params}

    def _restore(self, snapshot):
        params = _param_names(type(self))
        for k in [k for k in vars(self) if k not in params and k not in snapshot]:
            delattr(self, k)
        self.__dict__.update(snapshot)

    #: extrapolate only once this many bound increments have shrunk in a row
    _settle_window = 1

    #: largest number of times a proposal that is not a valid q(theta) is shrunk
    _MAX_SHRINKS = 6

    def _extrapolated_iteration(self, data, iteration, previous, squarem):
        """One SQUAREM extrapolation from the last three plain iterates; returns
        ``(bound, restarted)`` like :meth:`_one_iteration`.

        The extrapolated q(theta) is kept only when its bound is not below
        ``previous`` (the bound of the last plain iterate); otherwise the state of
        that iterate is restored exactly and a plain iteration runs from it.
        """
        saved = self._snapshot()
        shrink = 1.0
        valid = False
        for _ in range(self._MAX_SHRINKS):
            proposal = squarem.proposal(shrink)
            if squarem.step <= 1.0:
                squarem.plain()  # the proposal is the last plain iterate itself
                break
            if self._unpack_hyperparameters(proposal, data):
                valid = True
                break
            shrink *= 0.5
        if valid:
            for step in self._evaluation_steps():
                step.run(data, iteration)
            value = float(self._lower_bound(data))
            if np.isfinite(value) and value >= previous:
                squarem.accept(self._pack_hyperparameters())
                return value, False
            squarem.reject()
            self._restore(saved)
        elif squarem.step > 1.0:
            squarem.reject()
        value, restarted = self._one_iteration(data, iteration, previous)
        if restarted:
            squarem.reset()
        squarem.record(self._pack_hyperparameters())
        return value, restarted

    def _one_iteration(self, data, iteration, previous=None):
        """Run the steps of one iteration; returns ``(bound, restarted)``.

        ``previous`` is the bound before the iteration (None at the start of a run):
        with ``bound_check="steps"`` the bound is evaluated after every step and
        checked against it.  A step may return True to say that it changed the
        model's structure (a search deleting a component, say): the bound is then not
        comparable with the bounds before, the remaining steps of the iteration are
        not checked, and ``restarted`` is True.
        """
        # whether `previous` holds the bound after the last step run so far
        checked = self.bound_check == "steps" and previous is not None
        restarted = False
        for step in self._iteration_steps():
            if step.run(data, iteration):
                restarted = True
                checked = False
            elif checked:
                value = float(self._lower_bound(data))
                self._check_decrease(previous, value, iteration, step.name, raise_error=True)
                previous = value
        value = previous if checked else float(self._lower_bound(data))
        if not np.isfinite(value):
            raise FloatingPointError(
                f"{type(self).__name__}: the lower bound is {value} at iteration "
                f"{iteration}; the data or the priors are degenerate."
            )
        return value, restarted

    def _verbose_details(self):
        """Extra text for the per-iteration message of ``verbose >= 2``."""
        return ""

    def _check_decrease(self, before, after, iteration, step, raise_error=False):
        if self.bound_check == "off" or after >= before - bound_round_off(before):
            return
        message = (
            f"{type(self).__name__}: the lower bound decreased by {before - after:.3e} nats "
            f"(from {before:.10g} to {after:.10g}) in step '{step}' of iteration {iteration}. "
            "Every VBEM step must raise the bound; this is a bug."
        )
        if self.bound_check == "warn" and not raise_error:
            warn_at_caller(message, BoundDecreaseWarning)
        else:
            raise BoundDecreaseError(message)

    # ------------------------------------------------------------------ criteria
    def bic(self, X, **fit_params):
        """Bayesian information criterion at the posterior-mean parameters.

        ``-2 ln p(X | E_q[theta]) + d ln n`` with ``d`` free parameters and ``n``
        observations (rows of ``X``; for sequence models the total number of time
        steps).  Lower is better, as for sklearn's ``GaussianMixture``.  The
        likelihood is that of the fitted model (``E_q[theta]``, or the point estimate
        of ``method="ml"``/``"map"``), not the maximum-likelihood one, so this is the
        textbook BIC only for an ML fit: the ``"bic"`` score of
        :mod:`sklearn_vb.scoring` is the textbook BIC at the maximum-likelihood point
        found by EM, on the log-evidence scale (``l(theta_ML) - (d/2) ln n``, higher
        is better).

        Parameters
        ----------
        X : array-like
            Data in the form ``fit`` takes.
        **fit_params
            The other data arguments of ``fit`` (e.g. ``lengths``, ``sequence_ids``,
            ``U``).

        Returns
        -------
        float
        """
        log_likelihood, n_observations = self._criterion_terms(X, fit_params)
        return float(-2.0 * log_likelihood + self._n_parameters() * np.log(n_observations))

    def aic(self, X, **fit_params):
        """Akaike information criterion ``-2 ln p(X | E_q[theta]) + 2 d`` at the
        posterior-mean parameters (lower is better); arguments as :meth:`bic`.

        Returns
        -------
        float
        """
        log_likelihood, _ = self._criterion_terms(X, fit_params)
        return float(-2.0 * log_likelihood + 2.0 * self._n_parameters())

    def check_data(self, X, **fit_params):
        """Validate new data against the fitted model, as ``score`` and :meth:`bic` do.

        Public so that code built on a fitted model (its scoring model in
        :mod:`sklearn_vb.scoring`, for one) prepares data exactly as the estimator does.

        Parameters
        ----------
        X : array-like
            Data in the form ``fit`` takes.
        **fit_params
            The other data arguments of ``fit`` (e.g. ``lengths``, ``sequence_ids``,
            ``U``).

        Returns
        -------
        data
            The validated data in the form the estimator's own computations read
            (for example the sequences with their first and one-past-last rows, or
            the rows in fitting units); its type belongs to the estimator.
        """
        self._check_is_fitted()
        return self._check_new_data(X, **fit_params)

    def _criterion_terms(self, X, fit_params):
        data = self.check_data(X, **fit_params)
        return self._log_likelihood(data), self._n_observations(data)

    # ------------------------------------------------------------------ helpers
    def _check_is_fitted(self):
        check_is_fitted(self, "lower_bound_")
