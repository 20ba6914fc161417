"""What a model gives the evidence estimators, and the pieces its adapter builds from.

A model package's ``scoring_model`` module implements the protocols of ``protocols``
over the parameter blocks of ``params``, with variational posteriors from
``posteriors``, MCMC moves from ``mcmc_moves`` and, for Dirichlet-parameterised models
and point fits, the helpers of ``dirichlet`` and ``point_em``.  The estimators that use
this contract (:mod:`sklearn_vb.scoring`) sit above the model packages; the contract
sits below them, so that a model package never imports the scoring layer.
"""
