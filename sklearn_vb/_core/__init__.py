"""The shared layer under every model package.

Nothing here knows a particular model: numba kernels of general use (``kernels``), the
conjugate families (``distributions``), input checks (``validation``), data fingerprints,
numerics of Monte Carlo estimates and progress reporting, the VBEM estimator template
(``base``, public as :mod:`sklearn_vb.base`) and the contract between a model and the
evidence estimators (``evidence``).  Modules here import only each other, from the
bottom up: kernels, then the plain modules, then ``base``, then ``evidence``.
"""
