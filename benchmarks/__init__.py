"""Benchmarks: sklearn_vb side by side with the libraries users would use instead."""
