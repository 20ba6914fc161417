"""Documentation that several estimators share, written once.

A docstring names a fragment by a placeholder standing alone on its line,
``{online_step_params}``; :func:`fill_doc` replaces that line by the fragment,
indented as the placeholder is.  Only such whole-line placeholders are replaced, so
the braces of a numpydoc type (``{"batch", "online"}``) are left alone.  The fragments
that differ between models only by what a minibatch holds (rows, sequences) are
functions of that word.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["ONLINE_LEARNING_RESTARTS", "PARTIAL_FIT_NOT_SCORED", "fill_doc",
           "online_learning_epochs", "online_learning_result", "online_step_params",
           "partial_fit_minibatches", "partial_fit_stream"]

_PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}[ \t]*$")


def _substitute(doc, fragments):
    """``doc`` with every placeholder line replaced by its fragment; a placeholder
    without a fragment is an error (a typo would otherwise reach the user)."""
    if doc is None:  # python -OO strips docstrings
        return None
    lines = []
    for line in doc.splitlines():
        match = _PLACEHOLDER.match(line)
        if match is None:
            lines.append(line)
            continue
        name = match["name"]
        if name not in fragments:
            raise KeyError(f"docstring placeholder {{{name}}} has no fragment; known: "
                           f"{sorted(fragments)}")
        text = textwrap.dedent(fragments[name]).strip("\n")
        lines.append(textwrap.indent(text, match["indent"], lambda _: True))
    return "\n".join(lines) + ("\n" if doc.endswith("\n") else "")


def _paragraph(text):
    """One paragraph of prose wrapped to the width of a method's docstring."""
    return textwrap.fill(text, width=80, break_long_words=False, break_on_hyphens=False)


def fill_doc(**fragments):
    """Decorator filling the placeholders of a class's docstring and of the docstrings
    of the functions defined in its body (also under ``available_if``), or of one
    function's docstring, with ``fragments`` (name -> text)."""
    def decorate(obj):
        obj.__doc__ = _substitute(obj.__doc__, fragments)
        if isinstance(obj, type):
            for value in vars(obj).values():
                function = getattr(value, "fn", value)  # available_if keeps it in .fn
                if callable(function) and hasattr(function, "__code__"):
                    function.__doc__ = _substitute(function.__doc__, fragments)
                    if function is not value:
                        value.__doc__ = function.__doc__
        return obj
    return decorate


def online_step_params(unit, theta="q(theta)"):
    """``learning_decay`` and ``learning_offset`` of an estimator that learns online
    from minibatches of ``unit`` (its parameters section)."""
    return f"""\
learning_decay : float in [0, 1], default=0.7
    kappa of the step sizes ``rho_t = (learning_offset + t)^(-learning_decay)``,
    t = ``n_batch_iter_`` = 1, 2, ... (scikit-learn's convention).  Values in
    (0.5, 1] satisfy the conditions under which the steps converge; 0 gives
    rho = 1 at every step (each step then replaces {theta} by the update of
    its minibatch alone, scaled to ``total_samples`` {unit}).
learning_offset : float >= 0, default=10.0
    tau0 of the step sizes: larger values damp the first steps.  With 0 the first
    step has rho = 1.
"""


def online_learning_epochs(unit):
    """What ``learning_method`` selects between, for minibatches of ``unit`` (the
    sentences after the model's own first one)."""
    return _paragraph(
        f"``\"batch\"`` runs VBEM on all {unit} at every iteration.  ``\"online\"`` runs "
        "stochastic variational inference (Hoffman, Blei, Wang & Paisley 2013): each of "
        f"at most ``max_iter`` epochs visits the {unit} in a random order "
        f"(``random_state``) in minibatches of ``batch_size`` {unit}, and every "
        "minibatch makes one natural-gradient step (see :meth:`partial_fit`, with "
        f"``total_samples`` the number of {unit} of ``X``).")


def online_learning_result(unit, per, final_pass, theta="q(theta)"):
    """When an online ``fit`` has converged and what its ``lower_bound_`` is: ``per``
    names the unit of ``tol``, ``final_pass`` the pass that computes the exact bound."""
    return _paragraph(
        "The fit has converged when that estimate changed by less than ``tol`` nats "
        f"*per {per}* (the estimate is noisy at the scale of the total).  "
        f"``lower_bound_`` is then the exact bound of the final {theta} on ``X`` (one "
        f"more {final_pass} over all {unit}), as in batch mode, and may differ from "
        "``lower_bounds_[-1]``.")


#: how restarts and ``partial_fit`` go with ``learning_method="online"``
ONLINE_LEARNING_RESTARTS = """\
Restarts (``n_init``) and ``warm_start`` work as in batch mode, the run kept being
the one with the highest last estimate.  :meth:`partial_fit` always learns online,
whatever this is.
"""


def partial_fit_minibatches(unit, note=""):
    """How ``partial_fit`` cuts ``X`` into minibatches of ``unit`` (``note``: what the
    model adds inside the parenthesis, after a semicolon)."""
    return _paragraph(
        f"``X`` is split into minibatches of at most ``batch_size`` {unit}, in order (as "
        "scikit-learn's ``LatentDirichletAllocation.partial_fit`` does; one step when "
        f"``X`` holds ``batch_size`` {unit} or fewer{note}).  Each minibatch makes one "
        "step of stochastic variational inference (Hoffman, Blei, Wang & Paisley 2013).")


def partial_fit_stream(unit, theta="q(theta)"):
    """What the bound attributes hold after ``partial_fit``: the sentences every model
    shares (its own follow them, then :data:`PARTIAL_FIT_NOT_SCORED`)."""
    return _paragraph(
        f"After every call the fitted attributes describe the current {theta}, so "
        "``score``, ``predict``, ``predict_proba``, ``sample`` and the rest work.  The "
        "bound bookkeeping becomes that of a stream: ``lower_bound_`` is a stochastic "
        f"estimate of the bound of ``total_samples`` {unit} from the last minibatch; "
        "``lower_bounds_`` holds these estimates for every step since the first "
        "``partial_fit`` after the last ``fit``, ``n_iter_`` their number; ``converged_`` "
        "is False (a stream has no convergence test).")


#: why the evidence scores refuse a model trained by ``partial_fit``
PARTIAL_FIT_NOT_SCORED = """\
Since ``lower_bound_`` is not a bound on the log evidence of given data, the
``"vb"`` score of :mod:`sklearn_vb.scoring` refuses a model trained by
``partial_fit``.
"""
