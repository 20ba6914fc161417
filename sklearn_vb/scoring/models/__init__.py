"""ScoringModel adapters for the package estimators, built from fitted attributes.

Used by :func:`sklearn_vb.scoring.scoring_model_for` when an estimator has no
``scoring_model()`` method of its own.
"""
