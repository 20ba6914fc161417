"""The three latent-factor models of the bidirectional Monte Carlo study.

Grosse, Ghahramani & Adams (2015) grade marginal-likelihood estimators on simulated data
from three models with fixed hyperparameters, each ``Y (n, D) = Z W + noise``:

* :class:`BayesianClustering`: one-hot Z (a spherical Gaussian mixture with unknown
  means and fixed variance);
* :class:`BayesianLowRank`: Gaussian Z (low-rank factorisation);
* :class:`BayesianBinaryAttributes`: binary Z.

Each is fitted by VBEM (``fit`` / ``lower_bound_``), simulates exactly from its prior
(``simulate``; the simulating parameters are then an exact posterior draw, the start of
reverse AIS), samples from the fit (``sample``), and has a ScoringModel, so that every
scorer of :mod:`sklearn_vb.scoring` applies (the weights W are the parameters; the
latents are summed or integrated out exactly).  Exact evidences of tiny instances by
enumeration: :func:`clustering_log_evidence`, :func:`binary_attributes_log_evidence`.
With the hyperparameters integrated out under a :class:`Hyperprior` (the paper's Table 1):
:func:`integrate_hyperparameters`.
"""

from ._binary import BayesianBinaryAttributes, binary_attributes_log_evidence
from ._clustering import BayesianClustering, clustering_log_evidence
from ._low_rank import BayesianLowRank
from .hyper_scoring_model import Hyperprior, integrate_hyperparameters

__all__ = ["BayesianClustering", "BayesianLowRank", "BayesianBinaryAttributes",
           "clustering_log_evidence", "binary_attributes_log_evidence", "Hyperprior",
           "integrate_hyperparameters"]
