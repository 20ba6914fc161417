"""Numba kernels shared by several models: small dense linear algebra, constants and
resampling.  A kernel used by one model lives in that model's package."""
