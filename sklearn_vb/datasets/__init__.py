"""Data generators for the thesis experiments, the examples and the tests."""
from ._hmm import make_hmm_sequences, make_structure_discovery_sequences  # noqa: F401
