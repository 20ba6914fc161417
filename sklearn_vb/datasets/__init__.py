"""Data generators for the thesis experiments, the examples and the tests."""
