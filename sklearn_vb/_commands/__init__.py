"""The commands of ``python -m sklearn_vb`` other than ``reproduce``: the package
demonstration (``demo``, with its smallest complete model, the VB mixture of
Bernoullis) and the filling of the numba cache (``compile``)."""
