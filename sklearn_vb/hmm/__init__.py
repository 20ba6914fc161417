"""Hidden Markov models with categorical, Gaussian or Poisson emissions: VBEM, MAP/ML EM.

The package holds the estimator (``_estimator``, its parameters' constraints in
``_constraints`` and the combinations a fit refuses in ``_fit_combinations``), its VBEM
updates (``_vbem``), starts (``_init``), the data it reads in memory (``_data``) or on a
dask cluster (``_distributed``), the batch fit's memory check (``_working_set``),
input-driven transitions (``_inputs``; continuous inputs in ``_logistic_transitions``), known states (``_clamp``), online natural-gradient steps (``_online``, run by
``_online_fit``), its point fits by EM (``_point``, run by ``_point_fit``), the fitted
attributes of q(theta) (``_fitted``), its predictions on new sequences (``_predict``)
and their predictive probabilities under q(theta) (``_predictive``),
the typed containers of its state (``_state``), its emission families
(``emissions``, public also as :mod:`sklearn_vb.emissions`, each with the dataclasses of
its hyperparameters and statistics), its numba kernels (``kernels``,
``forward_backward``, ``_joint_kernels``) and its views for the evidence estimators
(``scoring_model`` and the ``_scoring_*`` modules behind it).
"""

from ._distributed import sequence_chunks
from ._estimator import VBHiddenMarkov
from ._logistic_transitions import stick_breaking_transitions
from ._predictive import predictive_log_likelihood
from ._vbem import optimize_dirichlet_scale

__all__ = ["VBHiddenMarkov", "predictive_log_likelihood", "sequence_chunks",
           "stick_breaking_transitions"]
