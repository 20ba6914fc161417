"""Emission families of :class:`~sklearn_vb.VBHiddenMarkov` (the public address of
``sklearn_vb.hmm.emissions``, where they are defined), with the typed containers of
their hyperparameters and statistics."""

from .hmm.emissions import *  # noqa: F403 (every name of its __all__)
from .hmm.emissions import __all__  # noqa: F401
