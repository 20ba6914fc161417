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
    the ordered names of the coordinate-ascent steps of one iteration, e.g.
    ``("vbm", "vbe")``; each name ``s`` is run as ``self._step_<s>(data, iteration)``.
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
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

__all__ = ["VBEMEstimator", "BoundDecreaseError", "BoundDecreaseWarning"]


class BoundDecreaseError(RuntimeError):
    """The variational lower bound decreased: a coordinate-ascent step is wrong."""


class BoundDecreaseWarning(RuntimeWarning):
    """Issued instead of :class:`BoundDecreaseError` when ``bound_check="warn"``."""


def bound_round_off(value):
    """Largest decrease of a bound of size ``value`` attributable to round-off.

    The bound is a sum of many terms of size up to ``|value|``; cancellation there
    leaves errors of a few ulps of the largest term, so a relative 1e-9 plus an
    absolute 1e-7 nats is generous without hiding real bugs (a wrong step typically
    costs far more than that).
    """
    return 1e-9 * abs(value) + 1e-7


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
        Number of restarts; the run with the highest final bound is kept.
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
        """Names of the coordinate steps of one iteration, in order."""

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
        skip = {"lower_bound_", "lower_bounds_", "n_iter_", "converged_", "fit_time_"}
        return {
            k: copy.deepcopy(v)
            for k, v in vars(self).items()
            if k.endswith("_") and not k.startswith("__") and k not in skip
        }

    def _set_state(self, state):
        for k, v in state.items():
            setattr(self, k, v)

    def _can_stop(self, iteration):
        """Whether convergence may be declared at ``iteration`` (1-based).

        Models with a hyperparameter schedule override this so that the loop does
        not stop before the scheduled updates have run.
        """
        return True

    def _finalize(self, data):
        """Called once on the kept state after all restarts (derived attributes)."""

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

        best = None
        t_start = time.perf_counter()
        for init in range(n_init):
            if not continuing:
                self._initialize(data, random_state)
            bounds, converged = self._run_vbem(data)
            if self.verbose:
                print(
                    f"[{type(self).__name__}] restart {init + 1}/{n_init}: "
                    f"bound {bounds[-1]:.6f} after {len(bounds)} iterations"
                    f"{'' if converged else ' (not converged)'}"
                )
            if best is None or bounds[-1] > best[0]:
                best = (bounds[-1], self._get_state(), bounds, converged)

        lower_bound, state, bounds, converged = best
        self._set_state(state)
        previous = list(getattr(self, "lower_bounds_", [])) if continuing else []
        self.lower_bounds_ = np.asarray(previous + bounds, dtype=float)
        self.lower_bound_ = float(lower_bound)
        self.n_iter_ = len(bounds)
        self.converged_ = bool(converged)
        self.fit_time_ = time.perf_counter() - t_start
        self._finalize(data)
        if not converged:
            warnings.warn(
                f"{type(self).__name__}: the best of {n_init} restart(s) did not converge "
                f"within max_iter={self.max_iter} iterations (tol={self.tol} nats). "
                "Increase max_iter or tol, or check the data.",
                ConvergenceWarning,
            )
        return self

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
        label = "+".join(self._iteration_steps())
        trace = []
        converged = False
        for iteration in iterations:
            value, restarted = self._one_iteration(data, iteration, trace[-1] if trace else None)
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
        for name in self._iteration_steps():
            if getattr(self, f"_step_{name}")(data, iteration):
                restarted = True
                checked = False
            elif checked:
                value = float(self._lower_bound(data))
                self._check_decrease(previous, value, iteration, name, raise_error=True)
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
            warnings.warn(message, BoundDecreaseWarning)
        else:
            raise BoundDecreaseError(message)

    # ------------------------------------------------------------------ criteria
    def bic(self, X, **fit_params):
        """Bayesian information criterion at the posterior-mean parameters.

        ``-2 ln p(X | E_q[theta]) + d ln n`` with ``d`` free parameters and ``n``
        observations (rows of ``X``; for sequence models the total number of time
        steps).  Lower is better, as for sklearn's ``GaussianMixture``; the
        ``"bic"`` score of :mod:`sklearn_vb.scoring` is ``-bic / 2``, a log-evidence
        estimate (higher is better).

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
        """Validate new data against the fitted model, as :meth:`score` and :meth:`bic` do.

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
