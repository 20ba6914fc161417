"""Variational Bayesian latent-variable models with scikit-learn conventions.

Estimators expose ``lower_bound_``, the complete variational lower bound on the log
marginal likelihood in nats; :mod:`sklearn_vb.scoring` estimates marginal likelihoods
by other means, and :mod:`sklearn_vb.model_selection` ranks candidate structures.
"""

# The estimators are imported on first access (PEP 562): their modules pull in
# scikit-learn, scipy and numba, which take seconds to import, and a program that uses
# one estimator should not pay for all of them.  Each loader is a plain import
# statement, so the import-direction checks of the test suite still see every edge.
# (``from . import hmm`` would call this module's ``__getattr__`` again before importing.)

__version__ = "0.1.0"

__all__ = ["__version__", "VBDiscreteDAG", "VBHiddenMarkov", "VBLinearDynamicalSystem", "VBMixtureFactorAnalysers",
           "VBSigmoidBeliefNetwork", "PairwiseMRF", "BoltzmannMachine", "LinearChainCRF"]


def _boltzmann():
    import sklearn_vb.boltzmann as module
    return module


def _crf():
    import sklearn_vb.crf as module
    return module


def _dag():
    import sklearn_vb.dag as module
    return module


def _hmm():
    import sklearn_vb.hmm as module
    return module


def _lds():
    import sklearn_vb.lds as module
    return module


def _mfa():
    import sklearn_vb.mfa as module
    return module


def _mrf():
    import sklearn_vb.mrf as module
    return module


def _sbn():
    import sklearn_vb.sbn as module
    return module


def _base():
    import sklearn_vb.base as module
    return module


def _emissions():
    import sklearn_vb.emissions as module
    return module


def _datasets():
    import sklearn_vb.datasets as module
    return module


#: public class -> loader of the module defining it
_CLASSES = {
    "BoltzmannMachine": _boltzmann,
    "LinearChainCRF": _crf,
    "VBDiscreteDAG": _dag,
    "VBHiddenMarkov": _hmm,
    "VBLinearDynamicalSystem": _lds,
    "VBMixtureFactorAnalysers": _mfa,
    "PairwiseMRF": _mrf,
    "VBSigmoidBeliefNetwork": _sbn,
}

#: submodules reachable as attributes of the package without an import of their own
_SUBMODULES = {
    "boltzmann": _boltzmann, "crf": _crf, "dag": _dag, "hmm": _hmm, "lds": _lds, "mfa": _mfa,
    "mrf": _mrf, "sbn": _sbn, "base": _base, "emissions": _emissions, "datasets": _datasets,
}


def __getattr__(name):
    if name in _CLASSES:
        value = getattr(_CLASSES[name](), name)
    elif name in _SUBMODULES:
        value = _SUBMODULES[name]()
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later accesses are ordinary attribute lookups
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
