"""Variational Bayesian latent-variable models with scikit-learn conventions.

Estimators expose ``lower_bound_``, the complete variational lower bound on the log
marginal likelihood in nats; :mod:`sklearn_vb.scoring` estimates marginal likelihoods
by other means, and :mod:`sklearn_vb.model_selection` ranks candidate structures.
"""

from ._version import __version__
from .boltzmann import BoltzmannMachine
from .crf import LinearChainCRF
from .dag import VBDiscreteDAG
from .hmm import VBHiddenMarkov
from .lds import VBLinearDynamicalSystem
from .mfa import VBMixtureFactorAnalysers
from .mrf import PairwiseMRF
from .sbn import VBSigmoidBeliefNetwork

__all__ = ["__version__", "VBDiscreteDAG", "VBHiddenMarkov", "VBLinearDynamicalSystem", "VBMixtureFactorAnalysers",
           "VBSigmoidBeliefNetwork", "PairwiseMRF", "BoltzmannMachine", "LinearChainCRF"]
